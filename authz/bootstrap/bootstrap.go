// Package bootstrap is the default RBAC policy kube-apiserver creates at
// start-up, as real rbac.authorization.k8s.io/v1 objects: cluster-admin
// bound to system:masters; system:basic-user and system:discovery bound to
// every authenticated user; system:public-info-viewer bound to every user,
// anonymous included; the aggregated admin, edit and view roles; the roles
// of the scheduler, controller manager, node and kube-proxy; one role per
// controller of kube-controller-manager, bound to the controller's service
// account in kube-system; the roles in
// kube-system and kube-public for leader election, the front-proxy CA and
// bootstrap tokens; plus, as
// kubeadm init adds, the group kubeadm:cluster-admins bound to
// cluster-admin.
//
// Every call returns fresh objects the caller may modify.
package bootstrap

import (
	"slices"

	"github.com/kubegate/kubegate/authz/rbac"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations kube-apiserver puts on its default objects, and
// the labels that feed the aggregated roles.
const (
	BootstrappingLabel   = "kubernetes.io/bootstrapping"
	BootstrappingValue   = "rbac-defaults"
	AutoupdateAnnotation = "rbac.authorization.kubernetes.io/autoupdate"

	AggregateToAdminLabel = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEditLabel  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToViewLabel  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// Well-known names.
const (
	ClusterAdmin = "cluster-admin"
	// KubeadmClusterAdmins is the group (and binding) kubeadm binds to
	// cluster-admin for admin.conf, leaving system:masters as the
	// break-glass group of super-admin.conf.
	KubeadmClusterAdmins  = "kubeadm:cluster-admins"
	SchedulerUser         = "system:kube-scheduler"
	ControllerManagerUser = "system:kube-controller-manager"
	KubeProxyUser         = "system:kube-proxy"
	// GatewayUser is the identity kubegate's gateway asserts for its own
	// requests in request-header mode: service-account, pod and node
	// lookups, subject access reviews and readiness probes. kubegate's
	// API server grants it what those need.
	GatewayUser = "system:kubegate:gateway"
)

// Policy returns every default object, ready for rbac.NewMemory or for
// writing to a store.
func Policy() rbac.Objects {
	return rbac.Objects{ClusterRoles: ClusterRoles(), ClusterRoleBindings: ClusterRoleBindings(),
		Roles: Roles(), RoleBindings: RoleBindings()}
}

// ClusterRoleBindings returns the default cluster role bindings, the
// controllers' included.
func ClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	const (
		authenticated   = "system:authenticated"
		unauthenticated = "system:unauthenticated"
	)
	bindings := []*rbacv1.ClusterRoleBinding{
		binding(ClusterAdmin, group("system:masters")),
		binding("system:basic-user", group(authenticated)),
		binding("system:discovery", group(authenticated)),
		binding("system:public-info-viewer", group(authenticated), group(unauthenticated)),
		binding("system:service-account-issuer-discovery", group("system:serviceaccounts")),
		binding("system:monitoring", group("system:monitoring")),
		binding("system:kube-scheduler", user(SchedulerUser)),
		binding("system:volume-scheduler", user(SchedulerUser)),
		binding("system:kube-controller-manager", user(ControllerManagerUser)),
		binding("system:node-proxier", user(KubeProxyUser)),
		binding("system:kube-dns", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "kube-dns", Namespace: "kube-system"}),
		// Nodes are authorized by the Node authorizer; the binding exists
		// with no subjects.
		binding("system:node"),
	}
	// kubeadm's binding carries neither the bootstrapping label nor the
	// autoupdate annotation.
	kubeadm := binding(ClusterAdmin, group(KubeadmClusterAdmins))
	kubeadm.ObjectMeta = metav1.ObjectMeta{Name: KubeadmClusterAdmins}
	bindings = append(bindings, controllerRoleBindings()...)
	return append(bindings, kubeadm)
}

func binding(role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: meta(role, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: name}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
}

func meta(name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{BootstrappingLabel: BootstrappingValue}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      l,
		Annotations: map[string]string{AutoupdateAnnotation: "true"},
	}
}

func clusterRole(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: meta(name, labels),
		Rules:      rules,
	}
}

// aggregated returns a cluster role whose rules are gathered from the
// roles labelled from=true.
func aggregated(name, from string, labels map[string]string) *rbacv1.ClusterRole {
	r := clusterRole(name, labels)
	r.AggregationRule = &rbacv1.AggregationRule{
		ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{from: "true"}}},
	}
	return r
}

// ruleBuilder builds a PolicyRule in one expression.
type ruleBuilder struct{ r rbacv1.PolicyRule }

func verbs(v ...string) *ruleBuilder                      { return &ruleBuilder{rbacv1.PolicyRule{Verbs: slices.Clone(v)}} }
func (b *ruleBuilder) groups(g ...string) *ruleBuilder    { b.r.APIGroups = g; return b }
func (b *ruleBuilder) resources(r ...string) *ruleBuilder { b.r.Resources = r; return b }
func (b *ruleBuilder) names(n ...string) *ruleBuilder     { b.r.ResourceNames = n; return b }
func (b *ruleBuilder) urls(u ...string) rbacv1.PolicyRule { b.r.NonResourceURLs = u; return b.r }
func (b *ruleBuilder) rule() rbacv1.PolicyRule            { return b.r }
