package core

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// bindingsGVR is the legacy POST /api/v1/namespaces/NS/bindings.
var bindingsGVR = corev1.SchemeGroupVersion.WithResource("bindings")

// bindingSubresource is pods/binding: a POST assigns the pod to a node.
type bindingSubresource struct{}

func (bindingSubresource) Name() string    { return "binding" }
func (bindingSubresource) Verbs() []string { return []string{"create"} }
func (bindingSubresource) Kind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Kind: "Binding"}
}
func (bindingSubresource) Serve(req *apiserver.Request) error {
	return bind(req, req.Name())
}

// bindingsEntry serves the legacy bindings resource: any path under it
// reaches the entry, which serves only the namespaced collection. kube
// has no cluster-wide route for it; there a Binding's name would be the
// pod's whole key, "NAMESPACE/POD", past the namespace lifecycle and
// admission of that namespace.
type bindingsEntry struct{}

func (bindingsEntry) Name() string                  { return "" }
func (bindingsEntry) Verbs() []string               { return []string{"create"} }
func (bindingsEntry) Kind() schema.GroupVersionKind { return schema.GroupVersionKind{} }
func (bindingsEntry) TakesAnyPath() bool            { return true }
func (bindingsEntry) Serve(req *apiserver.Request) error {
	if req.Name() != "" || req.Namespace() == "" {
		return apiserver.NotServed()
	}
	return bind(req, "")
}

var (
	_ apiserver.Subresource  = bindingSubresource{}
	_ apiserver.AnyPathEntry = bindingsEntry{}
)

// bindingsResource is the legacy POST /api/v1/namespaces/NS/bindings, a
// virtual resource: the Binding names the pod. Any other verb is refused
// with 405 whatever the path; a name or subresource under it is not served.
func bindingsResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: bindingsGVR, Kind: "Binding", Singular: "binding", Namespaced: true,
		Subresources: map[string]apiserver.Subresource{"": bindingsEntry{}}}
}

// bind serves POST pods/NAME/binding (and the legacy bindings resource, name
// ""): it assigns the pod to the target node.
func bind(req *apiserver.Request, name string) error {
	obj, err := req.DecodeBody(corev1.SchemeGroupVersion.WithKind("Binding"), &corev1.Binding{})
	if err != nil {
		return err
	}
	b := obj.(*corev1.Binding)
	gr := podsGVR.GroupResource()
	if name == "" {
		name, gr = b.Name, bindingsGVR.GroupResource()
	}
	if err := req.CheckNamespaceActive(gr, name); err != nil {
		return err
	}
	if err := req.Admit(apiserver.Create, name, corev1.SchemeGroupVersion.WithKind("Binding"), b); err != nil {
		return err
	}
	if b.Name != name {
		return apierrors.NewBadRequest("name in URL does not match name in Binding object")
	}
	if b.Namespace != "" && b.Namespace != req.Namespace() {
		return apiserver.NamespaceMismatch()
	}
	if b.Target.Name == "" {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, name, field.ErrorList{field.Required(field.NewPath("target", "name"), "")})
	}
	bindingGR := schema.GroupResource{Resource: "pods/binding"}
	_, err = req.Update(podsGVR, name, "binding", "", func(old runtime.Object) (runtime.Object, error) {
		pod := old.(*corev1.Pod)
		if b.UID != "" && b.UID != pod.UID {
			return nil, apierrors.NewConflict(bindingGR, name, apiserver.PreconditionFailed("UID", b.UID, pod.UID))
		}
		if b.ResourceVersion != "" && b.ResourceVersion != pod.ResourceVersion {
			return nil, apierrors.NewConflict(bindingGR, name, apiserver.PreconditionFailed("ResourceVersion", b.ResourceVersion, pod.ResourceVersion))
		}
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(bindingGR, name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(bindingGR, name, fmt.Errorf("pod %s is already assigned to node %q", name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = b.Target.Name
		for k, v := range b.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setPodScheduled(pod, metav1.NewTime(req.Now().Truncate(time.Second)))
		pod.ResourceVersion = ""
		return pod, nil
	})
	if err != nil {
		return err
	}
	req.WriteCreated()
	return nil
}

func setPodScheduled(pod *corev1.Pod, now metav1.Time) {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.PodScheduled {
			if c.Status != corev1.ConditionTrue {
				c.Status, c.LastTransitionTime, c.Reason, c.Message = corev1.ConditionTrue, now, "", ""
			}
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now})
}
