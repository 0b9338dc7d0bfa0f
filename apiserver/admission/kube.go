package admission

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kubegate/kubegate/apiserver"
)

// Kube runs one of k8s.io/apiserver's admission plugins (a
// kubeadmission.MutationInterface, ValidationInterface or both) as a step
// of the chain: its Admit is the plugin's Admit, its Validate the plugin's
// Validate. Every Kube step of one write shares one attributes record
// (apiserver.AdmissionAttributes.Shared), as the plugins of
// kube-apiserver's chain share theirs, so that a mutating webhook's
// reinvocation state carries from one pass to the next.
//
// The plugins return kube's own *apierrors.StatusError answers, which the
// server sends as they are, and add their warnings with
// k8s.io/apiserver/pkg/warning on the context, which the server sends. The
// audit annotations they add are dropped: kubegate writes no audit log.
type Kube struct {
	// Name is the plugin's name in kube-apiserver's chain.
	Name   string
	Plugin kubeadmission.Interface
	// objects is nil until Start: a step that is not started refuses the
	// write as kube's plugins refuse one before their informers synced.
	objects atomic.Pointer[kubeadmission.ObjectInterfaces]
	// served finds a write's resource, for the object interfaces of a
	// custom resource (objectsFor); set before Start.
	served ResourceLookup
}

var _ apiserver.AdmissionValidator = (*Kube)(nil)

// Start lets the step admit writes, converting and creating objects
// through o.
func (k *Kube) Start(o kubeadmission.ObjectInterfaces) { k.objects.Store(&o) }

// Admit runs the plugin's Admit, if it has one and handles the
// operation.
func (k *Kube) Admit(ctx context.Context, a *apiserver.AdmissionAttributes) error {
	m, ok := k.Plugin.(kubeadmission.MutationInterface)
	if !ok || !m.Handles(kubeadmission.Operation(a.Operation)) {
		return nil
	}
	attrs, o, err := k.attributes(a)
	if err != nil {
		return err
	}
	rc := attrs.GetReinvocationContext()
	if a.Reinvocation && !rc.IsReinvoke() {
		rc.SetIsReinvoke()
	}
	if err := m.Admit(ctx, attrs, o); err != nil {
		return err
	}
	if !a.Reinvocation && rc.ShouldReinvoke() {
		a.Reinvoke = true
	}
	return nil
}

// Validate runs the plugin's Validate, if it has one and handles the
// operation.
func (k *Kube) Validate(ctx context.Context, a *apiserver.AdmissionAttributes) error {
	v, ok := k.Plugin.(kubeadmission.ValidationInterface)
	if !ok || !v.Handles(kubeadmission.Operation(a.Operation)) {
		return nil
	}
	attrs, o, err := k.attributes(a)
	if err != nil {
		return err
	}
	return v.Validate(ctx, attrs, o)
}

// attributes returns the write's shared attributes record, made on first
// use, and the object interfaces: a custom resource's, or the scheme's.
func (k *Kube) attributes(a *apiserver.AdmissionAttributes) (kubeadmission.Attributes, kubeadmission.ObjectInterfaces, error) {
	o := k.objects.Load()
	if o == nil {
		return nil, nil, kubeadmission.NewForbidden(KubeAttributes(a), errors.New("not yet ready to handle request"))
	}
	objects := objectsFor(*o, k.served, a)
	if attrs, ok := a.Shared.(kubeadmission.Attributes); ok && attrs.GetObject() == a.Object {
		return attrs, objects, nil
	}
	attrs := KubeAttributes(a)
	a.Shared = attrs
	return attrs, objects, nil
}

// KubeAttributes is a write's attributes record for k8s.io/apiserver's
// plugins: the same objects (a mutation of its object is a mutation of
// a.Object), and the options kube-apiserver passes, built from a.DryRun
// when the write has none of its own.
func KubeAttributes(a *apiserver.AdmissionAttributes) kubeadmission.Attributes {
	u := &user.DefaultInfo{Name: a.User.Name, UID: a.User.UID, Groups: a.User.Groups, Extra: a.User.Extra}
	return kubeadmission.NewAttributesRecord(a.Object, a.OldObject, a.Kind, a.Namespace, a.Name, a.Resource, a.Subresource,
		kubeadmission.Operation(a.Operation), operationOptions(a), a.DryRun, u)
}

// operationOptions are the options of a write as kube-apiserver passes
// them: CreateOptions, UpdateOptions or DeleteOptions, with dryRun All on
// a dry run.
func operationOptions(a *apiserver.AdmissionAttributes) runtime.Object {
	if a.Options != nil && !reflect.ValueOf(a.Options).IsNil() {
		if a.Options.GetObjectKind().GroupVersionKind().Empty() {
			// kube-apiserver's handlers name the options' kind.
			opts := a.Options.DeepCopyObject()
			if kinds, _, err := optionsScheme.ObjectKinds(opts); err == nil && len(kinds) > 0 {
				opts.GetObjectKind().SetGroupVersionKind(kinds[0])
			}
			return opts
		}
		return a.Options
	}
	var dry []string
	if a.DryRun {
		dry = []string{metav1.DryRunAll}
	}
	switch a.Operation {
	case apiserver.Create:
		return &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}, DryRun: dry}
	case apiserver.Update:
		return &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}, DryRun: dry}
	case apiserver.Delete:
		return &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}, DryRun: dry}
	}
	return nil
}

// optionsScheme knows the options' kinds, in meta.k8s.io/v1.
var optionsScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypes(metav1.SchemeGroupVersion, &metav1.CreateOptions{}, &metav1.UpdateOptions{}, &metav1.DeleteOptions{}, &metav1.PatchOptions{})
	return s
}()

// ObjectInterfaces are the object interfaces of scheme for k8s.io/apiserver's
// plugins. kubegate's scheme holds each kind in its served version only,
// which is also the form admission sees (kube's internal version), so a
// plugin's conversion between the two is a copy of one object of a type
// into another of the same type, which the scheme itself has no
// conversion for. mapper answers which kind each resource is, for the
// plugins' matchPolicy Equivalent; defaulter gives an object its
// defaults (a mutating webhook's patched object is defaulted, as kube's
// scheme defaults it), nil: the scheme's, which has none.
func ObjectInterfaces(scheme *runtime.Scheme, mapper runtime.EquivalentResourceMapper, defaulter runtime.ObjectDefaulter) kubeadmission.ObjectInterfaces {
	o := kubeadmission.NewObjectInterfacesFromScheme(scheme).(*kubeadmission.RuntimeObjectInterfaces)
	o.ObjectConvertor = sameTypeConvertor{scheme}
	if mapper != nil {
		o.EquivalentResourceMapper = mapper
	}
	if defaulter != nil {
		o.ObjectDefaulter = defaulter
	}
	return o
}

// Defaulter defaults an object by its Go type with the Defaults of the
// resource of that type in scheme (the first of resources that has one).
func Defaulter(scheme *runtime.Scheme, resources []*apiserver.Resource) runtime.ObjectDefaulter {
	d := defaulter{}
	for _, r := range resources {
		if r.Defaults == nil {
			continue
		}
		obj, err := scheme.New(r.GVR.GroupVersion().WithKind(r.Kind))
		if err != nil {
			continue
		}
		if t := reflect.TypeOf(obj); d[t] == nil {
			d[t] = r.Defaults
		}
	}
	return d
}

type defaulter map[reflect.Type]func(runtime.Object)

func (d defaulter) Default(obj runtime.Object) {
	if f := d[reflect.TypeOf(obj)]; f != nil {
		f(obj)
	}
}

// sameTypeConvertor converts as the scheme does, but copies an object
// into another of its own type.
type sameTypeConvertor struct{ *runtime.Scheme }

func (c sameTypeConvertor) Convert(in, out, context any) error {
	if in != nil && out != nil && reflect.TypeOf(in) == reflect.TypeOf(out) && reflect.TypeOf(in).Kind() == reflect.Pointer {
		if in == out {
			return nil
		}
		src, ok := in.(runtime.Object)
		if !ok {
			return fmt.Errorf("convert %T: not an object", in)
		}
		reflect.ValueOf(out).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
		return nil
	}
	return c.Scheme.Convert(in, out, context)
}
