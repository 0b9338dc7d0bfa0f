package rbacsource

import (
	"strings"
	"testing"
)

// Every way of writing a role or binding is checked for escalation, as
// kube-apiserver's RBAC storage checks its create and update (C.2): a
// create by server-side apply (dry run or not), a create with
// generateName, a dry-run create, and a patch that changes owner
// references together with the rules. Only a change of nothing but owner
// references and finalizers goes unchecked.
func TestEscalationCheckedOnEveryWritePath_C2(t *testing.T) {
	t.Parallel()
	rs := newOrderServer(t)
	const (
		jsonType = "application/json"
		merge    = "application/merge-patch+json"
		apply    = "application/apply-patch+yaml"
		held     = "is attempting to grant RBAC permissions not currently held"
		secrets  = `"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get","list"]}]`
		adminRef = `"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}`
		subjects = `"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"updater"}]`
		crb      = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"ssa"},` + adminRef + `,` + subjects + `}`
	)
	for _, tt := range []struct {
		name, method, path, contentType, body string
	}{
		{"apply creating a clusterrolebinding", "PATCH", rbacAPI + "clusterrolebindings/ssa?fieldManager=x", apply, crb},
		{"dry-run apply creating a clusterrolebinding", "PATCH", rbacAPI + "clusterrolebindings/ssa?fieldManager=x&dryRun=All", apply, crb},
		{"apply creating a clusterrole", "PATCH", rbacAPI + "clusterroles/ssa?fieldManager=x", apply,
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"ssa"},` + secrets + `}`},
		{"apply creating a role", "PATCH", rbacAPI + "namespaces/default/roles/ssa?fieldManager=x", apply,
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"ssa"},` + secrets + `}`},
		{"clusterrole with generateName", "POST", rbacAPI + "clusterroles", jsonType,
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"generateName":"g-"},` + secrets + `}`},
		{"dry-run clusterrolebinding", "POST", rbacAPI + "clusterrolebindings?dryRun=All", jsonType, strings.Replace(crb, `"ssa"`, `"dry"`, 1)},
		{"clusterrolebinding with the roleRef's group left out", "POST", rbacAPI + "clusterrolebindings", jsonType,
			strings.Replace(crb, `"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole"`, `"kind":"ClusterRole"`, 1)},
		{"owner references and rules in one patch", "PATCH", rbacAPI + "clusterroles/base", merge,
			`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"x","uid":"u"}]},` + secrets + `}`},
		{"finalizers and rules in one patch", "PATCH", rbacAPI + "namespaces/default/roles/base", merge,
			`{"metadata":{"finalizers":["example.com/keep"]},` + secrets + `}`},
	} {
		code, msg := rs.send(t, "updater", tt.method, tt.path, tt.contentType, tt.body)
		if code != 403 || !strings.Contains(msg, held) {
			t.Errorf("%s: got %d %q, want 403 with %q", tt.name, code, msg, held)
		}
	}
	for _, path := range []string{rbacAPI + "clusterrolebindings/ssa", rbacAPI + "clusterroles/ssa", rbacAPI + "namespaces/default/roles/ssa", rbacAPI + "clusterrolebindings/dry"} {
		if code, _ := rs.send(t, "admin", "GET", path, jsonType, ""); code != 404 {
			t.Errorf("GET %s: %d, want 404", path, code)
		}
	}
}
