package apiserver

import (
	"fmt"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubegate/kubegate/authn"
)

// Resource describes one resource the server serves: its names, scope,
// subresources and the hooks that give a stored kind its behaviour. Zero
// and nil fields mean the kind has none of what they describe.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Singular   string
	Namespaced bool
	ShortNames []string
	Categories []string
	// New returns an empty object of an unstructured kind (a custom
	// resource's *unstructured.Unstructured); its objects are stored as
	// JSON and served as JSON and YAML, a protobuf answer being kube's
	// 406. nil: the scheme's typed object, stored in the protobuf envelope.
	New func() runtime.Object
	// Coerce prunes and coerces a decoded body of an unstructured kind,
	// as kube's decoder of custom resources does, and returns the paths
	// of the fields it dropped, which the fieldValidation directive
	// reports as unknown fields; nil: nothing to do.
	Coerce func(obj runtime.Object) (unknown []string, err error)
	// ScalePaths locate an unstructured kind's replicas and selector for
	// its scale subresource; nil for a typed kind.
	ScalePaths *ScalePaths
	// RefuseCreate, when set, refuses a create of the object name before
	// admission (a custom resource whose definition is being deleted);
	// nil: creates go on.
	RefuseCreate func(name string) error
	// NeedsResourceVersion: an update (PUT) must name the resourceVersion
	// it replaces, as kube's strategies that refuse unconditional updates
	// (custom resources) require; without one it is 422.
	NeedsResourceVersion bool
	// OpenAPIV3 is the OpenAPI v3 document of an unstructured kind's
	// version (a custom resource's, as kube builds it); the documents of
	// one group version are merged. nil: none.
	OpenAPIV3 *spec3.OpenAPI
	// Verbs are the verbs discovery lists for the resource itself, in
	// the order listed; nil: the generic verbs, sorted (B.6).
	Verbs metav1.Verbs
	// Subresources are served by name, RESOURCE/NAME/SUB (status, scale,
	// pods/log, ...), each with its verbs. An entry "" makes the resource
	// virtual: nothing of it is stored, and that entry serves it (a
	// review's create).
	Subresources map[string]Subresource
	// SpecSubresource names a subresource whose update may change what
	// Prepare keeps as stored on an update of the object (a namespace's
	// finalize and spec.finalizers, G.9): its body replaces the object but
	// for the status, kept as an update of the object keeps it, and
	// Prepare does not run; a subresource Serves it with
	// Request.ServeUpdate. "": none.
	SpecSubresource string
	// Untracked lists, per subresource ("" for the object itself), the
	// fields an update or apply there leaves as they were and so no writer
	// owns in managedFields nor conflicts on, as kube-apiserver's reset
	// fields (B.8, H.1). A subresource without an entry gets the rule of
	// kube's strategies for a kind with a status subresource: the object
	// itself and its SpecSubresource reset status, the status subresource
	// resets spec; other subresources, and every one of a kind without a
	// status subresource, reset nothing. An entry, nil included, replaces
	// that rule.
	Untracked map[string]*fieldpath.Set
	// NoDeleteCollection: the collection cannot be deleted in one request
	// (namespaces, as in kube-apiserver); discovery leaves the verb out and
	// the request is refused with 405 (B.6).
	NoDeleteCollection bool
	// StoredAs is the kind kube-apiserver stores the resource as when it is
	// not the resource's own; discovery's storageVersionHash is its hash
	// (B.6).
	StoredAs schema.GroupVersionKind
	// Convertor converts an unstructured kind's objects between the
	// versions of its kind: into StoredAs's version before they are
	// stored, into the resource's own when they are read, and for the
	// managed fields of other versions (a custom resource's, with kube's
	// converter of its definition, I.2). nil: only apiVersion changes.
	// A typed kind served in several versions of one group (autoscaling's
	// HorizontalPodAutoscalers) has one too: the scheme holds no
	// conversions between k8s.io/api's versions, so the kind's package
	// gives them, for typed objects and for the unstructured ones the
	// managed fields convert.
	Convertor runtime.ObjectConvertor
	// OpenAPIV2 is the OpenAPI v2 document of an unstructured kind's
	// version (a custom resource's, as kube builds it), merged into
	// /openapi/v2 (B.7). nil: none.
	OpenAPIV2 *spec.Swagger
	// ReturnDeleted: a delete that removes the object at once answers with
	// the object, not a success Status, as kube-apiserver does for pods,
	// namespaces, services and service accounts (D.7).
	ReturnDeleted bool
	// GC is the dependents policy a delete that names none follows
	// (G.8): background unless the kind's is orphan or unsupported.
	GC GCPolicy
	// Undeletable refuses the deletion of a system object by name (403
	// with its error); nil: any may go.
	Undeletable func(name string) error
	// ValidateName validates metadata.name.
	ValidateName apivalidation.ValidateNameFunc
	// Fields returns the selectable fields besides metadata.name and
	// metadata.namespace; nil for none.
	Fields func(obj runtime.Object, set fields.Set)
	// Defaults fills the defaults kube-apiserver gives a decoded object,
	// on a create or an update; the writer owns them in managedFields.
	Defaults func(obj runtime.Object)
	// Restore puts back, in an object of a typed kind read from the store,
	// what its stored encoding cannot keep and kube's conversion writes
	// into every answer (the apiVersion and kind of a StatefulSet's claim
	// templates); nil: nothing.
	Restore func(obj runtime.Object)
	// PrepareCreate sets, on a create, what the server takes from the
	// requester (a CSR's spec.username, H.1), where Prepare runs; nil:
	// nothing.
	PrepareCreate func(obj runtime.Object, user authn.User)
	// PrepareSubresource sets, after Prepare, what the server sets on an
	// update of the status or approval subresource, with the server's
	// clock; nil: nothing.
	PrepareSubresource func(sub string, obj, old runtime.Object, now time.Time)
	// Prepare sets what the server itself sets after that, on a create or
	// an update (old nil on create); no writer owns it.
	Prepare func(obj, old runtime.Object)
	// Validate checks the kind-specific parts of an object, and on an
	// update (old not nil) what may not change.
	Validate func(obj, old runtime.Object) field.ErrorList
	// ValidateUpdate checks what an update of the object itself (not of a
	// subresource) may change; nil when Validate covers it.
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// ValidateStatus checks an update of the status subresource in place
	// of Validate; nil: Validate checks it too.
	ValidateStatus func(obj, old runtime.Object) field.ErrorList
	// ValidateApproval checks an update of the approval subresource in
	// place of Validate.
	ValidateApproval func(obj, old runtime.Object) field.ErrorList
	// storedList: the kind encodes its ObjectMeta as protobuf field 1, so
	// a protobuf LIST can go out from the stored encodings (set by New).
	storedList bool
	// Warnings returns kube's warnings about a valid object, on a create
	// (old nil) or an update of the object itself; nil for none.
	Warnings func(obj, old runtime.Object) []string
	// ResetStatus copies the status of old into obj on a main-resource
	// update (nil on create: clear it).
	ResetStatus func(obj, old runtime.Object)
	// StatusTakesMetadata: an update of the status subresource takes the
	// body's finalizers and owner references too, and Prepare does not run
	// on it, as kube's CRD status strategy keeps only the spec of the stored
	// object (the CRD finalizer removes its finalizer with a status update).
	StatusTakesMetadata bool
	// BeginDelete, when set, serves a delete by name of an object not yet
	// being deleted: it marks obj, a copy of the stored object, for
	// deletion at now (its deletion timestamp, finalizers, conditions),
	// which is stored as it is, with neither a grace period nor a new
	// generation, as kube's CRD storage does. A deletecollection, and a
	// delete of an object being deleted, follow the generic rules (G.8).
	BeginDelete func(obj runtime.Object, now time.Time)
	// DeletePreconditions, when set, checks the preconditions of a delete
	// by name against the stored object in place of the generic check,
	// with the errors of a kind whose storage checks them itself (CRDs);
	// nil: the generic check.
	DeletePreconditions func(p *metav1.Preconditions, obj runtime.Object) error
	// ResetApproval copies into obj (a copy of the stored object) what
	// an update of the approval subresource may change, from the body.
	ResetApproval func(obj, from runtime.Object)
	// Parts are the subresources, besides status and approval, whose
	// update writes one part of the object (a pod's ephemeralcontainers
	// and resize, D.9), by name; each is served by PartSubresource. nil:
	// none.
	Parts map[string]Part
	// Generation: metadata.generation counts the changes of .spec (from 1
	// on create, and once more when a graceful deletion starts); kinds
	// without it have no generation at all (D.1).
	Generation bool
	// GenerationCountsAnnotations: the generation also counts changed
	// annotations (Deployments, as kube's deployment strategy).
	GenerationCountsAnnotations bool
	// GenerationChanged, when set, decides whether an update moves the
	// generation in place of a changed .spec.
	GenerationChanged func(obj, old runtime.Object) bool
	// RequireResourceVersion: an update must name the resourceVersion it
	// replaces, as for the kinds whose kube strategy refuses unconditional
	// updates; one without is kube's 422 (I.2).
	RequireResourceVersion bool
	// Deprecation is the warning kube-apiserver gives on every request
	// for a deprecated resource; empty for none.
	Deprecation string
	// Equivalents answers which resources are this one in other
	// versions, with their kinds, for the dynamic admission plugins'
	// matchPolicy Equivalent: a custom resource's are its definition's
	// versions, as in the request scope kube-apiserver gives custom
	// resources. nil: the server's registry of its own resources.
	Equivalents runtime.EquivalentResourceMapper
	// Storage names what an unstructured kind's objects are served by (a
	// CRD's UID, spec and accepted names): SetResources putting a
	// resource of the same GVR and Storage in place of another keeps the
	// watches opened on it; every other replacement or removal ends
	// them, as kube-apiserver ends the watches of the storage it tears
	// down. "": the watches end whenever the resource is replaced.
	Storage string
	// ended is closed when SetResources removes or replaces the resource
	// for another Storage; nil for Config.Resources.
	ended chan struct{}
	// Allocate reserves what a written object holds besides its key (a
	// Service's cluster IP and node ports) within the write's allocation,
	// old nil on create, after Prepare and before validation; the writer
	// keeps the reservations once the write is done and gives them back
	// if Allocate or the write fails. nil: nothing to reserve.
	Allocate func(a ServiceAllocation, obj, old runtime.Object) error
	// Release gives back what a deleted object held; nil: nothing.
	Release func(a ServiceAllocation, obj runtime.Object)
	// TypeConverter types the kind for managedFields and apply when
	// client-go's applyconfigurations do not know it; nil: theirs, or
	// for an unstructured kind one deduced from each object.
	TypeConverter managedfields.TypeConverter
	// Table renders rows; nil gives kube's default NAME and CREATED AT (B.5).
	Table *TableDef
	// CheckDecoded checks a decoded body as kube-apiserver's conversion to
	// the kind's internal form does as it decodes (a CRD's JSON fields
	// sent in protobuf); an error is the decode's 400. nil: nothing.
	CheckDecoded func(obj runtime.Object) error
	// Authorize checks, on a create (old nil) or an update of the object
	// itself that its validation accepted, what else the writer must be
	// allowed to do for the object to be written (a policy's parameters,
	// D.12); its errors are the write's 422, as kube's strategies that
	// authorize in Validate answer. nil: nothing.
	Authorize func(w *Writer, obj, old runtime.Object) field.ErrorList
	// Initial returns the objects every cluster has from the start (the
	// system priority classes), which New creates, once the system
	// namespaces exist, where they are missing; nil: none.
	Initial func() []runtime.Object
	// prefix is the store key prefix of the whole resource.
	prefix string
}

func (r *Resource) gvk() schema.GroupVersionKind { return r.GVR.GroupVersion().WithKind(r.Kind) }

// resetFields returns the fields a write of sub resets, which Untracked
// describes; nil: none.
func (r *Resource) resetFields(sub string) *fieldpath.Set {
	if set, ok := r.Untracked[sub]; ok {
		return set
	}
	if _, ok := r.Subresources["status"]; !ok {
		return nil
	}
	switch {
	case sub == "" || sub == r.SpecSubresource:
		return fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	case sub == "status":
		return fieldpath.NewSet(fieldpath.MakePathOrDie("spec"))
	}
	return nil
}

// groupResource is the "pods" or "roles.rbac.authorization.k8s.io" used in
// error messages.
func (r *Resource) groupResource() schema.GroupResource { return r.GVR.GroupResource() }

var coreGV = schema.GroupVersion{Version: "v1"}

// newScheme returns a scheme with every type the server reads or writes.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, eventsv1.AddToScheme, coordinationv1.AddToScheme, rbacv1.AddToScheme,
		authenticationv1.AddToScheme, authorizationv1.AddToScheme, apidiscoveryv2.AddToScheme, metav1.AddMetaToScheme,
		policyv1.AddToScheme, policyv1beta1.AddToScheme, // Eviction
		schedulingv1.AddToScheme, batchv1.AddToScheme, autoscalingv1.AddToScheme, discoveryv1.AddToScheme, // autoscaling: Scale
		certificatesv1.AddToScheme,
		admissionregistrationv1.AddToScheme,
		apiextensionsv1.AddToScheme,
		autoscalingv2.AddToScheme, nodev1.AddToScheme,
		storagev1.AddToScheme,
		resourcev1.AddToScheme,
		networkingv1.AddToScheme,
		flowcontrolv1.AddToScheme, storagemigrationv1.AddToScheme, apiregistrationv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	metav1.AddToGroupVersion(s, coreGV)
	// Clients send DeleteOptions as meta.k8s.io/v1 too.
	s.AddKnownTypes(metav1.SchemeGroupVersion, &metav1.DeleteOptions{})
	return s, nil
}

// registry finds resources by group, version and plural name. A registry
// is never changed once the server serves it: the server swaps it whole
// for another (Server.SetResources), and a request resolves its resource
// once, from the registry it loaded first.
type registry struct {
	byGVR map[schema.GroupVersionResource]*Resource
	// all holds the resources in the order they were added.
	all []*Resource
	// groups lists the API groups (without core) in discovery order.
	groups []string
	// owners holds the resources SetResources installed, by owner.
	owners map[string][]*Resource
}

func newRegistry(rs []*Resource) *registry {
	reg := &registry{byGVR: map[schema.GroupVersionResource]*Resource{}}
	for _, r := range rs {
		reg.add(r)
	}
	return reg
}

func (reg *registry) add(r *Resource) {
	// A resource carried into the next registry by with is being served:
	// its prefix is set once, before it is first published.
	if r.prefix == "" {
		r.prefix = Key(r.GVR, "", "")
	}
	reg.byGVR[r.GVR] = r
	reg.all = append(reg.all, r)
	if g := r.GVR.Group; g != "" {
		reg.addGroup(g)
	}
}

func (reg *registry) addGroup(g string) {
	for _, have := range reg.groups {
		if have == g {
			return
		}
	}
	reg.groups = append(reg.groups, g)
	sortGroups(reg.groups)
}

// ServedResource returns the resource the server serves as gvr now.
func (s *Server) ServedResource(gvr schema.GroupVersionResource) (*Resource, bool) {
	return s.registry().get(gvr)
}

// OwnerOf returns the owner SetResources installed the resource gvr
// for; ok is false when gvr is not served or is one of Config.Resources.
func (s *Server) OwnerOf(gvr schema.GroupVersionResource) (owner string, ok bool) {
	reg := s.registry()
	r, served := reg.get(gvr)
	if !served {
		return "", false
	}
	for o, rs := range reg.owners {
		if slices.Contains(rs, r) {
			return o, true
		}
	}
	return "", false
}

func (reg *registry) get(gvr schema.GroupVersionResource) (*Resource, bool) {
	r, ok := reg.byGVR[gvr]
	return r, ok
}

// with returns a copy of reg in which owner's resources are rs, replacing
// those it had; nil rs removes them. A resource of another owner, or one
// New was given, with the group and resource of one of rs, in any
// version, is an error: objects are stored by group and resource
// whatever their version (Key), so two owners of one group and resource
// would read and write each other's objects, past each other's
// validation and admission (a CustomResourceDefinition named for a
// built-in resource in a version kubegate does not serve, I.2).
func (reg *registry) with(owner string, rs []*Resource) (*registry, error) {
	mine := make(map[*Resource]bool, len(reg.owners[owner]))
	for _, r := range reg.owners[owner] {
		mine[r] = true
	}
	next := &registry{byGVR: make(map[schema.GroupVersionResource]*Resource, len(reg.byGVR)+len(rs)),
		owners: make(map[string][]*Resource, len(reg.owners)+1)}
	for _, r := range reg.all {
		if !mine[r] {
			next.add(r)
		}
	}
	for o, have := range reg.owners {
		if o != owner {
			next.owners[o] = have
		}
	}
	for _, r := range rs {
		if r == nil || r.GVR.Resource == "" || r.Kind == "" {
			return nil, fmt.Errorf("resources of %s: a resource without a name or a kind", owner)
		}
		for _, have := range next.all {
			if have.GVR.GroupResource() == r.GVR.GroupResource() && !slices.Contains(rs, have) {
				return nil, fmt.Errorf("resources of %s: %s is served already", owner, have.GVR)
			}
		}
		next.add(r)
	}
	if len(rs) > 0 {
		next.owners[owner] = rs
	}
	return next, nil
}

// ValidatePathSegmentName accepts any name that can be one segment of a
// URL path, as RBAC object names are: not "." or "..", without "/" or "%";
// a prefix (generateName) may be "." or "..".
func ValidatePathSegmentName(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}
