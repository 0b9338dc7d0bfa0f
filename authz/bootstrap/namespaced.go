package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The namespaced part of the default policy: the roles kube-apiserver
// creates in kube-system and kube-public for the components that read the
// front-proxy CA, elect leaders, and sign and clean up bootstrap tokens.
const (
	kubeSystem = "kube-system"
	kubePublic = "kube-public"
)

// Roles returns the default namespaced roles.
func Roles() []*rbacv1.Role {
	leaseLocking := []rbacv1.PolicyRule{
		verbs("create", "get", "list", "update", "watch").groups("coordination.k8s.io").resources("leases").rule(),
		verbs("create", "get", "list", "update", "watch").groups("coordination.k8s.io").resources("leasecandidates").rule(),
	}
	events := verbs("create", "patch", "update").groups("", "events.k8s.io").resources("events").rule()
	return []*rbacv1.Role{
		role(kubePublic, "system:controller:bootstrap-signer",
			verbs("get", "list", "watch").groups("").resources("configmaps").rule(),
			verbs("update").groups("").resources("configmaps").names("cluster-info").rule(),
			events),
		role(kubeSystem, "extension-apiserver-authentication-reader",
			verbs("get", "list", "watch").groups("").resources("configmaps").names("extension-apiserver-authentication").rule()),
		role(kubeSystem, "system::leader-locking-kube-controller-manager", leaseLocking...),
		role(kubeSystem, "system::leader-locking-kube-scheduler", leaseLocking...),
		role(kubeSystem, "system:controller:bootstrap-signer",
			verbs("get", "list", "watch").groups("").resources("secrets").rule()),
		role(kubeSystem, "system:controller:cloud-provider",
			verbs("create", "get", "list", "watch").groups("").resources("configmaps").rule()),
		role(kubeSystem, "system:controller:token-cleaner",
			verbs("delete", "get", "list", "watch").groups("").resources("secrets").rule(),
			events),
	}
}

// RoleBindings returns the default namespaced role bindings.
func RoleBindings() []*rbacv1.RoleBinding {
	sa := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: kubeSystem}
	}
	return []*rbacv1.RoleBinding{
		roleBinding(kubePublic, "system:controller:bootstrap-signer", "system:controller:bootstrap-signer", sa("bootstrap-signer")),
		roleBinding(kubeSystem, "system::extension-apiserver-authentication-reader", "extension-apiserver-authentication-reader",
			user(ControllerManagerUser), user(SchedulerUser)),
		roleBinding(kubeSystem, "system::leader-locking-kube-controller-manager", "system::leader-locking-kube-controller-manager",
			user(ControllerManagerUser), sa("kube-controller-manager"), sa("leader-election-controller")),
		roleBinding(kubeSystem, "system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
			user(SchedulerUser), sa("kube-scheduler")),
		roleBinding(kubeSystem, "system:controller:bootstrap-signer", "system:controller:bootstrap-signer", sa("bootstrap-signer")),
		roleBinding(kubeSystem, "system:controller:cloud-provider", "system:controller:cloud-provider", sa("cloud-provider")),
		roleBinding(kubeSystem, "system:controller:token-cleaner", "system:controller:token-cleaner", sa("token-cleaner")),
	}
}

func role(namespace, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	m := meta(name, nil)
	m.Namespace = namespace
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: m,
		Rules:      rules,
	}
}

func roleBinding(namespace, name, role string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	m := meta(name, nil)
	m.Namespace = namespace
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: m,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   subjects,
	}
}
