package bootstrap_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/authz/bootstrap"
	"github.com/kubegate/kubegate/authz/rbac"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cluster is the apiserver's authorizer chain over the bootstrap policy.
type cluster struct {
	mem   *rbac.Memory
	rbac  *rbac.Authorizer
	az    authz.Authorizer
	guard *rbac.Guard
}

func newCluster() *cluster {
	mem := rbac.NewMemory(bootstrap.Policy())
	r := rbac.New(mem)
	az := authz.Union(authz.PrivilegedGroups(authz.SystemMasters), r)
	return &cluster{mem: mem, rbac: r, az: az, guard: rbac.NewGuard(r, az)}
}

// can answers as the apiserver would for u sending method path.
func (c *cluster) can(t *testing.T, u authn.User, method, path string) (bool, string) {
	t.Helper()
	ri, err := authz.NewRequestInfo(httptest.NewRequest(method, path, nil))
	if err != nil {
		t.Fatalf("NewRequestInfo(%s %s): %v", method, path, err)
	}
	a := ri.Attributes(u)
	d, reason, err := c.az.Authorize(context.Background(), a)
	if err != nil {
		t.Fatalf("Authorize(%s %s): %v", method, path, err)
	}
	if d == authz.Allow {
		return true, ""
	}
	return false, authz.Forbidden(a, reason).ErrStatus.Message
}

var (
	anonymous = authn.User{Name: authn.Anonymous, Groups: []string{authn.AllUnauthenticated}}
	fresh     = authn.User{Name: "jane", Groups: []string{authn.AllAuthenticated}}
	admin     = authn.User{Name: "kubernetes-admin", Groups: []string{bootstrap.KubeadmClusterAdmins, authn.AllAuthenticated}}
	master    = authn.User{Name: "kubernetes-super-admin", Groups: []string{authz.SystemMasters, authn.AllAuthenticated}}
	scheduler = authn.User{Name: bootstrap.SchedulerUser, Groups: []string{authn.AllAuthenticated}}
	ctrlMgr   = authn.User{Name: bootstrap.ControllerManagerUser, Groups: []string{authn.AllAuthenticated}}
)

type step struct {
	method, path string
	want         bool
}

func TestBootstrapPolicy(t *testing.T) {
	t.Parallel()
	c := newCluster()
	tests := []struct {
		name  string
		user  authn.User
		steps []step
	}{
		{"C.4 system:masters is cluster-admin", master, []step{
			{"DELETE", "/api/v1/nodes/n1", true},
			{"POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", true},
			{"GET", "/metrics", true},
			{"GET", "/anything/at/all", true},
		}},
		{"C.4 kubeadm:cluster-admins is cluster-admin", admin, []step{
			{"DELETE", "/api/v1/namespaces/kube-system/secrets/s", true},
			{"PATCH", "/apis/apps/v1/namespaces/default/deployments/d/scale", true},
			{"GET", "/debug/pprof/", true},
		}},
		{"C.4 system:basic-user lets any authenticated user ask about itself", fresh, []step{
			{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", true},
			{"POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", true},
			{"POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", true},
			{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", false},
		}},
		{"C.4 system:discovery for authenticated users", fresh, []step{
			{"GET", "/api", true},
			{"GET", "/api/v1", true},
			{"GET", "/apis", true},
			{"GET", "/apis/apps/v1", true},
			{"GET", "/openapi/v3", true},
			{"GET", "/openapi/v3/apis/apps/v1", true},
			{"GET", "/version", true},
			{"GET", "/healthz", true},
			{"GET", "/metrics", false},
			{"POST", "/api", false},
		}},
		{"C.4 anonymous gets only system:public-info-viewer", anonymous, []step{
			{"GET", "/version", true},
			{"GET", "/version/", true},
			{"GET", "/healthz", true},
			{"GET", "/livez", true},
			{"GET", "/readyz", true},
			{"GET", "/api", false},
			{"GET", "/apis", false},
			{"GET", "/openapi/v3", false},
			{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", false},
			{"GET", "/api/v1/namespaces/default/pods", false},
		}},
		{"C.4 fresh user can read nothing", fresh, []step{
			{"GET", "/api/v1/namespaces/default/pods", false},
			{"POST", "/api/v1/namespaces/default/pods", false},
			{"GET", "/api/v1/nodes", false},
		}},
		{"C.3 scheduler rules", scheduler, []step{
			{"POST", "/api/v1/namespaces/default/pods/app/binding", true},
			{"POST", "/api/v1/namespaces/default/bindings", true},
			{"PATCH", "/api/v1/namespaces/default/pods/app/status", true},
			{"PUT", "/api/v1/namespaces/default/pods/app/status", true},
			{"POST", "/api/v1/namespaces/default/events", true},
			{"PATCH", "/api/v1/namespaces/default/events/e", true},
			{"POST", "/apis/events.k8s.io/v1/namespaces/default/events", true},
			{"PATCH", "/apis/events.k8s.io/v1/namespaces/default/events/e", true},
			{"GET", "/api/v1/nodes", true},
			{"GET", "/api/v1/nodes?watch=true", true},
			{"GET", "/api/v1/nodes/n1", true},
			{"GET", "/api/v1/pods?fieldSelector=status.phase!%3DSucceeded", true},
			{"GET", "/api/v1/namespaces/default/pods/app", true},
			{"DELETE", "/api/v1/namespaces/default/pods/app", true},
			{"POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", true},
			{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", true},
			{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", true},
			{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases?fieldSelector=metadata.name%3Dkube-scheduler&watch=1", true},
			// The cluster role names the scheduler's own lease; the
			// leader-locking Role grants every lease in kube-system, as
			// kube's policy does.
			{"PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/kube-controller-manager", false},
			{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager", true},
			{"GET", "/api/v1/persistentvolumes", true},
			{"PATCH", "/api/v1/persistentvolumes/pv1", true},
			{"POST", "/apis/authentication.k8s.io/v1/tokenreviews", true},
			{"POST", "/api/v1/namespaces/default/pods", false},
			{"PUT", "/api/v1/namespaces/default/pods/app", false},
			{"DELETE", "/api/v1/nodes/n1", false},
			{"GET", "/api/v1/namespaces/default/secrets/s", false},
		}},
		{"C.4 controller manager basics", ctrlMgr, []step{
			{"GET", "/apis/apps/v1/deployments?watch=true", true},
			{"POST", "/api/v1/namespaces/default/serviceaccounts/default/token", true},
			{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager", true},
			{"DELETE", "/api/v1/namespaces/default/pods/p", false},
		}},
		{"C.4 system:node binding has no subjects", authn.User{Name: "system:node:n1", Groups: []string{"system:nodes", authn.AllAuthenticated}}, []step{
			{"PATCH", "/api/v1/nodes/n1/status", false},
		}},
		{"C.4 kube-proxy", authn.User{Name: bootstrap.KubeProxyUser, Groups: []string{authn.AllAuthenticated}}, []step{
			{"GET", "/apis/discovery.k8s.io/v1/endpointslices?watch=1", true},
			{"POST", "/api/v1/namespaces/default/pods", false},
		}},
		{"C.4 kube-dns service account", authn.User{Name: "system:serviceaccount:kube-system:kube-dns", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", authn.AllAuthenticated}}, []step{
			{"GET", "/api/v1/services", true},
			{"GET", "/.well-known/openid-configuration", true},
		}},
		{"C.4 system:monitoring group", authn.User{Name: "prom", Groups: []string{"system:monitoring", authn.AllAuthenticated}}, []step{
			{"GET", "/metrics", true},
			{"GET", "/healthz/etcd", true},
			{"GET", "/readyz/ping", true},
			{"GET", "/debug/pprof/", false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, s := range tt.steps {
				if got, msg := c.can(t, tt.user, s.method, s.path); got != s.want {
					t.Errorf("%s %s %s: allowed = %v, want %v (%s)", tt.user.Name, s.method, s.path, got, s.want, msg)
				}
			}
		})
	}
}

func TestSystemMastersWithoutRBACObjects(t *testing.T) {
	t.Parallel()
	c := newCluster()
	c.mem.Replace(rbac.Objects{})
	if ok, msg := c.can(t, master, "DELETE", "/api/v1/nodes/n1"); !ok {
		t.Errorf("C.2 system:masters with RBAC deleted: forbidden (%s), want allowed", msg)
	}
	if ok, _ := c.can(t, admin, "DELETE", "/api/v1/nodes/n1"); ok {
		t.Error("kubeadm:cluster-admins with RBAC deleted: allowed, want forbidden")
	}
}

// TestCanIFlow follows kubectl auth can-i: yes for the admin, no for a
// fresh user, yes after a RoleBinding to edit, with the escalation check
// on the way.
func TestCanIFlow(t *testing.T) {
	t.Parallel()
	c := newCluster()
	ctx := context.Background()
	const createPods = "/api/v1/namespaces/default/pods"

	if ok, _ := c.can(t, admin, "POST", createPods); !ok {
		t.Fatal("C.3 admin: can-i create pods = no, want yes")
	}
	ok, msg := c.can(t, fresh, "POST", createPods)
	if ok {
		t.Fatal("C.3 fresh user: can-i create pods = yes, want no")
	}
	if want := `pods is forbidden: User "jane" cannot create resource "pods" in API group "" in the namespace "default"`; msg != want {
		t.Errorf("C.5 403 message\n got %s\nwant %s", msg, want)
	}

	// The admin creates the RoleBinding: authorized, and not escalation.
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "jane-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "jane"}},
	}
	if ok, msg := c.can(t, admin, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"); !ok {
		t.Fatalf("admin create rolebindings: %s", msg)
	}
	if err := c.guard.CanBind(ctx, admin, binding.RoleRef, "default"); err != nil {
		t.Fatalf("admin binding edit: %v", err)
	}
	c.mem.SetRoleBinding(binding)

	for _, s := range []step{
		{"POST", createPods, true},
		{"POST", "/api/v1/namespaces/default/serviceaccounts/default/token", true},
		{"GET", "/api/v1/namespaces/default/secrets/s", true},
		{"POST", "/api/v1/namespaces/other/pods", false},
		{"POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", false},
		{"GET", "/api/v1/namespaces/default/resourcequotas", true},
		{"POST", "/api/v1/namespaces/default/resourcequotas", false},
	} {
		if got, msg := c.can(t, fresh, s.method, s.path); got != s.want {
			t.Errorf("C.3 after RoleBinding to edit: jane %s %s allowed = %v, want %v (%s)", s.method, s.path, got, s.want, msg)
		}
	}
}

func TestEscalationWithBootstrapRoles(t *testing.T) {
	t.Parallel()
	c := newCluster()
	ctx := context.Background()
	lead := authn.User{Name: "lead", Groups: []string{authn.AllAuthenticated}}
	c.mem.SetRoleBinding(&rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "lead-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "lead"}},
	})
	ref := func(name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	}
	if ok, msg := c.can(t, lead, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings"); !ok {
		t.Fatalf("namespace admin may create rolebindings in its namespace: %s", msg)
	}
	for _, tc := range []struct {
		name    string
		err     error
		wantErr bool
	}{
		{"C.4 admin may bind edit in its namespace", c.guard.CanBind(ctx, lead, ref("edit"), "team"), false},
		{"C.4 admin may bind view in its namespace", c.guard.CanBind(ctx, lead, ref("view"), "team"), false},
		{"C.4 admin may bind admin in its namespace", c.guard.CanBind(ctx, lead, ref("admin"), "team"), false},
		{"C.4 admin may not bind cluster-admin", c.guard.CanBind(ctx, lead, ref("cluster-admin"), "team"), true},
		{"C.4 admin may not bind edit in another namespace", c.guard.CanBind(ctx, lead, ref("edit"), "other"), true},
		{"C.4 admin may not bind edit cluster-wide", c.guard.CanBind(ctx, lead, ref("edit"), ""), true},
		{"C.4 admin may write a role within its rights", c.guard.ConfirmRoleWrite(ctx, lead, "team", "r",
			[]rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods", "secrets"}}}, false), false},
		{"C.4 admin may not write a role granting everything", c.guard.ConfirmRoleWrite(ctx, lead, "team", "r",
			[]rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}, false), true},
		{"C.4 admin may not write a role granting node access", c.guard.ConfirmRoleWrite(ctx, lead, "team", "r",
			[]rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}}}, false), true},
		{"C.4 kubeadm admin may bind cluster-admin", c.guard.CanBind(ctx, admin, ref("cluster-admin"), ""), false},
	} {
		if (tc.err != nil) != tc.wantErr {
			t.Errorf("%s: error = %v, want error %v", tc.name, tc.err, tc.wantErr)
		}
	}
}

func TestAggregatedRoles(t *testing.T) {
	t.Parallel()
	mem := rbac.NewMemory(bootstrap.Policy())
	rules := func(name string) []rbacv1.PolicyRule {
		r, err := mem.GetClusterRole(name)
		if err != nil {
			t.Fatal(err)
		}
		return r.Rules
	}
	has := func(rules []rbacv1.PolicyRule, verb, group, resource string) bool {
		a := authz.Attributes{Verb: verb, APIGroup: group, Resource: resource, ResourceRequest: true, Namespace: "ns"}
		for i := range rules {
			if rbac.RuleAllows(&a, &rules[i]) {
				return true
			}
		}
		return false
	}
	tests := []struct {
		role, verb, group, resource string
		want                        bool
	}{
		{"view", "get", "", "pods", true},
		{"view", "list", "apps", "deployments", true},
		{"view", "get", "", "secrets", false},
		{"view", "create", "", "pods", false},
		{"edit", "create", "", "pods", true},
		{"edit", "get", "", "secrets", true},
		{"edit", "list", "", "pods", true},
		{"edit", "create", "rbac.authorization.k8s.io", "rolebindings", false},
		{"admin", "create", "rbac.authorization.k8s.io", "rolebindings", true},
		{"admin", "create", "", "pods", true},
		{"admin", "get", "", "configmaps", true},
		{"admin", "get", "", "nodes", false},
	}
	for _, tt := range tests {
		if got := has(rules(tt.role), tt.verb, tt.group, tt.resource); got != tt.want {
			t.Errorf("C.4 %s allows %s %s/%s = %v, want %v", tt.role, tt.verb, tt.group, tt.resource, got, tt.want)
		}
	}
}

func TestPolicyObjects(t *testing.T) {
	t.Parallel()
	p := bootstrap.Policy()
	roles := map[string]*rbacv1.ClusterRole{}
	for _, r := range p.ClusterRoles {
		if roles[r.Name] != nil {
			t.Errorf("cluster role %s twice", r.Name)
		}
		roles[r.Name] = r
		if r.Kind != "ClusterRole" || r.APIVersion != "rbac.authorization.k8s.io/v1" {
			t.Errorf("%s: type %s %s", r.Name, r.APIVersion, r.Kind)
		}
		if r.Labels[bootstrap.BootstrappingLabel] != bootstrap.BootstrappingValue || r.Annotations[bootstrap.AutoupdateAnnotation] != "true" {
			t.Errorf("%s: labels %v annotations %v, want the bootstrapping label and autoupdate", r.Name, r.Labels, r.Annotations)
		}
	}
	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery",
		"system:public-info-viewer", "system:kube-scheduler", "system:kube-controller-manager", "system:node"} {
		if roles[name] == nil {
			t.Errorf("C.4 cluster role %s missing", name)
		}
	}
	for _, name := range []string{"admin", "edit", "view"} {
		if roles[name].AggregationRule == nil || roles[name].Rules != nil {
			t.Errorf("C.4 %s: want an aggregationRule and no rules of its own", name)
		}
	}
	if roles["edit"].Labels[bootstrap.AggregateToAdminLabel] != "true" || roles["view"].Labels[bootstrap.AggregateToEditLabel] != "true" {
		t.Error("C.4 edit must aggregate to admin and view to edit")
	}

	subjects := map[string][]string{}
	for _, b := range p.ClusterRoleBindings {
		if roles[b.RoleRef.Name] == nil || b.RoleRef.Kind != "ClusterRole" || b.RoleRef.APIGroup != rbacv1.GroupName {
			t.Errorf("binding %s references %+v, not a default cluster role", b.Name, b.RoleRef)
		}
		for _, s := range b.Subjects {
			subjects[b.Name] = append(subjects[b.Name], s.Kind+":"+s.Name)
		}
		if _, ok := subjects[b.Name]; !ok {
			subjects[b.Name] = nil
		}
	}
	want := map[string][]string{
		"cluster-admin":             {"Group:system:masters"},
		"kubeadm:cluster-admins":    {"Group:kubeadm:cluster-admins"},
		"system:basic-user":         {"Group:system:authenticated"},
		"system:discovery":          {"Group:system:authenticated"},
		"system:public-info-viewer": {"Group:system:authenticated", "Group:system:unauthenticated"},
		"system:kube-scheduler":     {"User:system:kube-scheduler"},
		"system:volume-scheduler":   {"User:system:kube-scheduler"},
		"system:node":               nil,
	}
	for name, w := range want {
		got, ok := subjects[name]
		if !ok || !slices.Equal(got, w) {
			t.Errorf("C.4 binding %s subjects = %v (present %v), want %v", name, got, ok, w)
		}
	}

	// Fresh objects every call.
	p.ClusterRoles[0].Rules[0].Verbs[0] = "mutated"
	if again := bootstrap.ClusterRoles(); again[0].Rules[0].Verbs[0] == "mutated" {
		t.Error("ClusterRoles() shares state between calls")
	}
	sched := roles["system:kube-scheduler"]
	sched.Rules[4].Verbs[0] = "mutated"
	for _, r := range bootstrap.ClusterRoles() {
		for _, rule := range r.Rules {
			if slices.Contains(rule.Verbs, "mutated") {
				t.Fatalf("%s shares a verb slice with an earlier call", r.Name)
			}
		}
	}
}

// controllerSA is the user a controller's service-account token
// authenticates as.
func controllerSA(name string) authn.User {
	return authn.User{Name: "system:serviceaccount:kube-system:" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", authn.AllAuthenticated}}
}

func TestControllerRolesAreBoundToTheirServiceAccounts_C4(t *testing.T) {
	t.Parallel()
	p := bootstrap.Policy()
	var roles []string
	for _, r := range p.ClusterRoles {
		if strings.HasPrefix(r.Name, bootstrap.ControllerRolePrefix) {
			roles = append(roles, strings.TrimPrefix(r.Name, bootstrap.ControllerRolePrefix))
		}
	}
	// The roles kube-apiserver 1.37 creates with its default feature gates.
	want := []string{"attachdetach-controller", "certificate-controller", "clusterrole-aggregation-controller",
		"cronjob-controller", "daemon-set-controller", "deployment-controller", "device-taint-eviction-controller",
		"disruption-controller", "endpoint-controller", "endpointslice-controller", "endpointslicemirroring-controller",
		"ephemeral-volume-controller", "expand-controller", "generic-garbage-collector", "horizontal-pod-autoscaler",
		"job-controller", "kube-apiserver-serving-clustertrustbundle-publisher", "legacy-service-account-token-cleaner",
		"namespace-controller", "node-controller", "persistent-volume-binder", "pod-garbage-collector",
		"podcertificaterequestcleaner", "pv-protection-controller", "pvc-protection-controller", "replicaset-controller",
		"replication-controller", "resource-claim-controller", "resourcequota-controller", "root-ca-cert-publisher",
		"route-controller", "selinux-warning-controller", "service-account-controller", "service-cidrs-controller",
		"service-controller", "statefulset-controller", "storage-version-migrator-controller",
		"ttl-after-finished-controller", "ttl-controller", "validatingadmissionpolicy-status-controller",
		"volumeattributesclass-protection-controller"}
	if !slices.Equal(roles, want) {
		t.Errorf("controller roles = %v\nwant %v", roles, want)
	}
	bound := map[string]bool{}
	for _, b := range p.ClusterRoleBindings {
		sa, ok := strings.CutPrefix(b.Name, bootstrap.ControllerRolePrefix)
		if !ok {
			continue
		}
		if b.RoleRef.Name != b.Name || len(b.Subjects) != 1 ||
			b.Subjects[0] != (rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: "kube-system"}) {
			t.Errorf("binding %s: roleRef %+v subjects %+v, want its own role bound to kube-system/%s", b.Name, b.RoleRef, b.Subjects, sa)
		}
		if b.Labels[bootstrap.BootstrappingLabel] != bootstrap.BootstrappingValue || b.Annotations[bootstrap.AutoupdateAnnotation] != "true" {
			t.Errorf("binding %s: labels %v annotations %v", b.Name, b.Labels, b.Annotations)
		}
		bound[sa] = true
	}
	for _, sa := range want {
		if !bound[sa] {
			t.Errorf("no binding for kube-system/%s", sa)
		}
	}
}

func TestControllerServiceAccountsMayDoTheirWorkOnly_C4(t *testing.T) {
	t.Parallel()
	c := newCluster()
	tests := []struct {
		sa    string
		steps []step
	}{
		{"replicaset-controller", []step{
			{"POST", "/api/v1/namespaces/default/pods", true},
			{"DELETE", "/api/v1/namespaces/default/pods/p", true},
			{"PUT", "/apis/apps/v1/namespaces/default/replicasets/r/status", true},
			{"POST", "/apis/events.k8s.io/v1/namespaces/default/events", true},
			{"GET", "/api/v1/namespaces/default/secrets/s", false},
			{"POST", "/apis/apps/v1/namespaces/default/deployments", false},
			{"PUT", "/api/v1/namespaces/default/pods/p/status", false},
		}},
		{"deployment-controller", []step{
			{"POST", "/apis/apps/v1/namespaces/default/replicasets", true},
			{"PUT", "/apis/apps/v1/namespaces/default/deployments/d/status", true},
			{"POST", "/api/v1/namespaces/default/pods", false},
		}},
		{"replication-controller", []step{
			{"POST", "/api/v1/namespaces/default/pods", true},
			{"PUT", "/api/v1/namespaces/default/replicationcontrollers/r/status", true},
			{"PUT", "/apis/apps/v1/namespaces/default/replicasets/r/status", false},
		}},
		{"daemon-set-controller", []step{
			{"POST", "/api/v1/namespaces/default/pods/p/binding", true},
			{"POST", "/apis/apps/v1/namespaces/default/controllerrevisions", true},
			{"PATCH", "/api/v1/nodes/n1", false},
		}},
		{"statefulset-controller", []step{
			{"POST", "/api/v1/namespaces/default/persistentvolumeclaims", true},
			{"PUT", "/api/v1/namespaces/default/pods/p", true},
		}},
		{"node-controller", []step{
			{"PATCH", "/api/v1/nodes/n1/status", true},
			{"DELETE", "/api/v1/namespaces/default/pods/p", true},
			{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", true},
			{"POST", "/api/v1/namespaces/default/pods", false},
		}},
		{"generic-garbage-collector", []step{
			{"DELETE", "/apis/example.com/v1/namespaces/default/widgets/w", true},
			{"POST", "/api/v1/namespaces/default/pods", false},
		}},
		{"namespace-controller", []step{
			{"PUT", "/api/v1/namespaces/ns/finalize", true},
			{"DELETE", "/api/v1/namespaces/ns/configmaps", true},
			{"PATCH", "/api/v1/namespaces/ns/configmaps/c", false},
		}},
		{"service-account-controller", []step{
			{"POST", "/api/v1/namespaces/ns/serviceaccounts", true},
			{"DELETE", "/api/v1/namespaces/ns/serviceaccounts/default", false},
		}},
		{"ttl-after-finished-controller", []step{
			{"DELETE", "/apis/batch/v1/namespaces/default/jobs/j", true},
			{"DELETE", "/api/v1/namespaces/default/pods/p", false},
		}},
	}
	for _, tt := range tests {
		for _, s := range tt.steps {
			if got, why := c.can(t, controllerSA(tt.sa), s.method, s.path); got != s.want {
				t.Errorf("%s: %s %s allowed = %v, want %v (%s)", tt.sa, s.method, s.path, got, s.want, why)
			}
		}
	}
	// A service account of the same name elsewhere gets nothing.
	other := authn.User{Name: "system:serviceaccount:default:replicaset-controller",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", authn.AllAuthenticated}}
	if got, _ := c.can(t, other, "POST", "/api/v1/namespaces/default/pods"); got {
		t.Error("default/replicaset-controller may create pods; only kube-system's is bound")
	}
}

// view reads events and edit writes them in both event groups, "" and
// events.k8s.io, from a rule of their own, as kube-apiserver 1.37's
// system:aggregate-to-view and system:aggregate-to-edit give them
// (docs/kubernetes-behaviour.md C.4, G.18).
func TestViewAndEditCoverBothEventGroups_G18(t *testing.T) {
	t.Parallel()
	c := newCluster()
	for _, role := range []string{"view", "edit"} {
		c.mem.SetRoleBinding(&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "jane-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "jane-" + role}},
		})
	}
	viewer := authn.User{Name: "jane-view", Groups: []string{authn.AllAuthenticated}}
	editor := authn.User{Name: "jane-edit", Groups: []string{authn.AllAuthenticated}}
	for _, tc := range []struct {
		user         authn.User
		method, path string
		want         bool
	}{
		{viewer, "GET", "/api/v1/namespaces/default/events", true},
		{viewer, "GET", "/apis/events.k8s.io/v1/namespaces/default/events", true},
		{viewer, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", false},
		{editor, "POST", "/api/v1/namespaces/default/events", true},
		{editor, "DELETE", "/apis/events.k8s.io/v1/namespaces/default/events/e", true},
	} {
		if got, msg := c.can(t, tc.user, tc.method, tc.path); got != tc.want {
			t.Errorf("%s %s %s: allowed = %v, want %v (%s)", tc.user.Name, tc.method, tc.path, got, tc.want, msg)
		}
	}
	for _, r := range bootstrap.ClusterRoles() {
		if r.Name != "system:aggregate-to-view" && r.Name != "system:aggregate-to-edit" {
			continue
		}
		for _, rule := range r.Rules {
			if slices.Contains(rule.Resources, "events") && !slices.Equal(rule.APIGroups, []string{"", "events.k8s.io"}) {
				t.Errorf("%s grants events in %q alone; kube's rule covers both event groups", r.Name, rule.APIGroups)
			}
		}
	}
}
