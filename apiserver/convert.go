package apiserver

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// convert turns obj (an object or a list of res) into the form out asks
// for: a Table, PartialObjectMetadata or PartialObjectMetadataList (D.7). A
// Status, and anything when out asks for no conversion, is left alone.
func (s *Server) convert(r *http.Request, res *Resource, out output, obj runtime.Object) (runtime.Object, error) {
	if _, ok := obj.(*metav1.Status); ok || out.convert == nil {
		return obj, nil
	}
	gv := out.convert.GroupVersion()
	switch out.convert.Kind {
	case "Table":
		return s.table(r, res, obj, nil)
	case "PartialObjectMetadata":
		if meta.IsListType(obj) {
			return nil, notAcceptable(fmt.Sprintf("you requested PartialObjectMetadata, but the requested object is a list (%s)", internalTypeName(res, obj)))
		}
		return partialMetadata(obj, gv.WithKind("PartialObjectMetadata")), nil
	case "PartialObjectMetadataList":
		la, err := meta.ListAccessor(obj)
		if err != nil || !meta.IsListType(obj) {
			return nil, notAcceptable(fmt.Sprintf("you requested PartialObjectMetadataList, but the requested object is not a list (%s)", internalTypeName(res, obj)))
		}
		items := []metav1.PartialObjectMetadata{}
		err = meta.EachListItem(obj, func(item runtime.Object) error {
			items = append(items, *partialMetadata(item, gv.WithKind("PartialObjectMetadata")))
			return nil
		})
		if err != nil {
			return nil, err
		}
		lm := metav1.ListMeta{ResourceVersion: la.GetResourceVersion(), Continue: la.GetContinue(), RemainingItemCount: la.GetRemainingItemCount()}
		if gv == metav1beta1.SchemeGroupVersion {
			list := &metav1beta1.PartialObjectMetadataList{ListMeta: lm, Items: items}
			list.GetObjectKind().SetGroupVersionKind(gv.WithKind("PartialObjectMetadataList"))
			return list, nil
		}
		list := &metav1.PartialObjectMetadataList{ListMeta: lm, Items: items}
		list.GetObjectKind().SetGroupVersionKind(gv.WithKind("PartialObjectMetadataList"))
		return list, nil
	}
	return nil, notAcceptable("only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf")
}

// partialMetadata is the metadata of obj as a PartialObjectMetadata of kind
// gvk.
func partialMetadata(obj runtime.Object, gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	acc, _ := meta.Accessor(obj)
	pm := meta.AsPartialObjectMetadata(acc)
	pm.GetObjectKind().SetGroupVersionKind(gvk)
	return pm
}

// internalTypeName is how kube-apiserver names the type of obj in its 406
// answers: the Go type of its internal form, such as *core.ConfigMapList.
// Those live in a package named after the group's first label, except that
// the core group's is "core" and events.k8s.io's Event is core's.
func internalTypeName(res *Resource, obj runtime.Object) string {
	pkg := res.GVR.Group
	for i := 0; i < len(pkg); i++ {
		if pkg[i] == '.' {
			pkg = pkg[:i]
			break
		}
	}
	if pkg == "" || pkg == "events" {
		pkg = "core"
	}
	kind := res.Kind
	if meta.IsListType(obj) {
		kind += "List"
	}
	return "*" + pkg + "." + kind
}

// notAcceptable is the 406 of a conversion the server cannot make.
func notAcceptable(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotAcceptable,
		Reason: metav1.StatusReasonNotAcceptable, Message: msg}}
}
