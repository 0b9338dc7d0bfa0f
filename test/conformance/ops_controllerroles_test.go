package conformance

import "strings"

// controllerRoleNames are the service accounts of kube-controller-manager's
// controllers that kube-apiserver gives a system:controller: role and
// binding with its default feature gates.
var controllerRoleNames = []string{"attachdetach-controller", "certificate-controller",
	"clusterrole-aggregation-controller", "cronjob-controller", "daemon-set-controller", "deployment-controller",
	"device-taint-eviction-controller", "disruption-controller", "endpoint-controller", "endpointslice-controller",
	"endpointslicemirroring-controller", "ephemeral-volume-controller", "expand-controller",
	"generic-garbage-collector", "horizontal-pod-autoscaler", "job-controller",
	"kube-apiserver-serving-clustertrustbundle-publisher", "legacy-service-account-token-cleaner",
	"namespace-controller", "node-controller", "persistent-volume-binder", "pod-garbage-collector",
	"podcertificaterequestcleaner", "pv-protection-controller", "pvc-protection-controller",
	"replicaset-controller", "replication-controller", "resource-claim-controller", "resourcequota-controller",
	"root-ca-cert-publisher", "route-controller", "selinux-warning-controller", "service-account-controller",
	"service-cidrs-controller", "service-controller", "statefulset-controller",
	"storage-version-migrator-controller", "ttl-after-finished-controller", "ttl-controller",
	"validatingadmissionpolicy-status-controller", "volumeattributesclass-protection-controller"}

// controllerRoleOps read the controllers' default roles and bindings
// (docs/kubernetes-behaviour.md C.4) and the controller manager's own.
func controllerRoleOps() []op {
	const rbacAPI = "/apis/rbac.authorization.k8s.io/v1/"
	ops := []op{
		{name: "rbac/controller-roles-list", method: "GET", path: rbacAPI + "clusterroles", project: controllerItemNames},
		{name: "rbac/controller-bindings-list", method: "GET", path: rbacAPI + "clusterrolebindings", project: controllerItemNames},
		{name: "rbac/clusterrole-get-kube-controller-manager", method: "GET", path: rbacAPI + "clusterroles/system:kube-controller-manager"},
		{name: "rbac/clusterrolebinding-get-kube-controller-manager", method: "GET", path: rbacAPI + "clusterrolebindings/system:kube-controller-manager"},
	}
	for _, sa := range controllerRoleNames {
		ops = append(ops,
			op{name: "rbac/controller-role-get-" + sa, method: "GET", path: rbacAPI + "clusterroles/system:controller:" + sa},
			op{name: "rbac/controller-binding-get-" + sa, method: "GET", path: rbacAPI + "clusterrolebindings/system:controller:" + sa})
	}
	return ops
}

// controllerItemNames keeps the names of a list's system:controller: items,
// in the list's order.
func controllerItemNames(doc any) any {
	m, _ := doc.(map[string]any)
	items, _ := m["items"].([]any)
	var names []any
	for _, it := range items {
		name, _ := dig(it, "metadata", "name").(string)
		if strings.HasPrefix(name, "system:controller:") {
			names = append(names, name)
		}
	}
	return names
}
