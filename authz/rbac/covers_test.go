package rbac

import (
	"fmt"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// TestCoversAsKube_C2 holds Covers to component-helpers' validation.Covers,
// kube-apiserver's rule for escalation checks: the same answer and the
// same uncovered permissions in the same order.
func TestCoversAsKube_C2(t *testing.T) {
	t.Parallel()
	p := func(rules ...rbacv1.PolicyRule) []rbacv1.PolicyRule { return rules }
	admin := p(rule(s("*"), s("*"), s("*")), urls(s("*"), "*"))
	tests := []struct {
		name           string
		owner, servant []rbacv1.PolicyRule
	}{
		{"resource names: same name", p(named(rule(s("get"), s(""), s("secrets")), "a", "b")), p(named(rule(s("get"), s(""), s("secrets")), "b"))},
		{"resource names: other name", p(named(rule(s("get"), s(""), s("secrets")), "a")), p(named(rule(s("get", "update"), s(""), s("secrets")), "a", "c"))},
		{"resource names: named owner, unnamed servant", p(named(rule(s("get"), s(""), s("secrets")), "a")), p(rule(s("get"), s(""), s("secrets")))},
		{"resource names: unnamed owner, named servant", p(rule(s("get"), s(""), s("secrets"))), p(named(rule(s("get"), s(""), s("secrets")), "a"))},
		{"paths: star suffix covers below", p(urls(s("get"), "/healthz/*")), p(urls(s("get"), "/healthz/etcd", "/healthz/*", "/healthz"))},
		{"paths: star suffix is a prefix, not a segment", p(urls(s("get"), "/api*")), p(urls(s("get"), "/apis/apps", "/api", "/ap"))},
		{"paths: star alone", p(urls(s("get", "post"), "*")), p(urls(s("get", "post", "put"), "/metrics", "/"))},
		{"paths: exact only", p(urls(s("get"), "/healthz")), p(urls(s("get"), "/healthz", "/healthz/", "/healthz*"))},
		{"paths: a named owner rule covers no path", p(named(urls(s("get"), "*"), "x")), p(urls(s("get"), "/metrics"))},
		{"paths: a resource owner covers no path", p(rule(s("*"), s("*"), s("*"))), p(urls(s("get"), "/healthz"))},
		{"wildcard verbs: owner", p(rule(s("*"), s(""), s("pods"))), p(rule(s("get", "delete", "escalate"), s(""), s("pods")))},
		{"wildcard verbs: servant", p(rule(s("get", "list", "watch", "create", "update", "patch", "delete"), s(""), s("pods"))), p(rule(s("*"), s(""), s("pods")))},
		{"wildcard groups: owner", p(rule(s("get"), s("*"), s("deployments"))), p(rule(s("get"), s("apps", "extensions", ""), s("deployments")))},
		{"wildcard groups: servant", p(rule(s("get"), s("apps", ""), s("deployments"))), p(rule(s("get"), s("*"), s("deployments")))},
		{"wildcard resources: owner", p(rule(s("get"), s(""), s("*"))), p(rule(s("get"), s(""), s("pods", "pods/log", "*/scale", "*")))},
		{"wildcard resources: servant", p(rule(s("get"), s(""), s("pods", "services"))), p(rule(s("get"), s(""), s("*")))},
		{"subresources: pods/* is literal", p(rule(s("get"), s(""), s("pods/*"))), p(rule(s("get"), s(""), s("pods/log", "pods/status", "pods/*", "pods")))},
		{"subresources: */scale owner", p(rule(s("update"), s("apps"), s("*/scale"))), p(rule(s("update"), s("apps"), s("deployments/scale", "statefulsets/scale", "*/scale", "deployments", "deployments/status")))},
		{"subresources: */scale servant", p(rule(s("update"), s("apps"), s("deployments/scale"))), p(rule(s("update"), s("apps"), s("*/scale")))},
		{"subresources: */* owner covers any subresource", p(rule(s("get"), s(""), s("*/*"))), p(rule(s("get"), s(""), s("pods/log", "pods/*", "*/*", "*/log", "pods")))},
		{"subresources: only the part after the first slash", p(rule(s("get"), s(""), s("*/b/c"))), p(rule(s("get"), s(""), s("a/b/c", "a/b", "x/b/c/d")))},
		{"resource names: * is a literal name", p(named(rule(s("get"), s(""), s("secrets")), "*")), p(named(rule(s("get"), s(""), s("secrets")), "*", "a"), rule(s("get"), s(""), s("secrets")))},
		{"paths: several trailing stars", p(urls(s("get"), "/a**")), p(urls(s("get"), "/a", "/ab", "/a*", "/"))},
		{"empty verb", p(rule(s(""), s(""), s("pods"))), p(rule(s("", "get"), s(""), s("pods")))},
		{"subresources: resource owner covers none", p(rule(s("get"), s(""), s("pods"))), p(rule(s("get"), s(""), s("pods/log", "pods/exec")))},
		{"several owner rules", p(rule(s("get"), s(""), s("pods")), rule(s("list"), s("*"), s("pods")), named(rule(s("update"), s(""), s("pods")), "a")),
			p(named(rule(s("get", "list", "update"), s(""), s("pods")), "a", "b"), rule(s("get", "list"), s("", "apps"), s("pods")))},
		{"mixed rule: resources and paths", p(rule(s("get"), s(""), s("pods"))), p(rbacv1.PolicyRule{Verbs: s("get"), APIGroups: s(""), Resources: s("pods"), NonResourceURLs: s("/x")})},
		{"groups without resources grant nothing", nil, p(rbacv1.PolicyRule{Verbs: s("get"), APIGroups: s("")})},
		{"cluster-admin covers all", admin, p(rule(s("*"), s("*"), s("*")), named(rule(s("get"), s("x"), s("y/z")), "n"), urls(s("get"), "/metrics"))},
		{"nothing owned", nil, p(named(rule(s("get", "list"), s("", "apps"), s("pods", "*/scale")), "a", "b"), urls(s("get"), "/a", "/b*"))},
		{"nothing to grant", admin, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, missing := Covers(tt.owner, tt.servant)
			want, wantMissing := validation.Covers(tt.owner, tt.servant)
			if len(wantMissing) == 0 {
				wantMissing = nil // kubegate's is nil when nothing is missing
			}
			if got != want || !reflect.DeepEqual(missing, wantMissing) {
				t.Errorf("Covers() = %v, %+v; validation.Covers() = %v, %+v", got, missing, want, wantMissing)
			}
		})
	}
}

// TestPermissionsAsBreakdownRule_C2: the permissions Covers checks one at
// a time are those of validation.BreakdownRule, in its order.
func TestPermissionsAsBreakdownRule_C2(t *testing.T) {
	t.Parallel()
	for _, r := range []rbacv1.PolicyRule{
		{},
		rule(s("get", "list"), s("", "apps"), s("pods", "deployments/scale")),
		named(rule(s("get", "update"), s(""), s("secrets", "configmaps")), "a", "b", "c"),
		urls(s("get", "post"), "/healthz", "/metrics*"),
		{Verbs: s("*"), APIGroups: s("*"), Resources: s("*"), ResourceNames: s("x"), NonResourceURLs: s("*")},
		{Verbs: s("get"), APIGroups: s("")},
	} {
		var got []rbacv1.PolicyRule
		for p := range permissions(&r) {
			got = append(got, p.rule())
		}
		want := validation.BreakdownRule(r)
		if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
			t.Errorf("permissions(%+v)\n got %+v\nwant %+v", r, got, want)
		}
	}
}

// TestCoversBoundsMissingUnlikeKube_C2: where validation.Covers lists
// every uncovered permission, Covers stops at the first 1,000 of them, in
// the same order; the answer is the same.
func TestCoversBoundsMissingUnlikeKube_C2(t *testing.T) {
	t.Parallel()
	var verbs, resources []string
	for i := range 30 {
		verbs = append(verbs, fmt.Sprintf("v%d", i))
		resources = append(resources, fmt.Sprintf("r%d", i))
	}
	owner := []rbacv1.PolicyRule{rule(s("v0"), s(""), s("*"))}
	servant := []rbacv1.PolicyRule{rule(verbs, s("", "apps"), resources)}
	ok, missing := Covers(owner, servant)
	kubeOK, kubeMissing := validation.Covers(owner, servant)
	if ok || kubeOK {
		t.Fatalf("Covers() = %v, validation.Covers() = %v; want false for both", ok, kubeOK)
	}
	if len(kubeMissing) <= maxMissing {
		t.Fatalf("validation.Covers() lists %d missing; the case needs more than %d", len(kubeMissing), maxMissing)
	}
	if !reflect.DeepEqual(missing, kubeMissing[:maxMissing]) {
		t.Errorf("Covers() lists %d missing; want the first %d of validation.Covers()'s %d", len(missing), maxMissing, len(kubeMissing))
	}
}

// fuzzAlphabets are the few values rules are made of in
// FuzzCoversAsKube_C2, wildcards and subresources included, so that
// random rules often cover each other.
var fuzzAlphabets = [5][]string{
	{"get", "list", "*", "update", ""},
	{"", "apps", "*", "batch"},
	{"pods", "pods/log", "pods/*", "*/scale", "deployments/scale", "*", "deployments", "*/*", "*/log"},
	{"a", "b", "*", ""},
	{"/healthz", "/healthz/*", "/healthz/x", "*", "/api*", "/api", "/", "/healthz*", "/healthz**"},
}

// fuzzRules reads rules from data: each field of a rule (verbs, groups,
// resources, names, paths) is a length byte, up to 3, and as many bytes
// choosing values from fuzzAlphabets, so a rule may mix resources and
// paths, repeat values, or lack any field.
func fuzzRules(data []byte, n int) (rules []rbacv1.PolicyRule, rest []byte) {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	for range n {
		if len(data) == 0 {
			break
		}
		var fields [5][]string
		for f, alphabet := range fuzzAlphabets {
			for range next() % 4 {
				fields[f] = append(fields[f], alphabet[next()%len(alphabet)])
			}
		}
		rules = append(rules, rbacv1.PolicyRule{Verbs: fields[0], APIGroups: fields[1], Resources: fields[2], ResourceNames: fields[3], NonResourceURLs: fields[4]})
	}
	return rules, data
}

// FuzzCoversAsKube_C2 holds Covers to component-helpers' validation.Covers
// on random owner and servant rules: the same answer, and the same
// uncovered permissions in the same order (the first 1,000 of them).
func FuzzCoversAsKube_C2(f *testing.F) {
	f.Add([]byte{1, 1, 0, 1, 2, 1, 6, 0, 0, 1, 2, 1, 1, 1, 0, 1, 0, 0})
	f.Add([]byte{2, 1, 2, 1, 1, 1, 3, 0, 0, 1, 2, 1, 0, 1, 0, 2, 0, 2, 3, 0, 2, 1, 0, 2, 1, 2, 1, 4, 1, 1, 1, 0, 1, 1})
	f.Add([]byte{1, 1, 0, 0, 0, 0, 1, 4, 1, 0, 0, 0, 0, 2, 0, 2})
	f.Add([]byte{1, 1, 2, 1, 2, 1, 5, 2, 0, 1, 0, 1, 1, 3, 0, 1, 0, 2, 0, 1, 1, 2, 2, 3, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		owner, data := fuzzRules(data[1:], int(data[0]%4))
		servant, _ := fuzzRules(data, 4)
		ok, missing := Covers(owner, servant)
		kubeOK, kubeMissing := validation.Covers(owner, servant)
		if len(kubeMissing) == 0 {
			kubeMissing = nil
		}
		if len(kubeMissing) > maxMissing {
			kubeMissing = kubeMissing[:maxMissing]
		}
		if ok != kubeOK || !reflect.DeepEqual(missing, kubeMissing) {
			t.Errorf("owner %+v\nservant %+v\nCovers() = %v, %+v\nvalidation.Covers() = %v, %+v", owner, servant, ok, missing, kubeOK, kubeMissing)
		}
	})
}
