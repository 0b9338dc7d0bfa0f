package apiserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubegate/kubegate/authn"
)

// resource describes one stored resource: its names, scope, verbs and the
// hooks that give it kind-specific behaviour.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	singular   string
	namespaced bool
	shortNames []string
	categories []string
	// subresources this resource serves besides the object itself.
	status  bool // RESOURCE/status: get, update, patch of .status only
	binding bool // pods/binding
	scale   bool // RESOURCE/scale: get, update, patch of spec.replicas as an autoscaling/v1 Scale
	// approval: RESOURCE/approval, get, update and patch of what
	// resetApproval copies (certificate signing requests, H.1).
	approval bool
	// untracked lists, per subresource ("" for the object itself), the
	// fields an update there leaves as they were and so no writer owns in
	// managedFields, as kube-apiserver's reset fields (H.1); nil: none
	// beyond what the server resets before it tracks the fields.
	untracked map[string]*fieldpath.Set
	// noDeleteCollection: the collection cannot be deleted in one request
	// (namespaces, as in kube-apiserver); discovery leaves the verb out and
	// the request is refused with 405 (B.6).
	noDeleteCollection bool
	// storedAs is the kind kube-apiserver stores the resource as when it is
	// not the resource's own; discovery's storageVersionHash is its hash
	// (B.6).
	storedAs schema.GroupVersionKind
	// returnDeleted: a delete that removes the object at once answers with
	// the object, not a success Status, as kube-apiserver does for pods,
	// namespaces, services and service accounts (D.7).
	returnDeleted bool
	// gc is the dependents policy a delete that names none follows
	// (G.8): background unless the kind's is orphan or unsupported.
	gc gcPolicy
	// undeletable refuses the deletion of a system object by name (403
	// with its error); nil: any may go.
	undeletable func(name string) error
	// nameFn validates metadata.name.
	nameFn apivalidation.ValidateNameFunc
	// fields returns the selectable fields besides metadata.name and
	// metadata.namespace; nil for none.
	fields func(obj runtime.Object, set fields.Set)
	// defaults fills the defaults kube-apiserver gives a decoded object,
	// on a create or an update; the writer owns them in managedFields.
	defaults func(obj runtime.Object)
	// prepareCreate sets, on a create, what the server takes from the
	// requester (a CSR's spec.username, H.1), where prepare runs; nil:
	// nothing.
	prepareCreate func(obj runtime.Object, user authn.User)
	// prepareSubresource sets, after prepare, what the server sets on an
	// update of the status or approval subresource, with the server's
	// clock; nil: nothing.
	prepareSubresource func(sub string, obj, old runtime.Object, now time.Time)
	// prepare sets what the server itself sets after that, on a create or
	// an update (old nil on create); no writer owns it.
	prepare func(obj, old runtime.Object)
	// validate checks the kind-specific parts of an object, and on an
	// update (old not nil) what may not change.
	validate func(obj, old runtime.Object) field.ErrorList
	// validateUpdate checks what an update of the object itself (not of a
	// subresource) may change; nil when validate covers it.
	validateUpdate func(obj, old runtime.Object) field.ErrorList
	// validateStatus checks an update of the status subresource in place
	// of validate; nil: validate checks it too.
	validateStatus func(obj, old runtime.Object) field.ErrorList
	// validateApproval checks an update of the approval subresource in
	// place of validate.
	validateApproval func(obj, old runtime.Object) field.ErrorList
	// storedList: the kind encodes its ObjectMeta as protobuf field 1, so
	// a protobuf LIST can go out from the stored encodings (set by New).
	storedList bool
	// warnings returns kube's warnings about a valid object, on a create
	// (old nil) or an update of the object itself; nil for none.
	warnings func(obj, old runtime.Object) []string
	// resetStatus copies the status of old into obj on a main-resource
	// update (nil on create: clear it).
	resetStatus func(obj, old runtime.Object)
	// resetApproval copies into obj (a copy of the stored object) what
	// an update of the approval subresource may change, from the body.
	resetApproval func(obj, from runtime.Object)
	// generation: metadata.generation counts the changes of .spec (from 1
	// on create, and once more when a graceful deletion starts); kinds
	// without it have no generation at all (D.1).
	generation bool
	// generationCountsAnnotations: the generation also counts changed
	// annotations (Deployments, as kube's deployment strategy).
	generationCountsAnnotations bool
	// generationChanged, when set, decides whether an update moves the
	// generation in place of a changed .spec.
	generationChanged func(obj, old runtime.Object) bool
	// deprecation is the warning kube-apiserver gives on every request
	// for a deprecated resource; empty for none.
	deprecation string
	// allocate reserves what a written object holds besides its key (a
	// Service's cluster IP and node ports), old nil on create; the writer
	// finishes the allocation once the write is done or has failed. nil:
	// nothing to reserve.
	allocate func(s *Server, ctx context.Context, obj, old runtime.Object, dry bool) (*allocation, error)
	// release gives back what a deleted object held; nil: nothing.
	release func(s *Server, ctx context.Context, obj runtime.Object)
	// table renders rows; nil gives kube's default NAME and CREATED AT (B.5).
	table *tableDef
	// prefix is the store key prefix of the whole resource.
	prefix string
}

func (r *resource) gvk() schema.GroupVersionKind { return r.gvr.GroupVersion().WithKind(r.kind) }

// groupResource is the "pods" or "roles.rbac.authorization.k8s.io" used in
// error messages.
func (r *resource) groupResource() schema.GroupResource { return r.gvr.GroupResource() }

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

// builtinResources returns the stored resources the server serves.
func builtinResources() []*resource {
	subdomain := apivalidation.NameIsDNSSubdomain
	label := apivalidation.NameIsDNSLabel
	segment := validatePathSegmentName
	coord := coordinationv1.SchemeGroupVersion
	rbac := rbacv1.SchemeGroupVersion
	rs := []*resource{
		{gvr: coreGV.WithResource("namespaces"), kind: "Namespace", singular: "namespace", shortNames: []string{"ns"}, returnDeleted: true, noDeleteCollection: true, undeletable: systemNamespace,
			status: true, nameFn: label, defaults: defaultNamespace, validate: validateNamespace, prepare: prepareNamespace, resetStatus: resetNamespaceStatus, table: namespaceTable},
		{gvr: coreGV.WithResource("nodes"), kind: "Node", singular: "node", shortNames: []string{"no"},
			status: true, nameFn: subdomain, defaults: defaultNode, validate: validateNode, resetStatus: resetNodeStatus, fields: nodeFields, table: nodeTable},
		{gvr: coreGV.WithResource("pods"), kind: "Pod", singular: "pod", namespaced: true, shortNames: []string{"po"},
			categories: []string{"all"}, status: true, binding: true, returnDeleted: true, nameFn: subdomain, generation: true,
			fields: podFields, defaults: defaultPod, prepare: preparePod, validate: validatePod, validateUpdate: validatePodUpdate, resetStatus: resetPodStatus, table: podTable},
		{gvr: coreGV.WithResource("serviceaccounts"), kind: "ServiceAccount", singular: "serviceaccount", namespaced: true,
			shortNames: []string{"sa"}, returnDeleted: true, nameFn: subdomain, table: serviceAccountTable},
		{gvr: coreGV.WithResource("secrets"), kind: "Secret", singular: "secret", namespaced: true, nameFn: subdomain,
			fields: secretFields, defaults: defaultSecret, validate: validateSecret, table: secretTable},
		{gvr: coreGV.WithResource("configmaps"), kind: "ConfigMap", singular: "configmap", namespaced: true,
			shortNames: []string{"cm"}, nameFn: subdomain, validate: validateConfigMap, table: configMapTable},
		{gvr: coreGV.WithResource("events"), kind: "Event", singular: "event", namespaced: true, gc: gcUnsupported,
			shortNames: []string{"ev"}, nameFn: subdomain, fields: coreEventFields, validate: validateCoreEvent, table: coreEventTable},
		// With no controller acting on them: the scheduler's default
		// topology spreading reads pods' owners and services.
		{gvr: servicesGVR, kind: "Service", singular: "service", namespaced: true,
			shortNames: []string{"svc"}, categories: []string{"all"}, status: true, returnDeleted: true, nameFn: label, defaults: defaultService, validate: validateService,
			resetStatus: resetServiceStatus, allocate: (*Server).allocateService, release: (*Server).releaseService, table: serviceTable},
		// Stored with their defaults and validated (D.5); no controller
		// acts on them yet.
		{gvr: coreGV.WithResource("replicationcontrollers"), kind: "ReplicationController", singular: "replicationcontroller",
			namespaced: true, shortNames: []string{"rc"}, categories: []string{"all"}, status: true, nameFn: subdomain, generation: true, gc: gcOrphan,
			fields: replicationControllerFields, defaults: defaultReplicationController, validate: validateReplicationController, warnings: replicationControllerWarnings,
			validateStatus: validateReplicationControllerStatus, resetStatus: resetReplicationControllerStatus, table: replicationControllerTable},
		{gvr: appsv1.SchemeGroupVersion.WithResource("replicasets"), kind: "ReplicaSet", singular: "replicaset",
			namespaced: true, shortNames: []string{"rs"}, categories: []string{"all"}, status: true, nameFn: subdomain, generation: true,
			fields: replicaSetFields, defaults: defaultReplicaSet, validate: validateReplicaSet, validateUpdate: validateReplicaSetUpdate, warnings: replicaSetWarnings,
			validateStatus: validateReplicaSetStatus, resetStatus: resetReplicaSetStatus, table: replicaSetTable},
		{gvr: appsv1.SchemeGroupVersion.WithResource("statefulsets"), kind: "StatefulSet", singular: "statefulset",
			namespaced: true, shortNames: []string{"sts"}, categories: []string{"all"}, status: true, nameFn: label, generation: true,
			defaults: defaultStatefulSet, validate: validateStatefulSet, validateUpdate: validateStatefulSetUpdate, warnings: statefulSetWarnings,
			validateStatus: validateStatefulSetStatus, resetStatus: resetStatefulSetStatus, table: statefulSetTable},
		// kube-apiserver stores both kinds of events as core v1 Events.
		{gvr: eventsv1.SchemeGroupVersion.WithResource("events"), kind: "Event", singular: "event", namespaced: true, gc: gcUnsupported,
			shortNames: []string{"ev"}, nameFn: subdomain, storedAs: coreGV.WithKind("Event"), validate: validateEventsV1Event, table: eventsTable},
		{gvr: coord.WithResource("leases"), kind: "Lease", singular: "lease", namespaced: true, nameFn: subdomain, validate: validateLease, table: leaseTable},
		{gvr: rbac.WithResource("roles"), kind: "Role", singular: "role", namespaced: true, nameFn: segment, validate: validateRole},
		{gvr: rbac.WithResource("clusterroles"), kind: "ClusterRole", singular: "clusterrole", nameFn: segment, validate: validateClusterRole},
		{gvr: rbac.WithResource("rolebindings"), kind: "RoleBinding", singular: "rolebinding", namespaced: true, nameFn: segment,
			prepare: prepareBinding, validate: validateRoleBinding, table: roleBindingTable},
		{gvr: rbac.WithResource("clusterrolebindings"), kind: "ClusterRoleBinding", singular: "clusterrolebinding", nameFn: segment,
			prepare: prepareBinding, validate: validateClusterRoleBinding, table: clusterRoleBindingTable},
	}
	rs = append(rs, priorityClassResource(), limitRangeResource(), deploymentResource(), daemonSetResource(), controllerRevisionResource(), jobResource(), cronJobResource(), podDisruptionBudgetResource(),
		endpointsResource(), endpointSliceResource(), certificateSigningRequestResource())
	for _, r := range rs {
		r.prefix = Key(r.gvr, "", "")
		r.scale = scalable(r.gvr)
	}
	return rs
}

// registry finds resources by group, version and plural name.
type registry struct {
	byGVR map[schema.GroupVersionResource]*resource
	// groups lists the API groups (without core) in discovery order.
	groups []string
}

func newRegistry(rs []*resource) *registry {
	reg := &registry{byGVR: map[schema.GroupVersionResource]*resource{}}
	for _, r := range rs {
		reg.byGVR[r.gvr] = r
		if g := r.gvr.Group; g != "" {
			reg.addGroup(g)
		}
	}
	return reg
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

func (reg *registry) get(gvr schema.GroupVersionResource) (*resource, bool) {
	r, ok := reg.byGVR[gvr]
	return r, ok
}

// validatePathSegmentName accepts any name that can be one segment of a URL
// path, as RBAC object names are: not "." or "..", without "/" or "%".
func validatePathSegmentName(name string, prefix bool) []string {
	if !prefix && (name == "." || name == "..") {
		return []string{fmt.Sprintf("may not be '%s'", name)}
	}
	var errs []string
	for _, bad := range []string{"/", "%"} {
		if strings.Contains(name, bad) {
			errs = append(errs, fmt.Sprintf("may not contain '%s'", bad))
		}
	}
	return errs
}
