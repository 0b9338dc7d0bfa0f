package apiserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/store"
)

// Helpers that move objects between their typed form and the store.

// newObject returns an empty object of res's kind.
func (s *Server) newObject(res *Resource) runtime.Object {
	if res.New != nil {
		return res.newUnstructured()
	}
	obj, err := s.scheme.New(res.gvk())
	if err != nil {
		panic(fmt.Sprintf("apiserver: kind %s is not in the scheme", res.gvk()))
	}
	return obj
}

// decodeKV decodes a stored value of res and sets its resourceVersion to the
// KV's ModRevision.
func (s *Server) decodeKV(res *Resource, kv store.KV) (runtime.Object, error) {
	return s.decodeValue(res, kv.Value, kv.ModRevision)
}

func (s *Server) decodeValue(res *Resource, data []byte, rev int64) (runtime.Object, error) {
	if res.New != nil {
		obj, err := decodeStoredJSON(res, data)
		if err != nil {
			return nil, err
		}
		// As kube's storage decoder of custom resources: what the schema
		// no longer knows is dropped and its new defaults are filled.
		if res.Coerce != nil {
			if _, err := res.Coerce(obj); err != nil {
				return nil, fmt.Errorf("decode stored %s: %w", res.Kind, err)
			}
		}
		if res.Defaults != nil {
			res.Defaults(obj)
		}
		return obj, setResourceVersion(obj, rev)
	}
	into := s.newObject(res)
	gvk := res.gvk()
	dec := s.json.Serializer
	if bytes.HasPrefix(data, protobufPrefix) {
		dec = s.protobuf.Serializer
	}
	obj, got, err := dec.Decode(data, &gvk, into)
	if err != nil {
		return nil, fmt.Errorf("decode stored %s: %w", res.Kind, err)
	}
	if res.Convertor != nil && got != nil && *got != gvk {
		// A typed kind served in several versions is stored in one.
		if obj, err = res.Convertor.ConvertToVersion(obj, gvk.GroupVersion()); err != nil {
			return nil, conversionErr(err)
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if res.Restore != nil {
		res.Restore(obj)
	}
	if err := setResourceVersion(obj, rev); err != nil {
		return nil, err
	}
	return obj, nil
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Stored values are in kube-apiserver's storage format: the protobuf
// envelope, protobufPrefix followed by a runtime.Unknown that holds
// apiVersion, kind and the object's protobuf encoding. It decodes several
// times faster than JSON, and every value is decoded again on each update
// and watch event. Values stored as JSON (apiVersion and kind included) by
// earlier versions stay readable: readers tell the two apart by the prefix,
// which no JSON document starts with, and the next write of an object
// stores it in protobuf.
var protobufPrefix = []byte("k8s\x00")

// encodeStored returns the stored form of obj: its protobuf envelope with
// apiVersion and kind and without resourceVersion.
func (s *Server) encodeStored(res *Resource, obj runtime.Object) ([]byte, error) {
	if res.New != nil {
		return encodeStoredJSON(res, obj)
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(res.gvk())
	if res.Convertor != nil && !res.StoredAs.Empty() && res.StoredAs != res.gvk() {
		if obj, acc, err = storedForm(res, obj); err != nil {
			return nil, err
		}
	}
	rv := acc.GetResourceVersion()
	acc.SetResourceVersion("")
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	err = s.protobuf.Serializer.Encode(obj, buf)
	acc.SetResourceVersion(rv)
	data := bytes.Clone(buf.Bytes())
	bufPool.Put(buf)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", res.Kind, err)
	}
	return data, nil
}

// storedForm converts obj, a typed object of a kind stored in another
// version, to StoredAs's, and sets obj to that read back in its own
// version: kube answers a write with what it decodes from the value it
// wrote, which its conversion and the defaults of the storage version
// may have changed.
func storedForm(res *Resource, obj runtime.Object) (runtime.Object, metav1.Object, error) {
	stored, err := res.Convertor.ConvertToVersion(obj, res.StoredAs.GroupVersion())
	if err != nil {
		return nil, nil, conversionErr(err)
	}
	back, err := res.Convertor.ConvertToVersion(stored.DeepCopyObject(), res.GVR.GroupVersion())
	if err != nil {
		return nil, nil, conversionErr(err)
	}
	to, from := reflect.ValueOf(obj), reflect.ValueOf(back)
	if to.Kind() != reflect.Pointer || to.Type() != from.Type() {
		return nil, nil, fmt.Errorf("encode %s: converted back to %T", res.Kind, back)
	}
	to.Elem().Set(from.Elem())
	obj.GetObjectKind().SetGroupVersionKind(res.gvk())
	stored.GetObjectKind().SetGroupVersionKind(res.StoredAs)
	acc, err := meta.Accessor(stored)
	return stored, acc, err
}

// decoderPool caches one deserializer per scheme for DecodeStored.
var decoderPool sync.Map // *runtime.Scheme → runtime.Decoder

// storedDecoder returns the deserializer DecodeStored uses for scheme.
func storedDecoder(scheme *runtime.Scheme) runtime.Decoder {
	if d, ok := decoderPool.Load(scheme); ok {
		return d.(runtime.Decoder)
	}
	d, _ := decoderPool.LoadOrStore(scheme, serializer.NewCodecFactory(scheme).UniversalDeserializer())
	return d.(runtime.Decoder)
}

// storeErr maps a store error about one object to its Status.
func storeErr(err error, gr schema.GroupResource, name string) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, store.ErrExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, store.ErrConflict):
		return conflictErr(gr, name)
	case errors.Is(err, store.ErrCompacted):
		return tooOldErr(err)
	case errors.Is(err, store.ErrFutureRevision):
		return tooLargeErr(err)
	case errors.Is(err, context.DeadlineExceeded):
		// kube's write handlers' answer to a write that ran out of time (J.4)
		return apierrors.NewTimeoutError("request did not complete within requested timeout - "+context.DeadlineExceeded.Error(), 0)
	case errors.Is(err, context.Canceled):
		return apierrors.NewTimeoutError("request did not complete within requested timeout - "+context.Canceled.Error(), 0)
	}
	return err
}

// conflictErr is the 409 of an update from a stale resourceVersion.
func conflictErr(gr schema.GroupResource, name string) error {
	return apierrors.NewConflict(gr, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// tooOldErr is the 410 Expired of a revision that has been compacted.
func tooOldErr(err error) error {
	var re *store.RevisionError
	if errors.As(err, &re) && re.Bound > 0 {
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", re.Requested, re.Bound-1))
	}
	if errors.As(err, &re) {
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d", re.Requested))
	}
	return apierrors.NewResourceExpired("too old resource version")
}

// tooLargeErr is kube's answer to a resourceVersion above the current one.
func tooLargeErr(err error) error {
	var re *store.RevisionError
	msg := "Too large resource version"
	if errors.As(err, &re) {
		msg = fmt.Sprintf("Too large resource version: %d, current: %d", re.Requested, re.Bound)
	}
	se := apierrors.NewTimeoutError(msg, 1)
	se.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return se
}

// parseRV parses a resourceVersion parameter; "" is 0.
func parseRV(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	rv, err := strconv.ParseUint(s, 10, 63)
	if err != nil {
		return 0, apierrors.NewBadRequest("invalid resource version: " + field.Invalid(field.NewPath("resourceVersion"), s, err.Error()).Error())
	}
	return int64(rv), nil
}

// dryRun reports whether the request asks dryRun=All. Another value is
// kube's 422 about the request's options, whose kind depends on the method.
func (q *request) dryRun() (bool, error) {
	vs := q.r.URL.Query()["dryRun"]
	if errs := metav1validation.ValidateDryRun(field.NewPath("dryRun"), vs); len(errs) > 0 {
		return false, optionsInvalid(q.r, errs...)
	}
	return len(vs) > 0, nil
}

// optionsInvalid is kube-apiserver's 422 for query parameters that fail
// the validation of the request's options: CreateOptions,
// UpdateOptions, PatchOptions, DeleteOptions or ListOptions, by method
// (D.7).
func optionsInvalid(r *http.Request, errs ...*field.Error) error {
	kind := map[string]string{
		http.MethodPost: "CreateOptions", http.MethodPut: "UpdateOptions", http.MethodPatch: "PatchOptions",
		http.MethodDelete: "DeleteOptions", http.MethodGet: "ListOptions",
	}[r.Method]
	return apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind(kind).GroupKind(), "", errs)
}

// fieldManagerName is the manager recorded for a write: the fieldManager
// parameter, else the client's User-Agent up to the first "/".
func fieldManagerName(r *http.Request) string {
	if m := r.URL.Query().Get("fieldManager"); m != "" {
		return m
	}
	ua := r.Header.Get("User-Agent")
	if i := strings.IndexByte(ua, '/'); i >= 0 {
		ua = ua[:i]
	}
	if ua == "" {
		ua = "unknown"
	}
	return ua
}
