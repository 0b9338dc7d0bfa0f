package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kubegate/kubegate/store"
)

// Resources that come and go while the server serves, custom resources
// among them: their objects are *unstructured.Unstructured (Resource.New),
// stored as JSON, as kube-apiserver stores custom resources, and served
// as JSON and YAML.

// SetResources makes owner's resources rs, replacing those it had; nil rs
// removes them. It is how the server comes to serve a kind it was not
// started with (a custom resource's version) and stops serving it: each
// request resolves its resource once, in the set of resources it found
// when it began, so a request in flight finishes with the resource it
// started with. A resource with the group, version and resource of one
// another owner or Config.Resources holds is an error, and nothing
// changes.
func (s *Server) SetResources(owner string, rs []*Resource) error {
	if owner == "" {
		return errors.New("set resources: an owner is required")
	}
	for _, r := range rs {
		if r != nil && r.ValidateName == nil {
			// kube's generic rule for a name: one segment of a path.
			r.ValidateName = ValidatePathSegmentName
		}
		if r != nil && r.New == nil && r.Kind != "" && !r.virtual() {
			if _, err := s.scheme.New(r.gvk()); err != nil {
				return fmt.Errorf("set resources of %s: %w", owner, err)
			}
			r.storedList = metadataFirst(s.newObject(r))
		}
	}
	s.regMu.Lock()
	defer s.regMu.Unlock()
	old := s.registry()
	next, err := old.with(owner, rs)
	if err != nil {
		return err
	}
	endWatches(old.owners[owner], rs)
	s.reg.Store(next)
	// The trackers of what went are dropped; a kind installed again gets
	// new ones, for its fields may have changed.
	for _, r := range old.owners[owner] {
		for _, sub := range append([]string{""}, mapKeys(r.Subresources)...) {
			s.fieldManagers.Delete(fieldManagerKey{res: r, sub: sub})
		}
	}
	return nil
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// registry is the set of resources served now.
func (s *Server) registry() *registry { return s.reg.Load() }

// unstructuredKind reports whether r's objects are unstructured (a
// custom resource's), stored as JSON and never as protobuf.
func (r *Resource) unstructuredKind() bool { return r.New != nil }

// typeConverter is the converter r's managed fields are tracked with:
// TypeConverter, or one deduced from each object, in which every list
// is atomic.
func (r *Resource) typeConverter() managedfields.TypeConverter {
	if r.TypeConverter != nil {
		return r.TypeConverter
	}
	return managedfields.NewDeducedTypeConverter()
}

// newUnstructured returns an empty object of r's unstructured kind with
// its apiVersion and kind.
func (r *Resource) newUnstructured() runtime.Object {
	obj := r.New()
	obj.GetObjectKind().SetGroupVersionKind(r.gvk())
	return obj
}

// newUnstructuredList returns r's empty list, with apiVersion and kind.
func (r *Resource) newUnstructuredList() *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(r.GVR.GroupVersion().WithKind(r.Kind + "List"))
	return list
}

// encodeStoredJSON is the stored form of an unstructured object: its JSON,
// with apiVersion and kind and without resourceVersion, in the storage
// version (StoredAs), converted there by the resource's Convertor.
func encodeStoredJSON(res *Resource, obj runtime.Object) ([]byte, error) {
	u, ok := obj.(runtime.Unstructured)
	if !ok {
		return nil, fmt.Errorf("encode %s: %T is not unstructured", res.Kind, obj)
	}
	obj.GetObjectKind().SetGroupVersionKind(res.gvk())
	stored := res.gvk()
	if !res.StoredAs.Empty() {
		stored = res.StoredAs
	}
	if res.Convertor != nil && stored != res.gvk() {
		// The converter works on a copy (kube's safe converter).
		out, err := res.Convertor.ConvertToVersion(obj, stored.GroupVersion())
		if err != nil {
			return nil, conversionErr(err)
		}
		cu, ok := out.(runtime.Unstructured)
		if !ok {
			return nil, fmt.Errorf("encode %s: converted to %T", res.Kind, out)
		}
		content := cu.UnstructuredContent()
		if md, ok := content["metadata"].(map[string]any); ok {
			delete(md, "resourceVersion")
		}
		data, err := json.Marshal(content)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", res.Kind, err)
		}
		return data, nil
	}
	// Without a converter only apiVersion changes (conversion None).
	content := u.UnstructuredContent()
	md, _ := content["metadata"].(map[string]any)
	rv, hadRV := md["resourceVersion"]
	if hadRV {
		delete(md, "resourceVersion")
	}
	obj.GetObjectKind().SetGroupVersionKind(stored)
	data, err := json.Marshal(content)
	obj.GetObjectKind().SetGroupVersionKind(res.gvk())
	if hadRV {
		md["resourceVersion"] = rv
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", res.Kind, err)
	}
	return data, nil
}

// decodeStoredJSON decodes a stored unstructured object into the version
// of res, through its Convertor when it is stored in another.
func decodeStoredJSON(res *Resource, data []byte) (runtime.Object, error) {
	if bytes.HasPrefix(data, protobufPrefix) {
		return nil, fmt.Errorf("decode stored %s: a protobuf value where JSON was expected", res.Kind)
	}
	obj := res.New()
	u, ok := obj.(runtime.Unstructured)
	if !ok {
		return nil, fmt.Errorf("decode stored %s: %T is not unstructured", res.Kind, obj)
	}
	if _, _, err := unstructured.UnstructuredJSONScheme.Decode(data, nil, u); err != nil {
		return nil, fmt.Errorf("decode stored %s: %w", res.Kind, err)
	}
	if res.Convertor != nil && obj.GetObjectKind().GroupVersionKind().GroupVersion() != res.GVR.GroupVersion() {
		out, err := res.Convertor.ConvertToVersion(obj, res.GVR.GroupVersion())
		if err != nil {
			return nil, conversionErr(err)
		}
		obj = out
	}
	obj.GetObjectKind().SetGroupVersionKind(res.gvk()) // in the version read
	return obj, nil
}

// conversionErr is kube-apiserver's answer to a conversion that failed
// in its storage codec: an error that is no Status, which it sends as a
// 500 with the error's text and no reason.
func conversionErr(err error) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return &conversionError{err: err}
}

// conversionError is a conversion of an object to or from its storage
// version that failed.
type conversionError struct{ err error }

func (e *conversionError) Error() string { return e.err.Error() }
func (e *conversionError) Unwrap() error { return e.err }
func (e *conversionError) Status() metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: e.err.Error()}
}

// readErr is the answer to a read of the stored kv by name that could not
// be decoded: for an object that did not convert from its storage version,
// kube's storage error of a corrupt object (an object it cannot decode),
// the key without its /registry prefix, as an internal error.
func readErr(kv store.KV, err error) error {
	var ce *conversionError
	if !errors.As(err, &ce) {
		return err
	}
	return apierrors.NewInternalError(storage.NewCorruptObjError(strings.TrimPrefix(kv.Key, "/registry"),
		fmt.Errorf("object not decodable revision=%d: %w", kv.ModRevision, err)))
}

// negotiate picks the answer's encoding as Server.negotiate does, without
// protobuf for an unstructured kind, which has no protobuf encoding: a
// client that accepts JSON too gets JSON, one that accepts protobuf alone
// kube's 406.
func (q *request) negotiate(opts acceptOptions) (output, error) {
	opts.noProtobuf = q.res.unstructuredKind()
	return q.s.negotiate(q.r, opts)
}

// The field manager's converter, defaulter and creater of an unstructured
// kind, which has one version.
type (
	unstructuredConvertor struct{}
	unstructuredDefaulter struct{}
	unstructuredCreater   struct{ res *Resource }
)

func (unstructuredConvertor) Convert(in, out, _ any) error {
	u, ok := in.(runtime.Unstructured)
	o, ok2 := out.(runtime.Unstructured)
	if !ok || !ok2 {
		return fmt.Errorf("convert %T to %T: not unstructured", in, out)
	}
	o.SetUnstructuredContent(runtime.DeepCopyJSON(u.UnstructuredContent()))
	return nil
}

func (unstructuredConvertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	kind := in.GetObjectKind().GroupVersionKind()
	target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{kind})
	if !ok {
		return nil, fmt.Errorf("convert %s: no version of %v", kind, gv)
	}
	in.GetObjectKind().SetGroupVersionKind(target)
	return in, nil
}

func (unstructuredConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

func (unstructuredDefaulter) Default(runtime.Object) {}

func (c unstructuredCreater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	obj := c.res.New()
	obj.GetObjectKind().SetGroupVersionKind(kind)
	return obj, nil
}

// newUnstructuredList is an unstructured kind's List holding items, whose
// apiVersion and kind stay, as kube-apiserver encodes a custom resource's
// list items.
func newUnstructuredList(res *Resource, items []runtime.Object, rev int64, cont string) (runtime.Object, error) {
	list := res.newUnstructuredList()
	list.Items = make([]unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		u, ok := item.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("list %s: item %T is not unstructured", res.Kind, item)
		}
		u.SetGroupVersionKind(res.gvk())
		list.Items = append(list.Items, *u)
	}
	list.SetResourceVersion(strconv.FormatInt(rev, 10))
	list.SetContinue(cont)
	return list, nil
}

// coerce runs the resource's Coerce on a decoded body and adds the fields
// it dropped to the body's unknown fields, as `unknown field "PATH"`.
func (q *request) coerce(d *decoded) error {
	if q.res.Coerce == nil {
		return nil
	}
	unknown, err := q.res.Coerce(d.obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if len(unknown) == 0 {
		return nil
	}
	var errs []error
	if se, ok := runtime.AsStrictDecodingError(d.strictErr); ok {
		errs = se.Errors()
	}
	for _, p := range unknown {
		errs = append(errs, fmt.Errorf("unknown field %q", p))
	}
	d.strictErr = runtime.NewStrictDecodingError(errs)
	return nil
}

// servesTyped reports whether reg serves a typed kind in group g: kube
// answers the paths it does not serve under such a group with a NotFound
// Status, and under a group of custom resources alone with a plain 404.
func (reg *registry) servesTyped(g string) bool {
	for gvr, res := range reg.byGVR {
		if gvr.Group == g && !res.unstructuredKind() {
			return true
		}
	}
	return false
}
