package admission

import (
	"context"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/warning"
	psadmission "k8s.io/pod-security-admission/admission"
	"k8s.io/pod-security-admission/admission/api/load"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/metrics"
	"k8s.io/pod-security-admission/policy"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/store"
)

// PodSecurity is kube-apiserver's PodSecurity plugin (D.8): the Pod
// Security Standards of k8s.io/pod-security-admission, with kube's default
// configuration (every level privileged, nothing exempt), so a namespace
// is held to what its pod-security.kubernetes.io/{enforce,audit,warn}
// labels ask:
//   - a pod created, or updated in a way the library counts (its
//     containers' images, a container added), that breaks the enforce
//     level is refused with 403 listing what it breaks; one that breaks
//     the warn level is admitted with a warning;
//   - pod templates (replication controllers, replica sets, stateful sets)
//     are only warned about;
//   - namespace labels must be valid (422), and tightening the enforce
//     level warns about the pods already there that break it.
//
// It validates only, after the server's own validation. Namespaces come
// from the server's cache (apiserver.Lister), or the store before it has
// one; pods, read only when a namespace's level changes, from the store.
func PodSecurity(st store.Store) apiserver.Admission {
	cfg, err := load.LoadFromData(nil) // kube's defaults
	if err != nil {
		panic(fmt.Errorf("pod security: default configuration: %w", err))
	}
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic(fmt.Errorf("pod security: evaluator: %w", err))
	}
	p := &podSecurity{delegate: &psadmission.Admission{
		Configuration:    cfg,
		Evaluator:        evaluator,
		Metrics:          noMetrics{},
		PodSpecExtractor: psadmission.DefaultPodSpecExtractor{},
		NamespaceGetter:  storeNamespaces{st},
		PodLister:        storePods{st},
	}}
	if err := p.delegate.CompleteConfiguration(); err != nil {
		panic(fmt.Errorf("pod security: %w", err))
	}
	if err := p.delegate.ValidateConfiguration(); err != nil {
		panic(fmt.Errorf("pod security: %w", err))
	}
	return p
}

type podSecurity struct{ delegate *psadmission.Admission }

var (
	_ apiserver.AdmissionValidator = (*podSecurity)(nil)
	_ apiserver.WantsLister        = (*podSecurity)(nil)
)

// SetLister reads namespaces from the server's cache.
func (p *podSecurity) SetLister(l apiserver.Lister) { p.delegate.NamespaceGetter = l }

// Admit does nothing: PodSecurity only validates.
func (p *podSecurity) Admit(context.Context, *apiserver.AdmissionAttributes) error { return nil }

// Validate evaluates pods, pod templates and namespaces on create and
// update, adds the library's warnings to the answer and turns its refusal
// into kube's error.
func (p *podSecurity) Validate(ctx context.Context, a *apiserver.AdmissionAttributes) error {
	if a.Operation != apiserver.Create && a.Operation != apiserver.Update {
		return nil
	}
	gr := a.Resource.GroupResource()
	if gr != podsGVR.GroupResource() && gr != namespacesGVR.GroupResource() && !p.delegate.PodSpecExtractor.HasPodSpec(gr) {
		return nil
	}
	res := p.delegate.Validate(ctx, psAttributes{a})
	for _, w := range res.Warnings {
		warning.AddWarning(ctx, "", w)
	}
	if res.Allowed {
		return nil
	}
	//lint:ignore ST1005 kube's own text, shown when the library gives no message
	err := forbidden(a, errors.New("Not allowed by PodSecurity"))
	if r := res.Result; r != nil {
		se := err.(*apierrors.StatusError)
		if r.Message != "" {
			se.ErrStatus.Message = r.Message
		}
		if r.Reason != "" {
			se.ErrStatus.Reason = r.Reason
		}
		if r.Details != nil {
			se.ErrStatus.Details = r.Details
		}
		if r.Code != 0 {
			se.ErrStatus.Code = r.Code
		}
	}
	return err
}

// psAttributes shows AdmissionAttributes to the library.
type psAttributes struct {
	a *apiserver.AdmissionAttributes
}

var _ psapi.Attributes = psAttributes{}

func (p psAttributes) GetName() string                          { return p.a.Name }
func (p psAttributes) GetNamespace() string                     { return p.a.Namespace }
func (p psAttributes) GetResource() schema.GroupVersionResource { return p.a.Resource }
func (p psAttributes) GetKind() schema.GroupVersionKind         { return p.a.Kind }
func (p psAttributes) GetSubresource() string                   { return p.a.Subresource }
func (p psAttributes) GetOperation() admissionv1.Operation {
	return admissionv1.Operation(p.a.Operation)
}
func (p psAttributes) GetObject() (runtime.Object, error)    { return p.a.Object, nil }
func (p psAttributes) GetOldObject() (runtime.Object, error) { return p.a.OldObject, nil }
func (p psAttributes) GetUserName() string                   { return p.a.User.Name }

// storeNamespaces reads namespaces from the store, until the server
// gives the plugin its cache.
type storeNamespaces struct{ st store.Store }

func (s storeNamespaces) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	kv, err := s.st.Get(ctx, apiserver.Key(namespacesGVR, "", name))
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierrors.NewNotFound(namespacesGVR.GroupResource(), name)
	}
	if err != nil {
		return nil, err
	}
	var ns corev1.Namespace
	if err := apiserver.UnmarshalStored(kv.Value, &ns); err != nil {
		return nil, err
	}
	return &ns, nil
}

// storePods lists a namespace's pods from the store, which the library
// does only when a namespace's enforce level is tightened.
type storePods struct{ st store.Store }

func (s storePods) ListPods(ctx context.Context, namespace string) ([]*corev1.Pod, error) {
	var pods []*corev1.Pod
	prefix := apiserver.Key(podsGVR, namespace, "")
	opts := store.ListOptions{Limit: 500}
	for {
		page, err := s.st.List(ctx, prefix, opts)
		if err != nil {
			return nil, err
		}
		for _, kv := range page.KVs {
			pod := &corev1.Pod{}
			if err := apiserver.UnmarshalStored(kv.Value, pod); err != nil {
				return nil, err
			}
			pods = append(pods, pod)
		}
		if !page.More || len(page.KVs) == 0 {
			return pods, nil
		}
		opts.Revision, opts.Continue = page.Revision, page.KVs[len(page.KVs)-1].Key
	}
}

// noMetrics drops the library's evaluation counts: kubegate does not
// export PodSecurity's metrics.
type noMetrics struct{}

func (noMetrics) RecordEvaluation(metrics.Decision, psapi.LevelVersion, metrics.Mode, psapi.Attributes) {
}
func (noMetrics) RecordExemption(psapi.Attributes)   {}
func (noMetrics) RecordError(bool, psapi.Attributes) {}

// forbidden is kube's admission.NewForbidden: a 403 naming the object (its
// generateName before it has a name, "Unknown" without either), unless
// err already is a 403.
func forbidden(a *apiserver.AdmissionAttributes, err error) error {
	if apierrors.IsForbidden(err) || storeFault(err) {
		return err
	}
	name := "Unknown"
	if a.Object != nil {
		if acc, aerr := meta.Accessor(a.Object); aerr == nil {
			if acc.GetName() != "" {
				name = acc.GetName()
			} else if acc.GetGenerateName() != "" {
				name = acc.GetGenerateName()
			}
		}
	}
	return apierrors.NewForbidden(a.Resource.GroupResource(), name, err)
}
