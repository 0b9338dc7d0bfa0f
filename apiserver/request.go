package apiserver

import (
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/store"
)

// What a Subresource defined outside the package reads and writes through
// its Request: the body, the objects of the server, each as the verbs
// read and write them (defaults, admission, validation, managedFields,
// preconditions), and the answer.

// AnyAccepter is a Subresource whose answer is not held to the route's
// media types before it is served, when AcceptsAny reports true: a pod's
// log is text and its streams take any Accept (D.9), and a Creator
// negotiates its answer itself.
type AnyAccepter interface{ AcceptsAny() bool }

// AnyPathEntry is given every path under it when TakesAnyPath reports
// true: as a virtual resource's entry, every path under the resource,
// names and subresources included, refusing those it does not serve
// itself (the legacy bindings) with NotServed; as a subresource, the path
// after its name (a proxy's RESOURCE/NAME/proxy/PATH).
type AnyPathEntry interface{ TakesAnyPath() bool }

// Now is the time on the server's clock.
func (r *Request) Now() time.Time { return r.q.s.now() }

// Body checks that the answer can be encoded, then reads the request's
// body and returns it with the serializer of its Content-Type.
func (r *Request) Body() (runtime.SerializerInfo, []byte, error) { return r.q.subresourceBody() }

// DecodeBody reads the body as Body does and decodes it into into, an
// object of kind gvk, answering kube's 400 for a body of another kind;
// unknown fields are ignored.
func (r *Request) DecodeBody(gvk schema.GroupVersionKind, into runtime.Object) (runtime.Object, error) {
	info, data, err := r.q.subresourceBody()
	if err != nil {
		return nil, err
	}
	d, err := r.q.s.decode(info, data, gvk, into)
	return d.obj, err
}

// DryRun reports whether the request asks dryRun=All; another value is
// kube's 422 about the request's options.
func (r *Request) DryRun() (bool, error) { return r.q.dryRun() }

// CheckNamespaceActive refuses, as the namespace lifecycle does, a create
// of the object name of gr in the request's namespace when that namespace
// is missing or terminating.
func (r *Request) CheckNamespaceActive(gr schema.GroupResource, name string) error {
	return r.q.s.checkNamespaceActive(r.q.ctx(), gr, r.q.ns, name)
}

// AuthorizeAs checks that the user may do the request's action with verb
// instead of its own.
func (r *Request) AuthorizeAs(verb string) error { return r.q.authorizeAs(verb) }

// Admit runs admission, mutating then validating, on obj of kind gvk:
// the body of a create of the request's subresource (op Create), or the
// options of a connect to it (op Connect), as kube-apiserver admits them
// before its storage acts (D.13). name is the object's, the request's
// unless the URL names none. A mutation changes obj.
func (r *Request) Admit(op Operation, name string, gvk schema.GroupVersionKind, obj runtime.Object) error {
	return r.q.admitBody(op, name, gvk, obj)
}

func (q *request) admitBody(op Operation, name string, gvk schema.GroupVersionKind, obj runtime.Object) error {
	dry := false
	if op == Create {
		var err error
		if dry, err = q.dryRun(); err != nil {
			return err
		}
	}
	attrs := &AdmissionAttributes{Operation: op, Resource: q.res.GVR, Subresource: q.sub, Kind: gvk, Namespace: q.ns,
		Name: name, User: q.user(), Object: obj, DryRun: dry}
	if err := q.s.admit(q.ctx(), attrs); err != nil {
		return err
	}
	return q.s.validateAdmission(q.ctx(), attrs)
}

// Get reads the stored object name of gvr in namespace ("" for a
// cluster-scoped resource), with its resourceVersion; a missing one is
// kube's NotFound.
func (r *Request) Get(gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	res, err := r.object(gvr, name)
	if err != nil {
		return nil, err
	}
	kv, err := r.q.s.cfg.Store.Get(r.q.ctx(), Key(gvr, namespace, name))
	if err != nil {
		return nil, storeErr(err, res.groupResource(), name)
	}
	return r.q.s.decodeKV(res, kv)
}

// List reads every stored object of gvr in namespace ("" for all), in
// pages, in the store's order.
func (r *Request) List(gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, error) {
	res, err := r.served(gvr)
	if err != nil {
		return nil, err
	}
	var out []runtime.Object
	opts := store.ListOptions{Limit: 500}
	for {
		page, err := r.q.s.cfg.Store.List(r.q.ctx(), Key(gvr, namespace, ""), opts)
		if err != nil {
			return nil, storeErr(err, res.groupResource(), "")
		}
		for _, kv := range page.KVs {
			obj, err := r.q.s.decodeKV(res, kv)
			if err != nil {
				return nil, err
			}
			out = append(out, obj)
		}
		if !page.More || len(page.KVs) == 0 {
			return out, nil
		}
		opts.Continue = page.KVs[len(page.KVs)-1].Key
		opts.Revision = page.Revision
	}
}

// Update writes the object name of gvr in the request's namespace, or its
// subresource sub ("" for the object), as an update there does: mutate
// is given the stored object and returns its new state, and is called
// again when another writer changed the object meanwhile, unless the new
// state names a resourceVersion (then that must be the stored one).
// manager owns the written fields in managedFields; "" records no
// manager and leaves managedFields as stored, as kube's writes straight
// to storage do (a pod's binding). The dry run the request asks is
// honoured.
func (r *Request) Update(gvr schema.GroupVersionResource, name, sub, manager string, mutate func(old runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	res, err := r.object(gvr, name)
	if err != nil {
		return nil, err
	}
	return r.q.as(res, name, sub).guaranteedUpdate(mutate, manager)
}

// Delete deletes the object name of gvr in the request's namespace with
// opts (nil: none), as a DELETE does: checked against opts' preconditions
// and by admission, or only marked deleting while finalizers or a pod's
// grace period are pending. The dry run the request asks is honoured, as
// Update honours it, when opts ask none.
func (r *Request) Delete(gvr schema.GroupVersionResource, name string, opts *metav1.DeleteOptions) error {
	res, err := r.object(gvr, name)
	if err != nil {
		return err
	}
	dry, err := r.q.dryRun()
	if err != nil {
		return err
	}
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	if dry && len(opts.DryRun) == 0 {
		opts = opts.DeepCopy()
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, _, err = r.q.as(res, name, "").deleteOne(name, opts)
	return err
}

// Write answers with obj, encoded as the request accepts, and code.
func (r *Request) Write(code int, obj runtime.Object) {
	out, _ := r.q.negotiate(acceptOptions{})
	r.q.s.write(r.q.w, out, code, obj)
}

// WriteConverted answers as Write does, or with the Table or
// PartialObjectMetadata[List] of obj that the request asks for (D.7), as a
// resource's own reads answer.
func (r *Request) WriteConverted(code int, obj runtime.Object) error {
	out, err := r.q.negotiate(acceptOptions{convert: true})
	if err != nil {
		return err
	}
	if obj, err = r.q.s.convert(r.q.r, r.q.res, out, obj); err != nil {
		return err
	}
	r.q.s.write(r.q.w, out, code, obj)
	return nil
}

// WriteCreated answers a POST that made nothing to show: 201 with a
// success Status.
func (r *Request) WriteCreated() { r.q.writeCreated() }

// served returns the resource gvr, which the server must serve.
func (r *Request) served(gvr schema.GroupVersionResource) (*Resource, error) {
	res, ok := r.q.s.registry().get(gvr)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("%s is not served", gvr))
	}
	return res, nil
}

// object returns the resource gvr, which the server must serve, for an
// object named name, which must be one segment of a path as the store's
// keys are (kube's 400 otherwise).
func (r *Request) object(gvr schema.GroupVersionResource, name string) (*Resource, error) {
	res, err := r.served(gvr)
	if err != nil {
		return nil, err
	}
	if msgs := ValidatePathSegmentName(name, false); len(msgs) > 0 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Name parameter invalid: %q: %s", name, strings.Join(msgs, ";")))
	}
	return res, nil
}

// as returns a copy of the request that acts on another object of the
// server, for the writes a subresource makes besides its own: the object
// name of res, in the request's namespace if res is namespaced.
func (q *request) as(res *Resource, name, sub string) *request {
	pq := *q
	pq.res, pq.name, pq.sub = res, name, sub
	if !res.Namespaced {
		pq.ns = ""
	}
	return &pq
}

// authorizeAs checks that the user may do the request's action with verb
// instead of its own.
func (q *request) authorizeAs(verb string) error {
	ri, _ := authz.RequestInfoFrom(q.ctx())
	attrs := ri.Attributes(q.user())
	attrs.Verb = verb
	decision, reason, err := q.s.cfg.Authorizer.Authorize(q.ctx(), attrs)
	switch {
	case decision == authz.Allow:
		return nil
	case err != nil:
		return apierrors.NewInternalError(err)
	}
	return authz.Forbidden(attrs, reason)
}

// NotServed is kube's 404 for a resource or subresource the server does
// not serve.
func NotServed() error { return errNotServed }

// NamespaceMismatch is kube's 400 for a body whose namespace is not the
// request's.
func NamespaceMismatch() error { return errNamespaceMismatch() }

// PreconditionFailed is kube's message for a failed precondition of a
// delete or a write: field (UID, ResourceVersion) wanted want, the object
// has got.
func PreconditionFailed(field string, want, got any) error { return preconditionErr(field, want, got) }

// CheckDeleteOptions validates opts as kube-apiserver does, and raises a
// negative grace period to 1 s, as kube treats it.
func CheckDeleteOptions(opts *metav1.DeleteOptions) error { return checkDeleteOptions(opts) }
