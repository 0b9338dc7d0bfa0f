package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/authn"
)

// Subresource serves one subresource of a resource, RESOURCE/NAME/SUB,
// or, as the entry "" of a virtual resource (one with nothing stored, a
// review or the legacy bindings), the resource itself. The server routes
// a request to it once the resource, the scope and the name are known and
// the verb is one of Verbs; any other verb is refused with kube's 405.
type Subresource interface {
	// Name is the path segment ("status", "scale", "log"); "" for a
	// virtual resource's own entry.
	Name() string
	// Verbs are the verbs served, in the order discovery lists them.
	Verbs() []string
	// Kind is the kind discovery names for the subresource: empty when it
	// is the resource's own; Group and Version empty when they are the
	// resource's.
	Kind() schema.GroupVersionKind
	// Serve answers the request; an error is written as its Status (an
	// *apierrors.StatusError as it is, anything else as a 500).
	Serve(req *Request) error
}

// Request is what a Subresource sees of the request it serves.
type Request struct{ q *request }

// Context is the request's context, with its user and RequestInfo.
func (r *Request) Context() context.Context { return r.q.ctx() }

// HTTP returns the request and the writer of its answer.
func (r *Request) HTTP() (http.ResponseWriter, *http.Request) { return r.q.w, r.q.r }

// Namespace is the request's namespace; "" for a cluster-scoped resource.
func (r *Request) Namespace() string { return r.q.ns }

// Name is the object's name; "" on a collection.
func (r *Request) Name() string { return r.q.name }

// Verb is the request's verb, one of the Subresource's Verbs.
func (r *Request) Verb() string { return r.q.verb }

// User is the authenticated user, after impersonation.
func (r *Request) User() authn.User { return r.q.user() }

// Resource is the resource the request names.
func (r *Request) Resource() *Resource { return r.q.res }

// ServeUpdate serves the request, an update of its resource's
// SpecSubresource, as kube serves one (a namespace's finalize, G.9); any
// other subresource is refused with an internal error, as the server
// knows no rules for what its update keeps.
func (r *Request) ServeUpdate() error {
	if r.q.sub == "" || r.q.sub != r.q.res.SpecSubresource {
		return apierrors.NewInternalError(fmt.Errorf("%s/%s is not the SpecSubresource of its resource", r.q.res.GVR.Resource, r.q.sub))
	}
	return r.q.update()
}

// openAPIShape says which paths the OpenAPI document gives a built-in
// subresource.
type openAPIShape uint8

const (
	openAPINone   openAPIShape = iota
	openAPIObject              // the object's get, put and patch (status, approval)
	openAPIScale               // an autoscaling/v1 Scale's get, put and patch
)

// subresource is a Subresource the server serves with its own machinery.
type subresource struct {
	name    string
	verbs   []string
	kind    schema.GroupVersionKind
	openAPI openAPIShape
	serve   func(q *request) error
}

func (s *subresource) Name() string                  { return s.name }
func (s *subresource) Verbs() []string               { return s.verbs }
func (s *subresource) Kind() schema.GroupVersionKind { return s.kind }
func (s *subresource) Serve(req *Request) error      { return s.serve(req.q) }

var _ Subresource = (*subresource)(nil)

// objectVerbs are the verbs of a subresource that reads and writes the
// whole object, and of scale.
var objectVerbs = []string{"get", "patch", "update"}

// serveWhole serves get, update and patch of a subresource that reads and
// writes the whole object, as the object's own verbs do.
func serveWhole(q *request) error {
	switch q.verb {
	case "get":
		return q.get()
	case "update":
		return q.update()
	}
	return q.patch()
}

// statusSubresource is RESOURCE/status: get, update and patch of .status
// only (the rest of the object stays as stored).
func statusSubresource() *subresource {
	return &subresource{name: "status", verbs: objectVerbs, openAPI: openAPIObject, serve: serveWhole}
}

// StatusSubresource is a stored kind's RESOURCE/status: its get, update
// and patch write .status only, as the kind's ResetStatus and
// ValidateStatus decide.
func StatusSubresource() Subresource { return statusSubresource() }

// ScaleSubresource is a replicated kind's RESOURCE/scale: its get, update
// and patch read and write spec.replicas as an autoscaling/v1 Scale (G.2).
func ScaleSubresource() Subresource { return scaleSubresource() }

// ApprovalSubresource is RESOURCE/approval: get, update and patch of what
// the kind's ResetApproval copies (a CSR's Approved and Denied
// conditions, H.1), checked by its ValidateApproval.
func ApprovalSubresource() Subresource {
	return &subresource{name: "approval", verbs: objectVerbs, openAPI: openAPIObject, serve: serveWhole}
}

// Part is how an update of a subresource that writes one part of an
// object (Resource.Parts) is taken and checked.
type Part struct {
	// Take copies into obj (a copy of the stored object) the part an
	// update may change, from the body.
	Take func(obj, from runtime.Object)
	// Validate checks the update in place of the kind's Validate; nil:
	// the kind's Validate.
	Validate func(obj, old runtime.Object) field.ErrorList
}

// PartSubresource is RESOURCE/NAME, the get, update and patch of the part
// of the object that the Resource's Parts entry NAME takes; the answer is
// the object.
func PartSubresource(name string) Subresource {
	return &subresource{name: name, verbs: objectVerbs, openAPI: openAPIObject, serve: serveWhole}
}

// scaleSubresource is RESOURCE/scale: spec.replicas as an autoscaling/v1
// Scale (G.2).
func scaleSubresource() *subresource {
	return &subresource{name: "scale", verbs: objectVerbs, kind: scaleGVK, openAPI: openAPIScale, serve: (*request).serveScale}
}

// subresources is a Resource's Subresources map of subs, by name.
func subresources(subs ...Subresource) map[string]Subresource {
	m := make(map[string]Subresource, len(subs))
	for _, sub := range subs {
		m[sub.Name()] = sub
	}
	return m
}

// virtual reports whether r stores nothing: its entry "" serves it.
func (r *Resource) virtual() bool {
	_, ok := r.Subresources[""]
	return ok
}

// serveSubresource routes a request for a subresource of an object to its
// entry: kube's 404 for one the resource does not have, its 405 for a verb
// the entry does not take.
func (q *request) serveSubresource() error {
	sub, ok := q.res.Subresources[q.sub]
	switch {
	case !ok:
		return errNotServed
	case !slices.Contains(sub.Verbs(), q.verb):
		return methodNotAllowed()
	}
	return sub.Serve(&Request{q})
}

// acceptsAny reports whether the request's subresource answers any Accept.
func (q *request) acceptsAny() bool {
	if q.sub == "" {
		return false
	}
	a, ok := q.res.Subresources[q.sub].(AnyAccepter)
	return ok && a.AcceptsAny()
}

// subresourceBody checks that the answer can be encoded, then reads the
// body of a POST to a subresource (a Binding, an Eviction) and the
// serializer of its Content-Type.
func (q *request) subresourceBody() (runtime.SerializerInfo, []byte, error) {
	if _, err := q.negotiate(acceptOptions{}); err != nil {
		return runtime.SerializerInfo{}, nil, err
	}
	info, err := q.s.bodyInfo(q.r)
	if err != nil {
		return runtime.SerializerInfo{}, nil, err
	}
	data, err := readBody(q.r)
	return info, data, err
}

// writeCreated answers a POST to a subresource that made nothing to show:
// 201 with a success Status.
func (q *request) writeCreated() {
	out, _ := q.negotiate(acceptOptions{})
	q.s.write(q.w, out, http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

// methodNotAllowed is kube-apiserver's 405 for a verb a path does not take.
func methodNotAllowed() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed,
		Reason: metav1.StatusReasonMethodNotAllowed, Message: "the server does not allow this method on the requested resource",
		Details: &metav1.StatusDetails{}}}
}
