package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"

	"github.com/google/uuid"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/warning"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/store"
)

// request is one resource request being served.
type request struct {
	s         *Server
	w         http.ResponseWriter
	r         *http.Request
	res       *Resource
	ns, name  string
	sub, verb string
}

func (q *request) ctx() context.Context { return q.r.Context() }

func (q *request) user() authn.User {
	u, _ := authn.UserFrom(q.r.Context())
	return u
}

// watchPath reports whether the request uses the old /watch/ path form.
func (q *request) watchPath() bool {
	ri, _ := authz.RequestInfoFrom(q.ctx())
	return ri != nil && ri.Verb == "watch" && !q.r.URL.Query().Has("watch")
}

func (q *request) key(name string) string { return Key(q.res.GVR, q.ns, name) }

func (q *request) gr() schema.GroupResource { return q.res.groupResource() }

func (q *request) serve() {
	err := q.checkRoute()
	if err == nil {
		err = q.route()
	}
	if err != nil {
		q.s.writeErr(q.w, q.r, err)
	}
}

// checkRoute refuses, as kube-apiserver's router does before any handler
// runs, a deletecollection the resource has no route for (B.6) and an
// Accept the route does not produce (D.7).
func (q *request) checkRoute() error {
	if q.sub == "" && q.name == "" && q.verb == "deletecollection" && q.res.NoDeleteCollection {
		// the router refuses the method before it looks at Accept
		return apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, "", schema.GroupResource{}, "", "", 0, false)
	}
	if q.acceptsAny() {
		return nil
	}
	produces := routeMediaTypes
	if q.r.Method == http.MethodGet && (q.name == "" || q.watchPath()) {
		produces = routeListMediaTypes
	}
	return checkRouteAccept(q.r, produces)
}

// route serves the generic verbs on the collection and the object, and
// gives a subresource to its entry.
func (q *request) route() error {
	switch {
	case q.sub == "" && q.name == "":
		return q.serveCollection()
	case q.res.Namespaced && q.ns == "":
		return errNotServed // no route names an object of a namespaced kind without its namespace
	case q.name == "":
		return methodNotAllowed()
	case q.sub == "":
		return q.serveObject()
	}
	return q.serveSubresource()
}

// serveCollection serves the verbs of RESOURCE.
func (q *request) serveCollection() error {
	switch {
	case q.verb == "create":
		return q.create()
	case q.verb == "list":
		return q.list()
	case q.verb == "watch":
		return q.watch()
	case q.verb == "deletecollection" && (q.ns != "" || !q.res.Namespaced):
		return q.deleteCollection()
	}
	return methodNotAllowed()
}

// serveObject serves the verbs of RESOURCE/NAME.
func (q *request) serveObject() error {
	switch q.verb {
	case "watch":
		return q.watch() // the old /watch/NAMESPACE/RESOURCE/NAME form
	case "get", "update", "patch":
		return serveWhole(q)
	case "delete":
		return q.delete()
	}
	return methodNotAllowed()
}

// respond writes obj, as a Table or its metadata when the client asked
// for that.
func (q *request) respond(code int, obj runtime.Object) error {
	out, err := q.negotiate(acceptOptions{convert: true})
	if err != nil {
		return err
	}
	if obj, err = q.s.convert(q.r, q.res, out, obj); err != nil {
		return err
	}
	q.s.write(q.w, out, code, obj)
	return nil
}

func (q *request) get() error {
	kv, err := q.s.cfg.Store.Get(q.ctx(), q.key(q.name))
	if err != nil {
		return storeErr(err, q.gr(), q.name)
	}
	obj, err := q.s.decodeKV(q.res, kv)
	if err != nil {
		return readErr(kv, err)
	}
	return q.respond(http.StatusOK, obj)
}

// decodeBody decodes the request body into a new object of the resource's
// kind and applies the fieldValidation directive.
func (q *request) decodeBody() (runtime.Object, error) {
	directive, err := fieldValidation(q.r)
	if err != nil {
		return nil, err
	}
	info, err := q.s.bodyInfo(q.r)
	if err != nil {
		return nil, err
	}
	data, err := readBody(q.r)
	if err != nil {
		return nil, err
	}
	d, err := q.s.decode(info, data, q.res.gvk(), q.s.newObject(q.res))
	if err != nil {
		return nil, err
	}
	if q.res.CheckDecoded != nil {
		if err := q.res.CheckDecoded(d.obj); err != nil {
			gvk := q.res.gvk()
			return nil, decodeErr(err, &gvk, gvk, data)
		}
	}
	if err := q.coerce(&d); err != nil {
		return nil, err
	}
	if err := checkFields(q.w, directive, q.res.gvk(), d.strictErr); err != nil {
		return nil, err
	}
	return d.obj, nil
}

// errNamespaceMismatch is kube-apiserver's answer to a body whose
// namespace is not the request's.
func errNamespaceMismatch() error {
	return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
}

// checkNamespace makes obj's namespace the request's, refusing a different
// one in the body.
func (q *request) checkNamespace(acc metav1.Object) error {
	if !q.res.Namespaced {
		acc.SetNamespace("")
		return nil
	}
	if ns := acc.GetNamespace(); ns != "" && ns != q.ns {
		return errNamespaceMismatch()
	}
	acc.SetNamespace(q.ns)
	return nil
}

// ensureNamespace holds an object that mutating admission may have
// changed to the request's namespace ns, as kube-apiserver does before it
// validates a create or an update: a namespaced object without one is put
// back in ns, one moved elsewhere is refused, a cluster-scoped one has
// none (D.13).
func ensureNamespace(res *Resource, acc metav1.Object, ns string) error {
	switch got := acc.GetNamespace(); {
	case !res.Namespaced:
		acc.SetNamespace("")
	case got == "":
		acc.SetNamespace(ns)
	case got != ns:
		return errNamespaceMismatch()
	}
	return nil
}

func (q *request) create() error {
	if _, err := q.negotiate(acceptOptions{convert: true}); err != nil {
		return err
	}
	dry, err := q.dryRun()
	if err != nil {
		return err
	}
	obj, err := q.decodeBody()
	if err != nil {
		return err
	}
	acc, _ := meta.Accessor(obj)
	if err := q.checkNamespace(acc); err != nil {
		return err
	}
	obj, err = q.s.insert(q.ctx(), q.res, obj, q.user(), dry, fieldManagerName(q.r))
	if err != nil {
		return err
	}
	return q.respond(http.StatusCreated, obj)
}

// maxGenerateNameAttempts is how often a create with generateName picks a
// new name after a clash.
const maxGenerateNameAttempts = 8

// insert creates obj (of res, with its namespace set): it fills the system
// fields and defaults, validates, admits and stores it, and returns it with
// its resourceVersion.
// manager, when not "", is recorded in managedFields as the owner of every
// field the object sets, defaults included, as an Update (D.1).
func (s *Server) insert(ctx context.Context, res *Resource, obj runtime.Object, user authn.User, dry bool, manager string) (runtime.Object, error) {
	return s.insertObject(ctx, res, obj, user, dry, true, manager)
}

// createStored creates an object the server itself owns, without admission.
func (s *Server) createStored(ctx context.Context, res *Resource, obj runtime.Object) (runtime.Object, error) {
	return s.insertObject(ctx, res, obj, authn.User{Name: "system:apiserver", Groups: []string{"system:masters"}}, false, false, serverFieldManager)
}

// serverFieldManager owns the fields of the objects the server makes
// itself, as kube-apiserver's own client is named.
const serverFieldManager = "kube-apiserver"

func (s *Server) insertObject(ctx context.Context, res *Resource, obj runtime.Object, user authn.User, dry, admit bool, manager string) (_ runtime.Object, err error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if err := s.checkCreateNamespace(ctx, res, acc); err != nil {
		return nil, err
	}
	generate := acc.GetName() == "" && acc.GetGenerateName() != ""
	if generate {
		acc.SetName(generatedName(acc.GetGenerateName()))
	}
	s.initSystemFields(res, obj, acc)
	if manager != "" {
		obj = s.trackFields(res, "", s.newObject(res), obj, manager)
		acc, _ = meta.Accessor(obj)
	}
	// As in kube-apiserver, admission sees the object after its defaults
	// and before the server's own preparation and validation, so what a
	// plugin sets is kept and validated (D.8); the escalation check of a
	// role or binding follows it (C.2).
	attrs := &AdmissionAttributes{Operation: Create, Resource: res.GVR, Kind: res.gvk(), Namespace: acc.GetNamespace(),
		Name: acc.GetName(), User: user, Object: obj, DryRun: dry}
	if admit {
		if res.RefuseCreate != nil {
			// In front of admission, as kube wraps its chain.
			if err := res.RefuseCreate(acc.GetName()); err != nil {
				return nil, err
			}
		}
		if err := s.admit(ctx, attrs); err != nil {
			return nil, err
		}
		if err := ensureNamespace(res, acc, attrs.Namespace); err != nil {
			return nil, err
		}
		if err := s.checkEscalation(ctx, res, "", user, obj, nil, acc.GetNamespace()); err != nil {
			return nil, err
		}
	}
	if res.PrepareCreate != nil {
		res.PrepareCreate(obj, user)
	}
	if res.Prepare != nil {
		res.Prepare(obj, nil)
	}
	if res.Allocate != nil {
		// As in kube, allocation comes before validation, and is given
		// back if it or anything after it fails: the deferred call reads
		// the function's result.
		alloc := s.svcAlloc.begin(ctx, dry)
		defer func() { alloc.end(err) }()
		if err = res.Allocate(alloc, obj, nil); err != nil {
			return nil, err
		}
	}
	if err := s.validate(res, "", obj, nil); err != nil {
		return nil, err
	}
	if admit {
		if err := s.authorizeWrite(ctx, res, user, obj, nil); err != nil {
			return nil, err
		}
	}
	warn(ctx, res, "", obj, nil)
	if admit {
		// kube-apiserver's validating admission: after the registry's
		// validation, on the object as it will be stored (D.8).
		if err := s.validateAdmission(ctx, attrs); err != nil {
			return nil, err
		}
	}
	if dry {
		if _, err := s.encodeStored(res, obj); err != nil {
			return nil, err
		}
		return obj, nil
	}
	return s.storeCreated(ctx, res, obj, acc, generate)
}

// checkCreateNamespace refuses a create of a namespaced object in a
// namespace that does not exist or is being deleted (G.9).
func (s *Server) checkCreateNamespace(ctx context.Context, res *Resource, acc metav1.Object) error {
	if !res.Namespaced {
		return nil
	}
	ok, err := s.namespaceExists(ctx, acc.GetNamespace())
	if err != nil {
		return storeErr(err, namespacesGVR.GroupResource(), acc.GetNamespace())
	}
	if !ok {
		return apierrors.NewNotFound(namespacesGVR.GroupResource(), acc.GetNamespace())
	}
	name := acc.GetName()
	if name == "" {
		name = acc.GetGenerateName()
	}
	return s.checkNamespaceActive(ctx, res.groupResource(), acc.GetNamespace(), name)
}

// initSystemFields sets what the server sets on a create before anyone
// sees the object (UID, creation time, generation, no deletion), clears
// its status, and fills the kind's defaults.
func (s *Server) initSystemFields(res *Resource, obj runtime.Object, acc metav1.Object) {
	acc.SetUID(types.UID(uuid.NewString()))
	acc.SetCreationTimestamp(metav1.NewTime(s.now().Truncate(1e9)))
	acc.SetResourceVersion("")
	acc.SetDeletionTimestamp(nil)
	acc.SetDeletionGracePeriodSeconds(nil)
	acc.SetGeneration(0)
	if res.Generation {
		acc.SetGeneration(1)
	}
	if res.ResetStatus != nil {
		res.ResetStatus(obj, nil)
	}
	if res.Defaults != nil {
		res.Defaults(obj)
	}
}

// storeCreated writes a new object, picking another generated name after
// a clash (generate), and sets its resourceVersion.
func (s *Server) storeCreated(ctx context.Context, res *Resource, obj runtime.Object, acc metav1.Object, generate bool) (runtime.Object, error) {
	for attempt := 1; ; attempt++ {
		data, err := s.encodeStored(res, obj)
		if err != nil {
			return nil, err
		}
		rev, err := s.cfg.Store.Create(ctx, Key(res.GVR, acc.GetNamespace(), acc.GetName()), data)
		if err == nil {
			acc.SetResourceVersion(strconv.FormatInt(rev, 10))
			return obj, nil
		}
		if !errors.Is(err, store.ErrExists) || !generate {
			return nil, storeErr(err, res.groupResource(), acc.GetName())
		}
		if attempt == maxGenerateNameAttempts {
			return nil, apierrors.NewGenerateNameConflict(res.groupResource(), acc.GetName(), 1)
		}
		acc.SetName(generatedName(acc.GetGenerateName()))
	}
}

// generatedName appends 5 random characters to prefix, cut to 58.
func generatedName(prefix string) string {
	if len(prefix) > 58 {
		prefix = prefix[:58]
	}
	return prefix + utilrand.String(5)
}

// validate checks obj's metadata (and against old on update) and the
// kind-specific rules, with those of an update of subresource sub ("" for
// the object itself); the error is a 422 Invalid.
func (s *Server) validate(res *Resource, sub string, obj, old runtime.Object) error {
	acc, _ := meta.Accessor(obj)
	errs := apivalidation.ValidateObjectMetaAccessor(acc, res.Namespaced, res.ValidateName, field.NewPath("metadata"))
	if old != nil {
		oldAcc, _ := meta.Accessor(old)
		errs = append(errs, apivalidation.ValidateObjectMetaAccessorUpdate(acc, oldAcc, field.NewPath("metadata"))...)
	}
	switch {
	case sub == "status" && res.ValidateStatus != nil:
		errs = append(errs, res.ValidateStatus(obj, old)...)
	case sub == "approval" && res.ValidateApproval != nil:
		errs = append(errs, res.ValidateApproval(obj, old)...)
	case res.Parts[sub].Validate != nil:
		errs = append(errs, res.Parts[sub].Validate(obj, old)...)
	case res.Validate != nil:
		errs = append(errs, res.Validate(obj, old)...)
	}
	// On create, kube-apiserver checks that the name and generateName can
	// be a path segment once the kind's own rules pass, and only then:
	// a CSR, whose own rule takes any name, reports a name with "/" only
	// when nothing else is wrong (H.1).
	if old == nil && len(errs) == 0 {
		errs = apivalidation.ValidateObjectMetaAccessor(acc, res.Namespaced, ValidatePathSegmentName, field.NewPath("metadata"))
	}
	// A scale update is an update of the object itself (G.2).
	if old != nil && (sub == "" || sub == "scale") && res.ValidateUpdate != nil {
		errs = append(errs, res.ValidateUpdate(obj, old)...)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(res.invalidKind(), acc.GetName(), errs)
	}
	return nil
}

// warn adds kube's warnings about a valid object to the answer, as the
// registry's strategies give them after validation: on a create, and on
// an update of the object itself (D.5).
func warn(ctx context.Context, res *Resource, sub string, obj, old runtime.Object) {
	if res.Warnings == nil || sub != "" {
		return
	}
	for _, text := range res.Warnings(obj, old) {
		warning.AddWarning(ctx, "", text)
	}
}

// invalidKind is the kind a 422 names: kube stores events.k8s.io Events
// as core Events, and its errors name that kind, without a group.
func (r *Resource) invalidKind() schema.GroupKind {
	if r.GVR.Group == eventsv1.GroupName {
		return schema.GroupKind{Kind: r.Kind}
	}
	return schema.GroupKind{Group: r.GVR.Group, Kind: r.Kind}
}

// admit runs every plugin's Admit, in order: kube-apiserver's mutating
// admission. A plugin that asks for reinvocation has them all run once
// more, as kube-apiserver's chain does (D.8).
func (s *Server) admit(ctx context.Context, a *AdmissionAttributes) error {
	for _, adm := range s.cfg.Admission {
		if err := adm.Admit(ctx, a); err != nil {
			return err
		}
	}
	if !a.Reinvoke || a.Reinvocation {
		return nil
	}
	a.Reinvoke, a.Reinvocation = false, true
	return s.admit(ctx, a)
}

// validateAdmission runs the Validate of every plugin that has one, in
// order: kube-apiserver's validating admission.
func (s *Server) validateAdmission(ctx context.Context, a *AdmissionAttributes) error {
	for _, adm := range s.cfg.Admission {
		if v, ok := adm.(AdmissionValidator); ok {
			if err := v.Validate(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkEscalation runs the escalation check on a create (old nil) or an
// update of subresource sub of a role or binding. kube-apiserver's RBAC
// storage runs it after mutating admission and before anything else of
// the write: preparing and validating the object, comparing its
// resourceVersion, validating admission. So an invalid write that
// escalates is a 403, and one that does not a 422 (C.2).
func (s *Server) checkEscalation(ctx context.Context, res *Resource, sub string, user authn.User, obj, old runtime.Object, ns string) error {
	if !s.escalationChecked(res, sub) {
		return nil
	}
	return s.cfg.Escalation.CheckRBACWrite(ctx, user, obj, old, ns)
}

// escalationChecked reports whether writes of subresource sub of res are
// checked for escalation: those of roles and bindings themselves.
func (s *Server) escalationChecked(res *Resource, sub string) bool {
	return s.cfg.Escalation != nil && res.GVR.Group == rbacv1.GroupName && sub == ""
}

// OnlyGCFieldsChange reports whether obj differs from old in nothing but
// owner references and finalizers (and managed fields), the fields the
// garbage collector changes.
func OnlyGCFieldsChange(obj, old runtime.Object) bool {
	oldAcc, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	c := obj.DeepCopyObject()
	acc, err := meta.Accessor(c)
	if err != nil {
		return false
	}
	acc.SetOwnerReferences(oldAcc.GetOwnerReferences())
	acc.SetFinalizers(oldAcc.GetFinalizers())
	acc.SetSelfLink(oldAcc.GetSelfLink())
	acc.SetManagedFields(oldAcc.GetManagedFields())
	return apiequality.Semantic.DeepEqual(c, old)
}

// copySystemFields sets on dst the fields of src an update's preparation
// takes from the stored object.
func copySystemFields(dst, src metav1.Object) {
	dst.SetUID(src.GetUID())
	dst.SetCreationTimestamp(src.GetCreationTimestamp())
	dst.SetDeletionTimestamp(src.GetDeletionTimestamp())
	dst.SetDeletionGracePeriodSeconds(src.GetDeletionGracePeriodSeconds())
	dst.SetGeneration(src.GetGeneration())
	dst.SetResourceVersion(src.GetResourceVersion())
}

// withSystemFields returns a copy of obj with the system fields of sent.
func withSystemFields(obj runtime.Object, sent metav1.Object) runtime.Object {
	c := obj.DeepCopyObject()
	if acc, err := meta.Accessor(c); err == nil {
		copySystemFields(acc, sent)
	}
	return c
}

func (q *request) update() error {
	if _, err := q.negotiate(acceptOptions{convert: true}); err != nil {
		return err
	}
	body, err := q.decodeBody()
	if err != nil {
		return err
	}
	acc, _ := meta.Accessor(body)
	if err := q.checkNamespace(acc); err != nil {
		return err
	}
	if acc.GetName() != q.name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", acc.GetName(), q.name))
	}
	manager := fieldManagerName(q.r)
	obj, err := q.guaranteedUpdate(func(old runtime.Object) (runtime.Object, error) {
		if q.res.NeedsResourceVersion && acc.GetResourceVersion() == "" {
			// kube names the resource where the kind would be.
			return nil, apierrors.NewInvalid(schema.GroupKind{Group: q.res.GVR.Group, Kind: q.res.GVR.Resource}, q.name, field.ErrorList{
				field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update")})
		}
		return body.DeepCopyObject(), nil
	}, manager)
	if err != nil {
		return err
	}
	return q.respond(http.StatusOK, obj)
}

// guaranteedUpdate reads the object, computes its new state with mutate and
// writes it if nothing changed in between, retrying when it did unless the
// new state names a resourceVersion (then that must be the current one).
func (q *request) guaranteedUpdate(mutate func(old runtime.Object) (runtime.Object, error), manager string) (_ runtime.Object, err error) {
	dry, err := q.dryRun()
	if err != nil {
		return nil, err
	}
	key := q.key(q.name)
	// alloc is the current attempt's allocation: given back before a
	// retry, finished as the update ends.
	var alloc *allocation
	defer func() { alloc.end(err) }()
	for {
		alloc.finish(false)
		alloc = nil
		kv, err := q.s.cfg.Store.Get(q.ctx(), key)
		if err != nil {
			return nil, storeErr(err, q.gr(), q.name)
		}
		old, err := q.s.decodeKV(q.res, kv)
		if err != nil {
			return nil, err
		}
		var obj runtime.Object
		if obj, alloc, err = q.updatedObject(mutate, manager, kv, old, dry); err != nil {
			return nil, err
		}
		out, retry, err := q.writeUpdate(key, kv, obj, old, dry)
		if retry {
			// Written meanwhile: start again from the new state, which
			// checks a precondition afresh. A patch names the version it
			// was applied to, so it is applied again to the new one, as
			// kube-apiserver reapplies it.
			continue
		}
		return out, err
	}
}

// checkUID refuses an update whose object names a UID other than the
// stored object's, as kube-apiserver does: a writer that names the UID
// (a status patch that must not reach a pod of the same name made since)
// writes only that object. An update (PUT) takes it as a precondition,
// kube's 409; a patch that changed it fails validation, kube's 422.
func (q *request) checkUID(acc metav1.Object, old runtime.Object) error {
	oldAcc, err := meta.Accessor(old)
	if err != nil {
		return err
	}
	uid, stored := acc.GetUID(), oldAcc.GetUID()
	if uid == "" || uid == stored {
		return nil
	}
	if q.verb == "update" {
		//lint:ignore ST1005 kube's own text
		return apierrors.NewConflict(q.gr(), q.name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, stored))
	}
	return apierrors.NewInvalid(q.res.invalidKind(), q.name, field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), uid, "field is immutable")})
}

// updatedObject computes what an update of old, stored as kv, stores:
// mutate's result with what the server keeps and sets, admitted, checked
// for escalation and validated. alloc is what it reserved, returned also
// with an error so that the caller finishes it.
func (q *request) updatedObject(mutate func(old runtime.Object) (runtime.Object, error), manager string, kv store.KV, old runtime.Object, dry bool) (_ runtime.Object, alloc *allocation, err error) {
	obj, err := mutate(old.DeepCopyObject())
	if err != nil {
		return nil, nil, err
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, err
	}
	if err := q.checkUID(acc, old); err != nil {
		return nil, nil, err
	}
	precondition := acc.GetResourceVersion()
	if precondition == "" && q.res.RequireResourceVersion {
		return nil, nil, apierrors.NewInvalid(schema.GroupKind{Group: q.res.GVR.Group, Kind: q.res.GVR.Resource}, q.name,
			field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), 0, "must be specified for an update")})
	}
	// sent keeps the system fields as the request set them, for the
	// comparison below.
	sent := &metav1.ObjectMeta{}
	copySystemFields(sent, acc)
	obj, err = q.s.prepareUpdate(q.res, q.sub, obj, old)
	if err != nil {
		return nil, nil, err
	}
	if manager != "" {
		obj = q.s.trackFields(q.res, q.sub, old, obj, manager)
	}
	if _, isPart := q.res.Parts[q.sub]; isPart {
		// kube's strategies for a part reset the labels and annotations
		// after its field manager has given them to the writer.
		acc, _ := meta.Accessor(obj)
		oldAcc, _ := meta.Accessor(old)
		acc.SetLabels(oldAcc.GetLabels())
		acc.SetAnnotations(oldAcc.GetAnnotations())
	}
	// The same order as a create's (D.8): admission, the escalation check
	// (C.2), then what the server sets, then the allocations, then
	// validation.
	attrs, scaled, err := q.admitUpdate(obj, old, sent, dry)
	if err != nil {
		return nil, nil, err
	}
	// kube-apiserver compares the resourceVersion once admission and the
	// escalation check have seen the object.
	if precondition != "" && precondition != strconv.FormatInt(kv.ModRevision, 10) {
		return nil, nil, conflictErr(q.gr(), q.name)
	}
	finishUpdate(q.res, q.sub, obj, old)
	if q.res.PrepareSubresource != nil && (q.sub == "status" || q.sub == "approval") {
		q.res.PrepareSubresource(q.sub, obj, old, q.s.now())
	}
	if q.res.Allocate != nil && (q.sub == "" || q.sub == q.res.SpecSubresource) {
		alloc = q.s.svcAlloc.begin(q.ctx(), dry)
		if err := q.res.Allocate(alloc, obj, old); err != nil {
			return nil, alloc, err
		}
	}
	if err := q.s.validate(q.res, q.sub, obj, old); err != nil {
		return nil, alloc, err
	}
	if q.sub == "" {
		if err := q.s.authorizeWrite(q.ctx(), q.res, q.user(), obj, old); err != nil {
			return nil, alloc, err
		}
	}
	warn(q.ctx(), q.res, q.sub, obj, old)
	if scaled {
		attrs.Object, attrs.OldObject = obj, old
		admitAsScale(q.res, attrs)
	}
	if err := q.s.validateAdmission(q.ctx(), attrs); err != nil {
		return nil, alloc, err
	}
	return obj, alloc, nil
}

// admitUpdate runs mutating admission on an update's object, admitting
// the Scales of a scale update, then checks its namespace and, on what
// admission returned, the escalation rules (D.8, C.2). sent holds the
// system fields as the request sent them.
func (q *request) admitUpdate(obj, old runtime.Object, sent *metav1.ObjectMeta, dry bool) (_ *AdmissionAttributes, scaled bool, _ error) {
	attrs := &AdmissionAttributes{Operation: Update, Resource: q.res.GVR, Kind: q.res.gvk(), Subresource: q.sub,
		Namespace: q.ns, Name: q.name, User: q.user(), Object: obj, OldObject: old, DryRun: dry}
	scaled = q.sub == "scale" && admitAsScale(q.res, attrs)
	if err := q.s.admit(q.ctx(), attrs); err != nil {
		return nil, false, err
	}
	if scaled {
		setAdmittedReplicas(q.res, obj, attrs)
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, false, err
	}
	if err := ensureNamespace(q.res, acc, q.ns); err != nil {
		return nil, false, err
	}
	// As in kube-apiserver, an update of a role or binding that changes
	// nothing but what the garbage collector changes (owner references
	// and finalizers) is not checked for escalation; the object is
	// compared as mutating admission left it, with the system fields the
	// request sent rather than those the server set (C.2).
	if !q.s.escalationChecked(q.res, q.sub) || !OnlyGCFieldsChange(withSystemFields(obj, sent), old) {
		if err := q.s.checkEscalation(q.ctx(), q.res, q.sub, q.user(), obj, old, q.ns); err != nil {
			return nil, false, err
		}
	}
	return attrs, scaled, nil
}

// writeUpdate stores obj in place of old, stored as kv under key, and
// returns what the update answers: obj with its new resourceVersion, old
// when nothing changed, obj on a dry run. An object whose last finalizer
// went is deleted instead. retry: written meanwhile.
func (q *request) writeUpdate(key string, kv store.KV, obj, old runtime.Object, dry bool) (_ runtime.Object, retry bool, _ error) {
	data, err := q.s.encodeStored(q.res, obj)
	if err != nil {
		return nil, false, err
	}
	if dry {
		return obj, false, nil
	}
	if string(data) == string(kv.Value) {
		return old, false, nil // nothing changed: no write, same resourceVersion
	}
	acc, _ := meta.Accessor(obj)
	if acc.GetDeletionTimestamp() != nil && len(acc.GetFinalizers()) == 0 && !q.s.gracefulPending(q.res, obj) && !namespaceFinalizing(obj) {
		// The last finalizer is gone: the object goes now.
		if _, _, err := q.s.cfg.Store.Delete(q.ctx(), key, kv.ModRevision); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return nil, true, nil
			}
			return nil, false, storeErr(err, q.gr(), q.name)
		}
		q.s.released(q.ctx(), q.res, obj)
		return obj, false, nil
	}
	rev, err := q.s.cfg.Store.Update(q.ctx(), key, data, kv.ModRevision)
	if errors.Is(err, store.ErrConflict) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, storeErr(err, q.gr(), q.name)
	}
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, false, nil
}

// prepareUpdate keeps what an update may not change: the system fields, and
// for the main resource its status, for the status subresource everything
// but status, labels and annotations, for the approval subresource
// everything but what resetApproval copies, labels and annotations, and for
// a part's subresource everything but what its Take copies.
func (s *Server) prepareUpdate(res *Resource, sub string, obj, old runtime.Object) (runtime.Object, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	oldAcc, _ := meta.Accessor(old)
	if res.Defaults != nil {
		res.Defaults(obj)
	}
	part, isPart := res.Parts[sub]
	if sub == "status" || sub == "approval" || isPart {
		merged := old.DeepCopyObject()
		switch {
		case isPart:
			part.Take(merged, obj)
		case sub == "status":
			res.ResetStatus(merged, obj)
		default:
			res.ResetApproval(merged, obj)
		}
		mAcc, _ := meta.Accessor(merged)
		mAcc.SetLabels(acc.GetLabels())
		mAcc.SetAnnotations(acc.GetAnnotations())
		mAcc.SetManagedFields(acc.GetManagedFields())
		if sub == "status" && res.StatusTakesMetadata {
			mAcc.SetFinalizers(acc.GetFinalizers())
			mAcc.SetOwnerReferences(acc.GetOwnerReferences())
		}
		obj, acc = merged, mAcc
	} else if (sub == "" || sub == res.SpecSubresource) && res.ResetStatus != nil {
		res.ResetStatus(obj, old)
	}
	acc.SetUID(oldAcc.GetUID())
	acc.SetCreationTimestamp(oldAcc.GetCreationTimestamp())
	acc.SetDeletionTimestamp(oldAcc.GetDeletionTimestamp())
	acc.SetDeletionGracePeriodSeconds(oldAcc.GetDeletionGracePeriodSeconds())
	acc.SetGeneration(oldAcc.GetGeneration())
	acc.SetResourceVersion(oldAcc.GetResourceVersion())
	if acc.GetNamespace() == "" {
		acc.SetNamespace(oldAcc.GetNamespace())
	}
	return obj, nil
}

// finishUpdate sets, after admission, what the server itself sets on an
// update: the kind's own fields, and a generation that counts a changed
// spec, as kube-apiserver's update strategies do once admission has run
// (D.1, D.8).
func finishUpdate(res *Resource, sub string, obj, old runtime.Object) {
	if res.Prepare != nil && (sub == "" || sub != res.SpecSubresource) && (sub != "status" || !res.StatusTakesMetadata) {
		res.Prepare(obj, old)
	}
	if _, isPart := res.Parts[sub]; !res.Generation || sub != "" && sub != "scale" && !isPart {
		return
	}
	acc, _ := meta.Accessor(obj)
	oldAcc, _ := meta.Accessor(old)
	changed := specChanged(old, obj)
	if res.GenerationChanged != nil {
		changed = res.GenerationChanged(obj, old)
	}
	if changed || res.GenerationCountsAnnotations && !apiequality.Semantic.DeepEqual(acc.GetAnnotations(), oldAcc.GetAnnotations()) {
		acc.SetGeneration(oldAcc.GetGeneration() + 1)
	}
}

// specChanged reports whether the .spec of two objects of a kind with a
// spec differs.
func specChanged(old, obj runtime.Object) bool {
	spec := func(o runtime.Object) any {
		v := reflect.ValueOf(o).Elem().FieldByName("Spec")
		if !v.IsValid() {
			return nil
		}
		return v.Interface()
	}
	return !apiequality.Semantic.DeepEqual(spec(old), spec(obj))
}
