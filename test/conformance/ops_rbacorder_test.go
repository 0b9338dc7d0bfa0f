package conformance

// rbacOrderOps write roles and bindings as users who may update them but
// not escalate or bind what they reference: kube-apiserver checks such a
// write for escalation before it validates it and compares its
// resourceVersion (docs/kubernetes-behaviour.md C.2), so an invalid write
// that escalates is a 403 and one that does not a 422.
func rbacOrderOps() []op {
	const (
		rbacAPI  = "/apis/rbac.authorization.k8s.io/v1/"
		rbs      = rbacAPI + "namespaces/" + testNS + "/rolebindings"
		group    = "rbac.authorization.k8s.io"
		updater  = "--as=order-updater" // may write roles and bindings
		binder   = "--as=order-binder"  // may also bind cluster-admin
		adminRef = "roleRef:\n  apiGroup: " + group + "\n  kind: ClusterRole\n  name: cluster-admin\n"
		subjects = "subjects:\n- kind: User\n  apiGroup: " + group + "\n  name: order-subject\n"
	)
	manifest := func(kind, name, meta, rest string) string {
		return "apiVersion: " + group + "/v1\nkind: " + kind + "\nmetadata:\n  name: " + name + "\n" + meta + rest
	}
	rb := func(name, meta, roleRef, subj string) string {
		return manifest("RoleBinding", name, meta, roleRef+subj)
	}
	crb := func(name, roleRef string) string { return manifest("ClusterRoleBinding", name, "", roleRef+subjects) }
	kubectl := func(name, stdin string, args ...string) op {
		return op{name: "rbac/order-" + name, kubectl: args, stdin: stdin}
	}
	replace := func(name, as, stdin string) op {
		return kubectl(name, stdin, "replace", "-f", "-", "-n", testNS, as)
	}
	create := func(name, as, stdin string) op { return kubectl(name, stdin, "create", "-f", "-", "-n", testNS, as) }
	apply := func(name, as, stdin string) op {
		return kubectl(name, stdin, "apply", "--server-side", "--force-conflicts", "--field-manager=order", "-f", "-", "-n", testNS, as)
	}
	patch := func(name, as, kind, object, patchType, body string) op {
		return kubectl(name, "", "patch", kind, object, "-n", testNS, "--type="+patchType, "-p", body, as)
	}
	toAdmin := `{"roleRef":{"name":"cluster-admin"}}`
	escalatingInvalidRules := "rules:\n- apiGroups: [\"\"]\n  resources: [secrets]\n  verbs: [get]\n- apiGroups: [\"\"]\n  resources: [pods]\n"
	return []op{
		{name: "rbac/order-writer-role", method: "POST", path: rbacAPI + "clusterroles", body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"order-writer"},"rules":[
{"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles","clusterroles","rolebindings","clusterrolebindings"],"verbs":["create","get","list","update","patch"]},
{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}`},
		{name: "rbac/order-base-role", method: "POST", path: rbacAPI + "clusterroles",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"order-base"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}`},
		{name: "rbac/order-bind-role", method: "POST", path: rbacAPI + "clusterroles",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"order-bind-cluster-admin"},"rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["clusterroles"],"resourceNames":["cluster-admin"],"verbs":["bind"]}]}`},
		{name: "rbac/order-gathered-role", method: "POST", path: rbacAPI + "clusterroles",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"order-gathered"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"order-gather":"yes"}}]}}`},
		{name: "rbac/order-writers-binding", method: "POST", path: rbacAPI + "clusterrolebindings",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"order-writers"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"order-writer"},
"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"order-updater"},{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"order-binder"}]}`},
		{name: "rbac/order-binders-binding", method: "POST", path: rbacAPI + "clusterrolebindings",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"order-binders"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"order-bind-cluster-admin"},
"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"order-binder"}]}`},
		{name: "rbac/order-clusterrolebinding", method: "POST", path: rbacAPI + "clusterrolebindings",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"order"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"order-base"},
"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"order-subject"}]}`},
		{name: "rbac/order-rolebinding", method: "POST", path: rbs,
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"order"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"order-base"},
"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"order-subject"}]}`},
		{name: "rbac/order-rolebinding-kept", method: "POST", path: rbs,
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"order-kept","finalizers":["example.com/keep"]},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},
"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"order-subject"}]}`},
		{name: "rbac/order-role", method: "POST", path: rbacAPI + "namespaces/" + testNS + "/roles",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"order"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}`},

		// A roleRef changed to cluster-admin: 403 for a user who may not
		// bind it, 422 (roleRef is immutable) for one who may.
		replace("rolebinding-replace-no-bind", updater, rb("order", "", adminRef, subjects)),
		replace("rolebinding-replace-bind", binder, rb("order", "", adminRef, subjects)),
		patch("rolebinding-merge-patch-no-bind", updater, "rolebinding", "order", "merge", toAdmin),
		patch("rolebinding-merge-patch-bind", binder, "rolebinding", "order", "merge", toAdmin),
		patch("rolebinding-json-patch-no-bind", updater, "rolebinding", "order", "json", `[{"op":"replace","path":"/roleRef/name","value":"cluster-admin"}]`),
		patch("rolebinding-json-patch-bind", binder, "rolebinding", "order", "json", `[{"op":"replace","path":"/roleRef/name","value":"cluster-admin"}]`),
		apply("rolebinding-apply-no-bind", updater, rb("order", "", adminRef, "")),
		apply("rolebinding-apply-bind", binder, rb("order", "", adminRef, "")),
		replace("clusterrolebinding-replace-no-bind", updater, crb("order", adminRef)),
		replace("clusterrolebinding-replace-bind", binder, crb("order", adminRef)),
		patch("clusterrolebinding-merge-patch-no-bind", updater, "clusterrolebinding", "order", "merge", toAdmin),
		patch("clusterrolebinding-merge-patch-bind", binder, "clusterrolebinding", "order", "merge", toAdmin),
		apply("clusterrolebinding-apply-no-bind", updater, crb("order", adminRef)),
		apply("clusterrolebinding-apply-bind", binder, crb("order", adminRef)),
		// The check comes before the resourceVersion is compared.
		replace("rolebinding-replace-stale-no-bind", updater, rb("order", "  resourceVersion: \"1\"\n", adminRef, subjects)),
		replace("rolebinding-replace-stale-bind", binder, rb("order", "  resourceVersion: \"1\"\n", adminRef, subjects)),

		// Creates: invalid and escalating, invalid and not.
		create("rolebinding-create-invalid-no-bind", updater, rb("order-robots", "", adminRef, "subjects:\n- kind: Robot\n  name: r2\n")),
		create("rolebinding-create-invalid-bind", binder, rb("order-robots", "", adminRef, "subjects:\n- kind: Robot\n  name: r2\n")),
		create("rolebinding-create-other-group-not-held", updater,
			rb("order-foreign", "", "roleRef:\n  apiGroup: example.com\n  kind: ClusterRole\n  name: cluster-admin\n", subjects)),
		create("rolebinding-create-other-group-held", updater,
			rb("order-foreign", "", "roleRef:\n  apiGroup: example.com\n  kind: ClusterRole\n  name: order-base\n", subjects)),
		create("rolebinding-create-unknown-kind", binder,
			rb("order-widget", "", "roleRef:\n  apiGroup: "+group+"\n  kind: Widget\n  name: order-base\n", subjects)),

		// Roles: the escalate check, also before validation.
		replace("role-replace-invalid-escalating", updater, manifest("Role", "order", "", escalatingInvalidRules)),
		create("clusterrole-create-invalid-escalating", updater, manifest("ClusterRole", "order-bad", "", escalatingInvalidRules)),
		create("clusterrole-create-empty-aggregation", updater, manifest("ClusterRole", "order-empty", "", "aggregationRule: {}\n")),
		replace("clusterrole-replace-drop-aggregation", updater, manifest("ClusterRole", "order-gathered", "", "")),

		// Only the garbage collector's fields changed: not checked.
		patch("rolebinding-label-no-bind", updater, "rolebinding", "order-kept", "merge", `{"metadata":{"labels":{"a":"b"}}}`),
		patch("rolebinding-finalizers-no-bind", updater, "rolebinding", "order-kept", "merge", `{"metadata":{"finalizers":null}}`),
		{name: "rbac/order-rolebinding-get", method: "GET", path: rbs + "/order"},
		{name: "rbac/order-clusterrolebinding-get", method: "GET", path: rbacAPI + "clusterrolebindings/order"},
	}
}
