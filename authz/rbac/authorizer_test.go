package rbac

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testObjects() Objects {
	aggregated := clusterRole("aggregated")
	aggregated.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"part-of": "aggregated"}}}}
	part := clusterRole("part", rule(s("get"), s(""), s("secrets")))
	part.Labels = map[string]string{"part-of": "aggregated"}
	return Objects{
		ClusterRoles: []*rbacv1.ClusterRole{
			clusterRole("pod-reader", rule(s("get", "list"), s(""), s("pods"))),
			clusterRole("node-reader", rule(s("get"), s(""), s("nodes"))),
			clusterRole("healthz", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/healthz")}),
			aggregated, part,
		},
		Roles: []*rbacv1.Role{
			role("ns1", "cm-editor", rule(s("update"), s(""), s("configmaps"))),
		},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			crb("bob-nodes", "node-reader", subject("User", "bob")),
			crb("everyone-healthz", "healthz", subject("Group", authn.AllAuthenticated)),
			crb("sa-without-namespace", "node-reader", subject("ServiceAccount", "robot")),
			crb("sa-with-namespace", "pod-reader", saSubject("ns2", "robot")),
			crb("carol-aggregated", "aggregated", subject("User", "carol")),
			crb("dave-missing", "no-such-role", subject("User", "dave")),
			crb("unknown-kind", "pod-reader", subject("Robot", "bob")),
		},
		RoleBindings: []*rbacv1.RoleBinding{
			rb("ns1", "bob-pods", "ClusterRole", "pod-reader", subject("User", "bob")),
			rb("ns1", "devs-cm", "Role", "cm-editor", subject("Group", "devs")),
			rb("ns1", "builder-pods", "ClusterRole", "pod-reader", subject("ServiceAccount", "builder")),
			rb("ns1", "dave-gone", "Role", "gone", subject("User", "dave")),
			rb("ns2", "bad-ref", "Other", "x", subject("User", "erin")),
		},
	}
}

func TestAuthorize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		user       authn.User
		attrs      authz.Attributes
		want       authz.Decision
		wantReason string
	}{
		{"C.2 cluster role binding applies at cluster scope", user("bob"), res("get", "", "nodes", "", "", "n1"), authz.Allow,
			`RBAC: allowed by ClusterRoleBinding "bob-nodes" of ClusterRole "node-reader" to User "bob"`},
		{"C.2 cluster role binding applies in a namespace", user("bob"), res("get", "", "nodes", "", "ns9", "n1"), authz.Allow, ""},
		{"C.2 role binding to cluster role applies in its namespace", user("bob"), res("list", "", "pods", "", "ns1", ""), authz.Allow,
			`RBAC: allowed by RoleBinding "bob-pods/ns1" of ClusterRole "pod-reader" to User "bob"`},
		{"C.2 role binding does not apply in another namespace", user("bob"), res("list", "", "pods", "", "ns2", ""), authz.NoOpinion, ""},
		{"C.2 cluster-scoped requests use cluster role bindings only", user("bob"), res("list", "", "pods", "", "", ""), authz.NoOpinion, ""},
		{"C.2 group subject", user("gina", "devs"), res("update", "", "configmaps", "", "ns1", "c"), authz.Allow,
			`RBAC: allowed by RoleBinding "devs-cm/ns1" of Role "cm-editor" to Group "devs"`},
		{"C.2 group subject not in group", user("gina", "ops"), res("update", "", "configmaps", "", "ns1", "c"), authz.NoOpinion, ""},
		{"C.2 user subject is not a group", user("x", "bob"), res("get", "", "nodes", "", "", "n1"), authz.NoOpinion, ""},
		{"C.2 service account defaults to the binding namespace", user("system:serviceaccount:ns1:builder"), res("get", "", "pods", "", "ns1", "p"), authz.Allow,
			`RBAC: allowed by RoleBinding "builder-pods/ns1" of ClusterRole "pod-reader" to ServiceAccount "builder/ns1"`},
		{"C.2 service account of another namespace", user("system:serviceaccount:ns2:builder"), res("get", "", "pods", "", "ns1", "p"), authz.NoOpinion, ""},
		{"C.2 service account in cluster binding without namespace never matches", user("system:serviceaccount::robot"), res("get", "", "nodes", "", "", "n"), authz.NoOpinion, ""},
		{"C.2 service account in cluster binding with namespace", user("system:serviceaccount:ns2:robot"), res("get", "", "pods", "", "ns7", "p"), authz.Allow,
			`RBAC: allowed by ClusterRoleBinding "sa-with-namespace" of ClusterRole "pod-reader" to ServiceAccount "robot/ns2"`},
		{"C.2 unknown subject kind matches nobody", user("bob"), res("list", "", "pods", "", "ns2", ""), authz.NoOpinion, ""},
		{"C.2 non-resource rule through group", user("anyone"), nonRes("get", "/healthz"), authz.Allow, ""},
		{"C.2 anonymous is not authenticated", authn.User{Name: authn.Anonymous, Groups: []string{authn.AllUnauthenticated}}, nonRes("get", "/healthz"), authz.NoOpinion, ""},
		{"C.2 aggregated cluster role gathers labelled rules", user("carol"), res("get", "", "secrets", "", "ns1", "s"), authz.Allow, ""},
		{"C.2 missing cluster role is a reason", user("dave"), res("get", "", "pods", "", "", "p"), authz.NoOpinion,
			`RBAC: clusterrole.rbac.authorization.k8s.io "no-such-role" not found`},
		{"C.2 missing roles are listed together", user("dave"), res("get", "", "pods", "", "ns1", "p"), authz.NoOpinion,
			`RBAC: [clusterrole.rbac.authorization.k8s.io "no-such-role" not found, role.rbac.authorization.k8s.io "gone" not found]`},
		{"C.2 unsupported role kind is a reason", user("erin"), res("get", "", "pods", "", "ns2", "p"), authz.NoOpinion,
			`RBAC: unsupported role reference kind: "Other"`},
		{"C.2 no deny rules, nothing bound", user("fresh"), res("get", "", "pods", "", "ns1", "p"), authz.NoOpinion, ""},
	}
	indexed := NewMemory(testObjects())
	sources := map[string]RuleSource{"indexed": indexed, "scan": scanSource{indexed}}
	for sourceName, src := range sources {
		az := New(src)
		for _, tt := range tests {
			t.Run(sourceName+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				a := tt.attrs
				a.User = tt.user
				d, reason, err := az.Authorize(context.Background(), a)
				if err != nil {
					t.Fatalf("Authorize() error = %v", err)
				}
				if d != tt.want {
					t.Errorf("Authorize(%+v) = %v (%s), want %v", a, d, reason, tt.want)
				}
				if tt.wantReason != "" && reason != tt.wantReason {
					t.Errorf("reason\n got %s\nwant %s", reason, tt.wantReason)
				}
			})
		}
	}
}

func TestRulesFor(t *testing.T) {
	t.Parallel()
	az := New(NewMemory(testObjects()))
	rules, err := az.RulesFor(user("bob"), "ns1")
	if err != nil {
		t.Fatalf("RulesFor() error = %v", err)
	}
	// Cluster role bindings in name order, then role bindings.
	if len(rules) != 3 || rules[0].Resources[0] != "nodes" || rules[1].NonResourceURLs[0] != "/healthz" || rules[2].Resources[0] != "pods" {
		t.Errorf("RulesFor(bob, ns1) = %+v, want nodes, /healthz, pods", rules)
	}
	if _, err := az.RulesFor(user("dave"), "ns1"); err == nil {
		t.Error("RulesFor(dave) error = nil, want the missing roles")
	}
}

func TestMemoryUpdates(t *testing.T) {
	t.Parallel()
	m := NewMemory(Objects{})
	az := New(m)
	get := res("get", "", "pods", "", "ns", "p")
	get.User = user("bob")
	decide := func() authz.Decision {
		d, _, _ := az.Authorize(context.Background(), get)
		return d
	}
	steps := []struct {
		name string
		do   func()
		want authz.Decision
	}{
		{"empty", func() {}, authz.NoOpinion},
		{"binding before its role", func() { m.SetRoleBinding(rb("ns", "b", "Role", "r", subject("User", "bob"))) }, authz.NoOpinion},
		{"role added", func() { m.SetRole(role("ns", "r", rule(s("get"), s(""), s("pods")))) }, authz.Allow},
		{"role replaced without the verb", func() { m.SetRole(role("ns", "r", rule(s("list"), s(""), s("pods")))) }, authz.NoOpinion},
		{"cluster role binding added", func() {
			m.SetClusterRole(clusterRole("all", rule(s("*"), s("*"), s("*"))))
			m.SetClusterRoleBinding(crb("bob-all", "all", subject("User", "bob")))
		}, authz.Allow},
		{"cluster role deleted", func() { m.DeleteClusterRole("all") }, authz.NoOpinion},
		{"cluster role back, binding deleted", func() {
			m.SetClusterRole(clusterRole("all", rule(s("*"), s("*"), s("*"))))
			m.DeleteClusterRoleBinding("bob-all")
		}, authz.NoOpinion},
		{"role restored then binding deleted", func() {
			m.SetRole(role("ns", "r", rule(s("get"), s(""), s("pods"))))
			m.DeleteRoleBinding("ns", "b")
		}, authz.NoOpinion},
		{"replace with everything at once", func() {
			m.Replace(Objects{
				Roles:        []*rbacv1.Role{role("ns", "r", rule(s("get"), s(""), s("pods")))},
				RoleBindings: []*rbacv1.RoleBinding{rb("ns", "b", "Role", "r", subject("Group", authn.AllAuthenticated))},
			})
		}, authz.Allow},
		{"role deleted", func() { m.DeleteRole("ns", "r") }, authz.NoOpinion},
	}
	for _, st := range steps {
		st.do()
		if got := decide(); got != st.want {
			t.Fatalf("after %q: decision %v, want %v", st.name, got, st.want)
		}
	}
	objs := m.Objects()
	if len(objs.ClusterRoles) != 0 || len(objs.Roles) != 0 || len(objs.RoleBindings) != 1 || len(objs.ClusterRoleBindings) != 0 {
		t.Errorf("Objects() = %+v, want just the role binding", objs)
	}
	var zero Memory
	if _, err := zero.GetClusterRole("x"); err == nil {
		t.Error("zero Memory GetClusterRole error = nil, want not found")
	}
}

// Checks run while bindings are written; run with -race.
func TestMemoryConcurrent(t *testing.T) {
	t.Parallel()
	m := NewMemory(Objects{ClusterRoles: []*rbacv1.ClusterRole{clusterRole("r", rule(s("get"), s(""), s("pods")))}})
	az := New(m)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				name := fmt.Sprintf("b-%d-%d", w, i)
				m.SetClusterRoleBinding(crb(name, "r", subject("User", name)))
				if i%3 == 0 {
					m.DeleteClusterRoleBinding(name)
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			a := res("get", "", "pods", "", "ns", "p")
			a.User = user("nobody")
			for range 500 {
				if d, _, _ := az.Authorize(context.Background(), a); d != authz.NoOpinion {
					t.Errorf("unbound user got %v", d)
					return
				}
			}
		})
	}
	wg.Wait()
	a := res("get", "", "pods", "", "ns", "p")
	a.User = user("b-1-1")
	if d, _, _ := az.Authorize(context.Background(), a); d != authz.Allow {
		t.Errorf("b-1-1 after writes: %v, want allow", d)
	}
	a.User = user("b-1-3")
	if d, _, _ := az.Authorize(context.Background(), a); d != authz.NoOpinion {
		t.Errorf("b-1-3 deleted binding: %v, want no opinion", d)
	}
}

func TestLookupMergesInNameOrder(t *testing.T) {
	t.Parallel()
	var crbs []*rbacv1.ClusterRoleBinding
	// b-00 names the user and a group: listed once.
	crbs = append(crbs, crb("b-00", "r", subject("User", "u"), subject("Group", "g1")))
	for i := 1; i < 12; i++ {
		crbs = append(crbs, crb(fmt.Sprintf("b-%02d", i), "r", subject("Group", fmt.Sprintf("g%d", i%11))))
	}
	m := NewMemory(Objects{ClusterRoleBindings: crbs})
	groups := make([]string, 0, 12)
	for i := range 11 {
		groups = append(groups, fmt.Sprintf("g%d", i))
	}
	got, err := m.ListClusterRoleBindings(authn.User{Name: "u", Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 12 {
		t.Fatalf("got %d bindings, want 12", len(got))
	}
	for i, b := range got {
		if want := fmt.Sprintf("b-%02d", i); b.Name != want {
			t.Errorf("binding %d = %s, want %s", i, b.Name, want)
		}
	}
}

func TestAggregate(t *testing.T) {
	t.Parallel()
	sel := func(k string) *rbacv1.AggregationRule {
		return &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{k: "true"}}}}
	}
	withLabels := func(r *rbacv1.ClusterRole, agg *rbacv1.AggregationRule, labels ...string) *rbacv1.ClusterRole {
		r.AggregationRule = agg
		r.Labels = map[string]string{}
		for _, l := range labels {
			r.Labels[l] = "true"
		}
		return r
	}
	getPods := rule(s("get"), s(""), s("pods"))
	listPods := rule(s("list"), s(""), s("pods"))
	roles := []*rbacv1.ClusterRole{
		withLabels(clusterRole("admin"), sel("to-admin")),
		withLabels(clusterRole("edit"), sel("to-edit"), "to-admin"),
		withLabels(clusterRole("view"), sel("to-view"), "to-edit"),
		withLabels(clusterRole("view-part-b", getPods, listPods), nil, "to-view"),
		withLabels(clusterRole("view-part-a", getPods), nil, "to-view"),
		withLabels(clusterRole("loop-a"), sel("loop"), "loop"),
		withLabels(clusterRole("loop-b", getPods), sel("loop"), "loop"),
		withLabels(clusterRole("bad-selector"), &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}}}),
		withLabels(clusterRole("hand-edited", rule(s("stale"), s(""), s("x"))), sel("to-view")),
	}
	before := roles[8].Rules[0].Verbs[0]
	out := Aggregate(roles)
	byName := map[string]*rbacv1.ClusterRole{}
	for _, r := range out {
		byName[r.Name] = r
	}
	// view gathers part-a then part-b (name order), getPods once.
	wantView := []rbacv1.PolicyRule{getPods, listPods}
	for _, name := range []string{"view", "edit", "admin"} {
		if got := byName[name].Rules; fmt.Sprint(got) != fmt.Sprint(wantView) {
			t.Errorf("C.4 %s rules = %v, want %v (transitive aggregation)", name, got, wantView)
		}
	}
	// A cycle terminates; kube's own result depends on sync order.
	if got := byName["loop-a"].Rules; len(got) > 1 {
		t.Errorf("loop-a rules = %v, want at most the rule loop-b was given", got)
	}
	if got := byName["bad-selector"].Rules; len(got) != 0 {
		t.Errorf("bad-selector rules = %v, want none", got)
	}
	// Stored rules are the role's rules, as kube's authorizer reads them.
	if got := byName["hand-edited"].Rules; len(got) != 1 || got[0].Verbs[0] != "stale" {
		t.Errorf("hand-edited rules = %v, want its stored rule", got)
	}
	if roles[8].Rules[0].Verbs[0] != before || out[3] != roles[3] || out[8] != roles[8] {
		t.Error("Aggregate modified its input or copied a role it keeps")
	}
}

func TestNotFoundError(t *testing.T) {
	t.Parallel()
	err := NotFoundError("role", "x")
	if want := `role.rbac.authorization.k8s.io "x" not found`; err.Error() != want {
		t.Errorf("NotFoundError() = %q, want %q", err, want)
	}
	if errors.Unwrap(err) != nil {
		t.Errorf("unexpected wrapped error")
	}
}

// A binding whose roleRef names another API group grants nothing, even
// when a role of that kind and name exists in rbac.authorization.k8s.io;
// one without an API group counts as rbac.authorization.k8s.io.
func TestAuthorizeFollowsOnlyRBACRoleRefs(t *testing.T) {
	t.Parallel()
	foreign := crb("foreign", "cluster-admin", subject("User", "mallory"))
	foreign.RoleRef.APIGroup = "example.com"
	foreignRB := rb("ns1", "foreign", "ClusterRole", "cluster-admin", subject("User", "mallory"))
	foreignRB.RoleRef.APIGroup = "example.com"
	defaulted := crb("defaulted", "node-reader", subject("User", "dora"))
	defaulted.RoleRef.APIGroup = ""
	az := New(NewMemory(Objects{
		ClusterRoles: []*rbacv1.ClusterRole{
			clusterRole("cluster-admin", rule(s("*"), s("*"), s("*"))),
			clusterRole("node-reader", rule(s("get"), s(""), s("nodes"))),
		},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{foreign, defaulted},
		RoleBindings:        []*rbacv1.RoleBinding{foreignRB},
	}))
	for _, ns := range []string{"", "ns1"} {
		d, reason, _ := az.Authorize(context.Background(), authz.Attributes{User: user("mallory"), Verb: "list",
			Resource: "secrets", Namespace: ns, APIVersion: "v1", ResourceRequest: true})
		if d != authz.NoOpinion {
			t.Errorf("namespace %q: mallory list secrets = %v (%s), want NoOpinion", ns, d, reason)
		}
		if want := `unsupported role reference API group: "example.com"`; !strings.Contains(reason, want) {
			t.Errorf("namespace %q: reason %q, want it to contain %q", ns, reason, want)
		}
	}
	d, reason, _ := az.Authorize(context.Background(), authz.Attributes{User: user("dora"), Verb: "get",
		Resource: "nodes", Name: "n1", APIVersion: "v1", ResourceRequest: true})
	if d != authz.Allow {
		t.Errorf("dora get nodes through a roleRef without API group = %v (%s), want Allow", d, reason)
	}
}

// An aggregated ClusterRole grants the rules stored in it, as
// kube-apiserver's authorizer reads them, once the aggregation
// controller or a person has written some: a hand edit grants what it
// says until the controller puts the gathered rules back. Only a role
// with no stored rules grants what its selectors gather, standing in for
// a controller that has not run (docs/kubernetes-behaviour.md G.18).
func TestAggregatedRoleGrantsItsStoredRules_G18(t *testing.T) {
	t.Parallel()
	agg := func(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		r := clusterRole(name, rules...)
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"to-team": "true"}}}}
		return r
	}
	part := clusterRole("team-part", rule(s("get"), s(""), s("pods")))
	part.Labels = map[string]string{"to-team": "true"}
	az := New(NewMemory(Objects{
		ClusterRoles: []*rbacv1.ClusterRole{part, agg("edited", rule(s("get"), s(""), s("secrets"))), agg("unwritten")},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			crb("edited", "edited", subject("User", "erin")), crb("unwritten", "unwritten", subject("User", "uma"))},
	}))
	for _, tc := range []struct {
		user, resource string
		want           authz.Decision
	}{
		{"erin", "secrets", authz.Allow},
		{"erin", "pods", authz.NoOpinion},
		{"uma", "pods", authz.Allow},
		{"uma", "secrets", authz.NoOpinion},
	} {
		d, reason, _ := az.Authorize(context.Background(), authz.Attributes{User: user(tc.user), Verb: "get",
			Resource: tc.resource, Namespace: "ns1", APIVersion: "v1", ResourceRequest: true})
		if d != tc.want {
			t.Errorf("%s get %s = %v (%s), want %v", tc.user, tc.resource, d, reason, tc.want)
		}
	}
}
