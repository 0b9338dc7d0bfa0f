package apiserver

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// bindingsGVR is the legacy POST /api/v1/namespaces/NS/bindings.
var bindingsGVR = schema.GroupVersionResource{Version: "v1", Resource: "bindings"}

// bindingSubresource is pods/binding: a POST assigns the pod to a node.
func bindingSubresource() *subresource {
	return &subresource{name: "binding", verbs: []string{"create"}, kind: schema.GroupVersionKind{Kind: "Binding"},
		serve: func(q *request) error { return q.bind(q.name) }}
}

// bindingsResource is the legacy POST /api/v1/namespaces/NS/bindings, a
// virtual resource: the Binding names the pod. Any other verb is refused
// with 405 whatever the path; a name or subresource under it is not served.
func bindingsResource() *Resource {
	return &Resource{GVR: bindingsGVR, Kind: "Binding", Singular: "binding", Namespaced: true,
		Subresources: subresources(&subresource{verbs: []string{"create"}, anyPath: true, serve: func(q *request) error {
			if q.name != "" {
				return errNotServed
			}
			return q.bind("")
		}})}
}

// bind serves POST pods/NAME/binding (and the legacy bindings resource, name
// ""): it assigns the pod to the target node.
func (q *request) bind(name string) error {
	info, data, err := q.subresourceBody()
	if err != nil {
		return err
	}
	d, err := q.s.decode(info, data, coreGV.WithKind("Binding"), &corev1.Binding{})
	if err != nil {
		return err
	}
	b := d.obj.(*corev1.Binding)
	gr := schema.GroupResource{Resource: "pods"}
	if name == "" {
		name, gr = b.Name, bindingsGVR.GroupResource()
	}
	if err := q.s.checkNamespaceActive(q.ctx(), gr, q.ns, name); err != nil {
		return err
	}
	if b.Name != name {
		return apierrors.NewBadRequest("name in URL does not match name in Binding object")
	}
	if b.Namespace != "" && b.Namespace != q.ns {
		return errNamespaceMismatch()
	}
	if b.Target.Name == "" {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, name, field.ErrorList{field.Required(field.NewPath("target", "name"), "")})
	}
	pods, _ := q.s.reg.get(coreGV.WithResource("pods"))
	pq := *q
	pq.res, pq.name, pq.sub = pods, name, "binding"
	bindingGR := schema.GroupResource{Resource: "pods/binding"}
	_, err = pq.guaranteedUpdate(func(old runtime.Object) (runtime.Object, error) {
		pod := old.(*corev1.Pod)
		if b.UID != "" && b.UID != pod.UID {
			return nil, apierrors.NewConflict(bindingGR, name, preconditionErr("UID", b.UID, pod.UID))
		}
		if b.ResourceVersion != "" && b.ResourceVersion != pod.ResourceVersion {
			return nil, apierrors.NewConflict(bindingGR, name, preconditionErr("ResourceVersion", b.ResourceVersion, pod.ResourceVersion))
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
		setPodScheduled(pod, metav1.NewTime(q.s.now().Truncate(time.Second)))
		pod.ResourceVersion = ""
		return pod, nil
	}, "")
	if err != nil {
		return err
	}
	q.writeCreated()
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
