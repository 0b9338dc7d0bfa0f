package bootstrap

import rbacv1 "k8s.io/api/rbac/v1"

// API groups the default roles name.
const (
	core           = ""
	apps           = "apps"
	autoscaling    = "autoscaling"
	batch          = "batch"
	extensions     = "extensions"
	policy         = "policy"
	networking     = "networking.k8s.io"
	discovery      = "discovery.k8s.io"
	coordination   = "coordination.k8s.io"
	storage        = "storage.k8s.io"
	resourceGroup  = "resource.k8s.io"
	events         = "events.k8s.io"
	authentication = "authentication.k8s.io"
	authorization  = "authorization.k8s.io"
	certificates   = "certificates.k8s.io"
	nodeGroup      = "node.k8s.io"
)

// Verb sets.
var (
	read  = []string{"get", "list", "watch"}
	write = []string{"create", "delete", "deletecollection", "patch", "update"}
	all   = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
)

// ClusterRoles returns the default cluster roles, the controllers' roles
// last. admin, edit and view have aggregationRules and no rules of their
// own; rbac.Aggregate (or rbac.Memory) fills them in from the
// system:aggregate-to-* roles.
func ClusterRoles() []*rbacv1.ClusterRole {
	roles := []*rbacv1.ClusterRole{
		clusterRole(ClusterAdmin, nil,
			verbs("*").groups("*").resources("*").rule(),
			verbs("*").urls("*"),
		),
		clusterRole("system:discovery", nil,
			verbs("get").urls("/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
				"/openapi", "/openapi/*", "/readyz", "/version", "/version/"),
		),
		clusterRole("system:basic-user", nil,
			verbs("create").groups(authorization).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews").rule(),
			verbs("create").groups(authentication).resources("selfsubjectreviews").rule(),
		),
		clusterRole("system:public-info-viewer", nil,
			verbs("get").urls("/healthz", "/livez", "/readyz", "/version", "/version/"),
		),
		clusterRole("system:service-account-issuer-discovery", nil,
			verbs("get").urls("/.well-known/openid-configuration", "/.well-known/openid-configuration/",
				"/openid/v1/jwks", "/openid/v1/jwks/"),
		),
		clusterRole("system:monitoring", nil,
			verbs("get").urls("/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"),
			verbs("get").urls("/flagz"),
			verbs("get").urls("/statusz"),
		),
		clusterRole("system:auth-delegator", nil,
			verbs("create").groups(authentication).resources("tokenreviews").rule(),
			verbs("create").groups(authorization).resources("subjectaccessreviews").rule(),
		),

		aggregated("admin", AggregateToAdminLabel, nil),
		aggregated("edit", AggregateToEditLabel, map[string]string{AggregateToAdminLabel: "true"}),
		aggregated("view", AggregateToViewLabel, map[string]string{AggregateToEditLabel: "true"}),
		aggregateToAdmin(),
		aggregateToEdit(),
		aggregateToView(),

		scheduler(),
		clusterRole("system:volume-scheduler", nil,
			verbs("get", "list", "patch", "update", "watch").groups(core).resources("persistentvolumes").rule(),
			verbs(read...).groups(storage).resources("storageclasses").rule(),
			verbs("get", "list", "patch", "update", "watch").groups(core).resources("persistentvolumeclaims").rule(),
		),
		controllerManager(),
		node(),
		clusterRole("system:node-proxier", nil,
			verbs("list", "watch").groups(core).resources("endpoints", "services").rule(),
			verbs(read...).groups(core).resources("nodes").rule(),
			verbs("create", "patch", "update").groups(core, events).resources("events").rule(),
			verbs("list", "watch").groups(networking).resources("servicecidrs").rule(),
			verbs("list", "watch").groups(discovery).resources("endpointslices").rule(),
		),
		clusterRole("system:kube-dns", nil,
			verbs("list", "watch").groups(core).resources("endpoints", "services").rule(),
		),
		// The certificate roles (H.1). The bootstrapper creates and
		// watches its node's CSRs; the nodeclient and selfnodeclient
		// roles let the CSR approver auto-approve a node's client
		// certificate at bootstrap and at renewal; an approver role lets
		// its holder approve requests for one signer. kube-apiserver binds
		// none of them: kubeadm and the cluster operator do.
		clusterRole("system:node-bootstrapper", nil,
			verbs("create", "get", "list", "watch").groups(certificates).resources("certificatesigningrequests").rule(),
		),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient", nil,
			verbs("create").groups(certificates).resources("certificatesigningrequests/nodeclient").rule(),
		),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", nil,
			verbs("create").groups(certificates).resources("certificatesigningrequests/selfnodeclient").rule(),
		),
		signerApprover("legacy-unknown"),
		signerApprover("kubelet-serving"),
		signerApprover("kube-apiserver-client"),
		signerApprover("kube-apiserver-client-kubelet"),
	}
	return append(roles, controllerRoles()...)
}

// signerApprover is system:certificates.k8s.io:SIGNER-approver: approve
// on the signer kubernetes.io/SIGNER.
func signerApprover(signer string) *rbacv1.ClusterRole {
	return clusterRole("system:certificates.k8s.io:"+signer+"-approver", nil,
		verbs("approve").groups(certificates).resources("signers").names("kubernetes.io/"+signer).rule(),
	)
}

func aggregateToAdmin() *rbacv1.ClusterRole {
	return clusterRole("system:aggregate-to-admin", map[string]string{AggregateToAdminLabel: "true"},
		verbs("create").groups(authorization).resources("localsubjectaccessreviews").rule(),
		verbs(all...).groups(rbacv1.GroupName).resources("rolebindings", "roles").rule(),
	)
}

func aggregateToEdit() *rbacv1.ClusterRole {
	return clusterRole("system:aggregate-to-edit", map[string]string{AggregateToEditLabel: "true"},
		verbs(read...).groups(core).resources("pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy").rule(),
		verbs("impersonate").groups(core).resources("serviceaccounts").rule(),
		verbs(write...).groups(core).resources("pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy").rule(),
		verbs("create").groups(core).resources("pods/eviction").rule(),
		verbs(write...).groups(core).resources("configmaps", "persistentvolumeclaims", "replicationcontrollers",
			"replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy").rule(),
		verbs("create").groups(core).resources("serviceaccounts/token").rule(),
		verbs(write...).groups(core, events).resources("events").rule(),
		verbs(write...).groups(apps).resources("daemonsets", "deployments", "deployments/rollback", "deployments/scale",
			"replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale").rule(),
		verbs(write...).groups(autoscaling).resources("horizontalpodautoscalers").rule(),
		verbs(write...).groups(batch).resources("cronjobs", "jobs").rule(),
		verbs(write...).groups(extensions).resources("daemonsets", "deployments", "deployments/rollback", "deployments/scale",
			"ingresses", "networkpolicies", "replicasets", "replicasets/scale", "replicationcontrollers/scale").rule(),
		verbs(write...).groups(policy).resources("poddisruptionbudgets").rule(),
		verbs(write...).groups(networking).resources("ingresses", "networkpolicies").rule(),
		verbs(all...).groups(coordination).resources("leases").rule(),
		verbs(write...).groups(resourceGroup).resources("resourceclaims", "resourceclaimtemplates").rule(),
	)
}

func aggregateToView() *rbacv1.ClusterRole {
	return clusterRole("system:aggregate-to-view", map[string]string{AggregateToViewLabel: "true"},
		verbs(read...).groups(core).resources("configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status",
			"pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/status").rule(),
		verbs(read...).groups(core).resources("bindings", "limitranges", "namespaces/status", "pods/log", "pods/status",
			"replicationcontrollers/status", "resourcequotas", "resourcequotas/status").rule(),
		verbs(read...).groups(core).resources("namespaces").rule(),
		verbs(read...).groups(core, events).resources("events").rule(),
		verbs(read...).groups(discovery).resources("endpointslices").rule(),
		verbs(read...).groups(apps).resources("controllerrevisions", "daemonsets", "daemonsets/status", "deployments",
			"deployments/scale", "deployments/status", "replicasets", "replicasets/scale", "replicasets/status",
			"statefulsets", "statefulsets/scale", "statefulsets/status").rule(),
		verbs(read...).groups(autoscaling).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status").rule(),
		verbs(read...).groups(batch).resources("cronjobs", "cronjobs/status", "jobs", "jobs/status").rule(),
		verbs(read...).groups(extensions).resources("daemonsets", "daemonsets/status", "deployments", "deployments/scale",
			"deployments/status", "ingresses", "ingresses/status", "networkpolicies", "replicasets", "replicasets/scale",
			"replicasets/status", "replicationcontrollers/scale").rule(),
		verbs(read...).groups(policy).resources("poddisruptionbudgets", "poddisruptionbudgets/status").rule(),
		verbs(read...).groups(networking).resources("ingresses", "ingresses/status", "networkpolicies").rule(),
		verbs(read...).groups(resourceGroup).resources("resourceclaims", "resourceclaims/status", "resourceclaimtemplates").rule(),
	)
}

// scheduler is what kube-scheduler needs: watch pods and nodes, bind pods,
// write pod status and events, hold its leader lease, and read what its
// plugins consult.
func scheduler() *rbacv1.ClusterRole {
	return clusterRole("system:kube-scheduler", nil,
		verbs("create", "patch", "update").groups(core, events).resources("events").rule(),
		verbs("create").groups(coordination).resources("leases").rule(),
		verbs("get", "list", "update", "watch").groups(coordination).resources("leases").names("kube-scheduler").rule(),
		verbs(all...).groups(coordination).resources("leasecandidates").rule(),
		verbs(read...).groups(core).resources("nodes").rule(),
		verbs("delete", "get", "list", "watch").groups(core).resources("pods").rule(),
		verbs("create").groups(core).resources("bindings", "pods/binding").rule(),
		verbs("patch", "update").groups(core).resources("pods/status").rule(),
		verbs(read...).groups(core).resources("replicationcontrollers", "services").rule(),
		verbs(read...).groups(apps, extensions).resources("replicasets").rule(),
		verbs(read...).groups(apps).resources("statefulsets").rule(),
		verbs(read...).groups(policy).resources("poddisruptionbudgets").rule(),
		verbs(read...).groups(core).resources("persistentvolumeclaims", "persistentvolumes").rule(),
		verbs("create").groups(authentication).resources("tokenreviews").rule(),
		verbs("create").groups(authorization).resources("subjectaccessreviews").rule(),
		verbs(read...).groups(storage).resources("csinodes").rule(),
		verbs(read...).groups(storage).resources("volumeattachments").rule(),
		verbs(read...).groups(core).resources("namespaces").rule(),
		verbs(read...).groups(storage).resources("csidrivers").rule(),
		verbs(read...).groups(storage).resources("csistoragecapacities").rule(),
		verbs(read...).groups(resourceGroup).resources("deviceclasses").rule(),
		verbs("get", "list", "patch", "update", "watch").groups(resourceGroup).resources("resourceclaims").rule(),
		verbs("get", "list", "patch", "update", "watch").groups(resourceGroup).resources("resourceclaims/status").rule(),
		verbs("get", "list", "patch", "update", "watch").groups(core).resources("pods/finalizers").rule(),
		verbs(read...).groups(resourceGroup).resources("resourceslices").rule(),
		verbs(read...).groups(resourceGroup).resources("devicetaintrules").rule(),
	)
}

// controllerManager is the role of kube-controller-manager's own user; its
// controllers use per-controller service accounts with their own roles.
func controllerManager() *rbacv1.ClusterRole {
	return clusterRole("system:kube-controller-manager", nil,
		verbs("create", "patch", "update").groups(core, events).resources("events").rule(),
		verbs("create").groups(coordination).resources("leases").rule(),
		verbs("get", "update").groups(coordination).resources("leases").names("kube-controller-manager").rule(),
		verbs("create").groups(core).resources("secrets", "serviceaccounts").rule(),
		verbs("delete").groups(core).resources("secrets").rule(),
		verbs("get").groups(core).resources("configmaps", "namespaces", "secrets", "serviceaccounts").rule(),
		verbs("update").groups(core).resources("secrets", "serviceaccounts").rule(),
		verbs("create").groups(authentication).resources("tokenreviews").rule(),
		verbs("create").groups(authorization).resources("subjectaccessreviews").rule(),
		verbs("list", "watch").groups("*").resources("*").rule(),
		verbs("create").groups(core).resources("serviceaccounts/token").rule(),
	)
}

// node is what a kubelet needs; the Node authorizer, not this role, grants
// it in a real cluster (the system:node binding has no subjects).
func node() *rbacv1.ClusterRole {
	return clusterRole("system:node", nil,
		verbs("create").groups(authentication).resources("tokenreviews").rule(),
		verbs("create").groups(authorization).resources("localsubjectaccessreviews", "subjectaccessreviews").rule(),
		verbs(read...).groups(core).resources("services").rule(),
		verbs("create", "get", "list", "watch").groups(core).resources("nodes").rule(),
		verbs("patch", "update").groups(core).resources("nodes/status").rule(),
		verbs("patch", "update").groups(core).resources("nodes").rule(),
		verbs("create", "patch", "update").groups(core).resources("events").rule(),
		verbs(read...).groups(core).resources("pods").rule(),
		verbs("create", "delete").groups(core).resources("pods").rule(),
		verbs("patch", "update").groups(core).resources("pods/status").rule(),
		verbs("create").groups(core).resources("pods/eviction").rule(),
		verbs(read...).groups(core).resources("configmaps", "secrets").rule(),
		verbs("get").groups(core).resources("persistentvolumeclaims", "persistentvolumes").rule(),
		verbs("get").groups(core).resources("endpoints").rule(),
		verbs("create", "get", "list", "watch").groups(certificates).resources("certificatesigningrequests").rule(),
		verbs("create", "delete", "get", "patch", "update").groups(coordination).resources("leases").rule(),
		verbs("get").groups(storage).resources("volumeattachments").rule(),
		verbs("create").groups(core).resources("serviceaccounts/token").rule(),
		verbs("get", "patch", "update").groups(core).resources("persistentvolumeclaims/status").rule(),
		verbs(read...).groups(storage).resources("csidrivers").rule(),
		verbs("create", "delete", "get", "patch", "update").groups(storage).resources("csinodes").rule(),
		verbs(read...).groups(nodeGroup).resources("runtimeclasses").rule(),
		verbs("get").groups(resourceGroup).resources("resourceclaims").rule(),
		verbs("deletecollection").groups(resourceGroup).resources("resourceslices").rule(),
		verbs(read...).groups(certificates).resources("clustertrustbundles").rule(),
		verbs("get").groups(core).resources("serviceaccounts").rule(),
	)
}
