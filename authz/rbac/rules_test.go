package rbac

import (
	"testing"

	"github.com/kubegate/kubegate/authz"
	rbacv1 "k8s.io/api/rbac/v1"
)

func res(verb, group, resource, sub, ns, name string) authz.Attributes {
	return authz.Attributes{Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name, ResourceRequest: true}
}

func nonRes(verb, path string) authz.Attributes {
	return authz.Attributes{Verb: verb, Path: path}
}

func rule(verbs, groups, resources []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func named(r rbacv1.PolicyRule, names ...string) rbacv1.PolicyRule {
	r.ResourceNames = names
	return r
}

func s(v ...string) []string { return v }

func TestRuleAllows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs authz.Attributes
		want  bool
	}{
		{"C.2 exact match", rule(s("get"), s(""), s("pods")), res("get", "", "pods", "", "ns", "p"), true},
		{"C.2 verb must match", rule(s("get"), s(""), s("pods")), res("list", "", "pods", "", "ns", ""), false},
		{"C.2 verb wildcard", rule(s("*"), s(""), s("pods")), res("deletecollection", "", "pods", "", "ns", ""), true},
		{"C.2 group must match", rule(s("get"), s("apps"), s("pods")), res("get", "", "pods", "", "ns", "p"), false},
		{"C.2 core group is empty string", rule(s("get"), s(""), s("deployments")), res("get", "apps", "deployments", "", "ns", "d"), false},
		{"C.2 group wildcard", rule(s("get"), s("*"), s("deployments")), res("get", "apps", "deployments", "", "ns", "d"), true},
		{"C.2 resource wildcard covers subresources", rule(s("get"), s(""), s("*")), res("get", "", "pods", "log", "ns", "p"), true},
		{"C.2 pods does not cover pods/binding", rule(s("create"), s(""), s("pods")), res("create", "", "pods", "binding", "ns", "p"), false},
		{"C.2 pods/binding matches exactly", rule(s("create"), s(""), s("pods/binding")), res("create", "", "pods", "binding", "ns", "p"), true},
		{"C.2 pods/binding does not cover pods", rule(s("create"), s(""), s("pods/binding")), res("create", "", "pods", "", "ns", ""), false},
		{"C.2 */status matches any status", rule(s("update"), s(""), s("*/status")), res("update", "", "nodes", "status", "", "n"), true},
		{"C.2 */status does not match the object", rule(s("update"), s(""), s("*/status")), res("update", "", "nodes", "", "", "n"), false},
		{"C.2 */status does not match another subresource", rule(s("update"), s(""), s("*/status")), res("update", "", "pods", "statusx", "ns", "p"), false},
		{"C.2 pods/* matches only a subresource named *", rule(s("get"), s(""), s("pods/*")), res("get", "", "pods", "log", "ns", "p"), false},
		{"C.2 pods/* matches literal *", rule(s("get"), s(""), s("pods/*")), res("get", "", "pods", "*", "ns", "p"), true},
		{"C.2 resource matching is case-sensitive", rule(s("get"), s(""), s("Pods")), res("get", "", "pods", "", "ns", "p"), false},
		{"C.2 resourceNames restrict get", named(rule(s("get", "list"), s(""), s("configmaps")), "a"), res("get", "", "configmaps", "", "ns", "a"), true},
		{"C.2 resourceNames refuse other names", named(rule(s("get"), s(""), s("configmaps")), "a"), res("get", "", "configmaps", "", "ns", "b"), false},
		{"C.2 resourceNames restrict get but not list", named(rule(s("get", "list"), s(""), s("configmaps")), "a"), res("list", "", "configmaps", "", "ns", ""), false},
		{"C.2 resourceNames never allow create without name", named(rule(s("create"), s(""), s("configmaps")), "a"), res("create", "", "configmaps", "", "ns", ""), false},
		{"C.2 resourceNames allow list with metadata.name selector", named(rule(s("list"), s(""), s("configmaps")), "a"), res("list", "", "configmaps", "", "ns", "a"), true},
		{"C.2 resource rule never allows a path", rule(s("get"), s("*"), s("*")), nonRes("get", "/healthz"), false},
		{"C.2 path exact", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/healthz")}, nonRes("get", "/healthz"), true},
		{"C.2 path is not a prefix match", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/healthz")}, nonRes("get", "/healthz/etcd"), false},
		{"C.2 path trailing star", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/healthz/*")}, nonRes("get", "/healthz/etcd"), true},
		{"C.2 path trailing star needs the slash", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/healthz/*")}, nonRes("get", "/healthz"), false},
		{"C.2 path star alone", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("*")}, nonRes("get", "/anything"), true},
		{"C.2 path verb must match", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("*")}, nonRes("post", "/anything"), false},
		{"C.2 path case-sensitive", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/Version")}, nonRes("get", "/version"), false},
		{"C.2 path rule never allows a resource", rbacv1.PolicyRule{Verbs: s("*"), NonResourceURLs: s("*")}, res("get", "", "pods", "", "ns", "p"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := RuleAllows(&tt.attrs, &tt.rule); got != tt.want {
				t.Errorf("RuleAllows(%+v, %+v) = %v, want %v", tt.attrs, tt.rule, got, tt.want)
			}
		})
	}
}
