package admission

import (
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeadmission "k8s.io/apiserver/pkg/admission"

	"github.com/kubegate/kubegate/apiserver"
)

// ResourceLookup finds the resource the server serves as a GVR
// (apiserver.Server.ServedResource).
type ResourceLookup func(gvr schema.GroupVersionResource) (*apiserver.Resource, bool)

// customObjects are the object interfaces of a write of a custom
// resource, as kube-apiserver's request scope of a custom resource gives
// them to the plugins: its definition's versions are the equivalent
// resources, objects of its kind are created unstructured, typed by
// their apiVersion and kind, converted between versions by the
// definition's conversion and defaulted by the schema of their version.
// Other objects (a scale subresource's Scale, the options) go to the
// server's own interfaces.
type customObjects struct {
	kubeadmission.ObjectInterfaces
	res    *apiserver.Resource
	lookup ResourceLookup
}

// objectsFor returns the object interfaces of a write of a: those of its
// custom resource, or base.
func objectsFor(base kubeadmission.ObjectInterfaces, lookup ResourceLookup, a *apiserver.AdmissionAttributes) kubeadmission.ObjectInterfaces {
	if lookup == nil {
		return base
	}
	res, ok := lookup(a.Resource)
	if !ok || res.Equivalents == nil {
		return base
	}
	return customObjects{ObjectInterfaces: base, res: res, lookup: lookup}
}

// ours reports whether kind is of the custom resource's group and kind.
func (c customObjects) ours(kind schema.GroupVersionKind) bool {
	return kind.Group == c.res.GVR.Group && kind.Kind == c.res.Kind
}

// version returns the resource serving the custom resource in version v,
// or the one of the write when v is not served.
func (c customObjects) version(v string) *apiserver.Resource {
	gvr := c.res.GVR
	gvr.Version = v
	if r, ok := c.lookup(gvr); ok && r.Kind == c.res.Kind {
		return r
	}
	return c.res
}

func (c customObjects) GetObjectCreater() runtime.ObjectCreater     { return c }
func (c customObjects) GetObjectTyper() runtime.ObjectTyper         { return c }
func (c customObjects) GetObjectDefaulter() runtime.ObjectDefaulter { return c }
func (c customObjects) GetObjectConvertor() runtime.ObjectConvertor { return c }
func (c customObjects) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return c.res.Equivalents
}

func (c customObjects) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	if !c.ours(kind) {
		return c.ObjectInterfaces.GetObjectCreater().New(kind)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}

var unstructuredTyper = crdserverscheme.NewUnstructuredObjectTyper()

func (c customObjects) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	if _, ok := obj.(runtime.Unstructured); ok {
		return unstructuredTyper.ObjectKinds(obj)
	}
	return c.ObjectInterfaces.GetObjectTyper().ObjectKinds(obj)
}

func (c customObjects) Recognizes(kind schema.GroupVersionKind) bool {
	return c.ours(kind) || c.ObjectInterfaces.GetObjectTyper().Recognizes(kind)
}

func (c customObjects) Default(obj runtime.Object) {
	kind := obj.GetObjectKind().GroupVersionKind()
	if _, ok := obj.(runtime.Unstructured); !ok || !c.ours(kind) {
		c.ObjectInterfaces.GetObjectDefaulter().Default(obj)
		return
	}
	if r := c.version(kind.Version); r.Defaults != nil && r.GVR.Version == kind.Version {
		r.Defaults(obj)
	}
}

// Convert converts a custom resource into out, in out's version.
func (c customObjects) Convert(in, out, context any) error {
	u, ok := in.(runtime.Unstructured)
	o, ok2 := out.(runtime.Unstructured)
	if !ok || !ok2 {
		return c.ObjectInterfaces.GetObjectConvertor().Convert(in, out, context)
	}
	target := o.GetObjectKind().GroupVersionKind()
	converted, err := c.ConvertToVersion(u.(runtime.Object).DeepCopyObject(), target.GroupVersion())
	if err != nil {
		return err
	}
	o.SetUnstructuredContent(converted.(runtime.Unstructured).UnstructuredContent())
	return nil
}

// ConvertToVersion converts a custom resource to version gv with the
// conversion of the resource serving that version: a definition's
// conversion None changes the apiVersion alone.
func (c customObjects) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	if _, ok := in.(runtime.Unstructured); !ok {
		return c.ObjectInterfaces.GetObjectConvertor().ConvertToVersion(in, gv)
	}
	kind := in.GetObjectKind().GroupVersionKind()
	target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{kind})
	if !ok {
		return nil, fmt.Errorf("convert %s: no version of %v", kind, gv)
	}
	if conv := conversionOf(c.version(target.Version)); conv != nil {
		return conv.ConvertToVersion(in, gv)
	}
	in.GetObjectKind().SetGroupVersionKind(target)
	return in, nil
}

func (c customObjects) ConvertFieldLabel(kind schema.GroupVersionKind, label, value string) (string, string, error) {
	if c.ours(kind) {
		return label, value, nil
	}
	return c.ObjectInterfaces.GetObjectConvertor().ConvertFieldLabel(kind, label, value)
}

// conversionOf is the conversion between the versions of r's custom
// resource that its definition names (kube's webhook converter for
// conversion Webhook); nil: None, which changes the apiVersion alone.
func conversionOf(r *apiserver.Resource) runtime.ObjectConvertor {
	if r == nil {
		return nil
	}
	return r.Convertor
}
