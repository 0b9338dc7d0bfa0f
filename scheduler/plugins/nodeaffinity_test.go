package plugins

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/kubegate/kubegate/scheduler/framework"
)

func expr(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
	return v1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func exprs(rs ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: rs}
}

func nameField(op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{expr("metadata.name", op, values...)}}
}

// affinityFilter runs NodeAffinity's PreFilter and Filter for p on n, as the
// framework does, and reports whether n passes.
func affinityFilter(t *testing.T, p *v1.Pod, n *v1.Node) bool {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState(framework.NewSnapshot([]*v1.Node{n}, nil), framework.NewPodInfo(p))
	if st := (NodeAffinity{}).PreFilter(ctx, state, p); st.IsSkip() {
		return true
	} else if !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st.Message())
	}
	st := (NodeAffinity{}).Filter(ctx, state, p, framework.NewNodeInfo(n))
	if !st.IsSuccess() && st.Message() != ReasonNodeAffinity {
		t.Fatalf("Filter rejected with %q, want %q", st.Message(), ReasonNodeAffinity)
	}
	return st.IsSuccess()
}

// E.2: the NodeAffinity filter is kube-scheduler's rule, component-helpers'
// RequiredNodeAffinity: spec.nodeSelector ANDed with the required terms,
// the terms ORed, each term's expressions and fields ANDed, and a term
// that does not parse matching no node while another term may still match.
func TestNodeAffinityFilterIsKubes_E2(t *testing.T) {
	t.Parallel()
	n := node("n1", 4000, 8*gib, "zone", "a", "disk", "ssd", "cores", "8")
	for _, tc := range []struct {
		name     string
		selector map[string]string
		terms    []v1.NodeSelectorTerm // nil: no required affinity
		want     bool
	}{
		{"nothing required", nil, nil, true},
		{"In, value listed", nil, []v1.NodeSelectorTerm{exprs(expr("zone", v1.NodeSelectorOpIn, "b", "a"))}, true},
		{"In, value not listed", nil, []v1.NodeSelectorTerm{exprs(expr("zone", v1.NodeSelectorOpIn, "c"))}, false},
		{"In, label absent", nil, []v1.NodeSelectorTerm{exprs(expr("gpu", v1.NodeSelectorOpIn, "yes"))}, false},
		{"NotIn, value not listed", nil, []v1.NodeSelectorTerm{exprs(expr("zone", v1.NodeSelectorOpNotIn, "c"))}, true},
		{"NotIn, value listed", nil, []v1.NodeSelectorTerm{exprs(expr("zone", v1.NodeSelectorOpNotIn, "a"))}, false},
		{"NotIn, label absent", nil, []v1.NodeSelectorTerm{exprs(expr("gpu", v1.NodeSelectorOpNotIn, "yes"))}, true},
		{"Exists", nil, []v1.NodeSelectorTerm{exprs(expr("disk", v1.NodeSelectorOpExists))}, true},
		{"Exists, label absent", nil, []v1.NodeSelectorTerm{exprs(expr("gpu", v1.NodeSelectorOpExists))}, false},
		{"DoesNotExist", nil, []v1.NodeSelectorTerm{exprs(expr("gpu", v1.NodeSelectorOpDoesNotExist))}, true},
		{"DoesNotExist, label present", nil, []v1.NodeSelectorTerm{exprs(expr("disk", v1.NodeSelectorOpDoesNotExist))}, false},
		{"Gt, greater", nil, []v1.NodeSelectorTerm{exprs(expr("cores", v1.NodeSelectorOpGt, "4"))}, true},
		{"Gt, equal", nil, []v1.NodeSelectorTerm{exprs(expr("cores", v1.NodeSelectorOpGt, "8"))}, false},
		{"Lt, less", nil, []v1.NodeSelectorTerm{exprs(expr("cores", v1.NodeSelectorOpLt, "16"))}, true},
		{"Lt, equal", nil, []v1.NodeSelectorTerm{exprs(expr("cores", v1.NodeSelectorOpLt, "8"))}, false},
		{"Gt, label not a number", nil, []v1.NodeSelectorTerm{exprs(expr("zone", v1.NodeSelectorOpGt, "1"))}, false},
		{"metadata.name In", nil, []v1.NodeSelectorTerm{nameField(v1.NodeSelectorOpIn, "n1")}, true},
		{"metadata.name In, other node", nil, []v1.NodeSelectorTerm{nameField(v1.NodeSelectorOpIn, "n2")}, false},
		{"metadata.name NotIn, other node", nil, []v1.NodeSelectorTerm{nameField(v1.NodeSelectorOpNotIn, "n2")}, true},
		{"metadata.name NotIn, this node", nil, []v1.NodeSelectorTerm{nameField(v1.NodeSelectorOpNotIn, "n1")}, false},
		{"expressions ANDed, all match", nil, []v1.NodeSelectorTerm{exprs(expr("zone", v1.NodeSelectorOpIn, "a"), expr("disk", v1.NodeSelectorOpIn, "ssd"))}, true},
		{"expressions ANDed, one fails", nil, []v1.NodeSelectorTerm{exprs(expr("zone", v1.NodeSelectorOpIn, "a"), expr("disk", v1.NodeSelectorOpIn, "hdd"))}, false},
		{"expressions and fields ANDed", nil, []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpIn, "a")},
			MatchFields:      []v1.NodeSelectorRequirement{expr("metadata.name", v1.NodeSelectorOpIn, "n2")}}}, false},
		{"terms ORed, second matches", nil, []v1.NodeSelectorTerm{exprs(expr("zone", v1.NodeSelectorOpIn, "c")), nameField(v1.NodeSelectorOpIn, "n1")}, true},
		{"terms ORed, none matches", nil, []v1.NodeSelectorTerm{exprs(expr("zone", v1.NodeSelectorOpIn, "c")), exprs(expr("disk", v1.NodeSelectorOpIn, "hdd"))}, false},
		{"no terms", nil, []v1.NodeSelectorTerm{}, false},
		{"empty term matches nothing", nil, []v1.NodeSelectorTerm{{}}, false},
		{"empty term ORed with a match", nil, []v1.NodeSelectorTerm{{}, exprs(expr("zone", v1.NodeSelectorOpIn, "a"))}, true},
		{"nodeSelector alone, match", map[string]string{"zone": "a", "disk": "ssd"}, nil, true},
		{"nodeSelector alone, no match", map[string]string{"zone": "b"}, nil, false},
		{"nodeSelector ANDed with terms, selector fails", map[string]string{"zone": "b"}, []v1.NodeSelectorTerm{exprs(expr("disk", v1.NodeSelectorOpIn, "ssd"))}, false},
		{"nodeSelector ANDed with terms, terms fail", map[string]string{"zone": "a"}, []v1.NodeSelectorTerm{exprs(expr("disk", v1.NodeSelectorOpIn, "hdd"))}, false},
		{"nodeSelector ANDed with terms, both match", map[string]string{"zone": "a"}, []v1.NodeSelectorTerm{exprs(expr("disk", v1.NodeSelectorOpIn, "ssd"))}, true},
		// Terms kube-apiserver would refuse; kubegate stores affinity as sent.
		{"unknown operator", nil, []v1.NodeSelectorTerm{exprs(expr("zone", "Matches", "a"))}, false},
		{"In without values", nil, []v1.NodeSelectorTerm{exprs(expr("zone", v1.NodeSelectorOpIn))}, false},
		{"Gt with two values", nil, []v1.NodeSelectorTerm{exprs(expr("cores", v1.NodeSelectorOpGt, "1", "2"))}, false},
		{"a bad expression fails its whole term", nil, []v1.NodeSelectorTerm{exprs(expr("zone", v1.NodeSelectorOpIn, "a"), expr("disk", "Matches", "ssd"))}, false},
		{"bad term ORed with a match", nil, []v1.NodeSelectorTerm{exprs(expr("zone", "Matches", "a")), exprs(expr("disk", v1.NodeSelectorOpExists))}, true},
		{"metadata.name Exists", nil, []v1.NodeSelectorTerm{nameField(v1.NodeSelectorOpExists)}, false},
		{"metadata.name In two names", nil, []v1.NodeSelectorTerm{nameField(v1.NodeSelectorOpIn, "n1", "n2")}, false},
		// A field other than metadata.name is a node field that is
		// always empty, as component-helpers reads it.
		{"other field In", nil, []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{expr("metadata.uid", v1.NodeSelectorOpIn, "x")}}}, false},
		{"other field NotIn", nil, []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{expr("metadata.uid", v1.NodeSelectorOpNotIn, "x")}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod("p", 100, 0)
			p.Spec.NodeSelector = tc.selector
			if tc.terms != nil {
				p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: tc.terms}}}
			}
			kube, _ := nodeaffinity.GetRequiredNodeAffinity(p).Match(n)
			if kube != tc.want {
				t.Fatalf("component-helpers: match = %v, want %v", kube, tc.want)
			}
			if got := affinityFilter(t, p, n); got != tc.want {
				t.Errorf("NodeAffinity filter: fits = %v, want %v", got, tc.want)
			}
		})
	}
}

// E.3: NodeAffinity's raw score is component-helpers' PreferredSchedulingTerms
// score, kube-scheduler's: the summed weights of the matching preferred
// terms, those of weight 0 or without requirements left out.
func TestNodeAffinityScoreIsKubes_E3(t *testing.T) {
	t.Parallel()
	n := node("n1", 4000, 8*gib, "zone", "a", "disk", "ssd", "cores", "8")
	pref := func(w int32, term v1.NodeSelectorTerm) v1.PreferredSchedulingTerm {
		return v1.PreferredSchedulingTerm{Weight: w, Preference: term}
	}
	for _, tc := range []struct {
		name  string
		terms []v1.PreferredSchedulingTerm
		want  int64
	}{
		{"one match", []v1.PreferredSchedulingTerm{pref(30, exprs(expr("disk", v1.NodeSelectorOpIn, "ssd")))}, 30},
		{"no match", []v1.PreferredSchedulingTerm{pref(30, exprs(expr("disk", v1.NodeSelectorOpIn, "hdd")))}, 0},
		{"matches summed", []v1.PreferredSchedulingTerm{
			pref(30, exprs(expr("disk", v1.NodeSelectorOpIn, "ssd"))),
			pref(10, nameField(v1.NodeSelectorOpIn, "n1")),
			pref(5, exprs(expr("cores", v1.NodeSelectorOpGt, "16"))),
			pref(7, exprs(expr("gpu", v1.NodeSelectorOpDoesNotExist), expr("cores", v1.NodeSelectorOpLt, "9"))),
		}, 47},
		{"weight 0 left out", []v1.PreferredSchedulingTerm{pref(0, exprs(expr("disk", v1.NodeSelectorOpIn, "ssd"))), pref(2, nameField(v1.NodeSelectorOpNotIn, "n2"))}, 2},
		{"empty preference left out", []v1.PreferredSchedulingTerm{pref(50, v1.NodeSelectorTerm{}), pref(3, exprs(expr("zone", v1.NodeSelectorOpExists)))}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube, err := nodeaffinity.NewPreferredSchedulingTerms(tc.terms)
			if err != nil {
				t.Fatalf("component-helpers: %v", err)
			}
			if got := kube.Score(n); got != tc.want {
				t.Fatalf("component-helpers: score = %d, want %d", got, tc.want)
			}
			if got := affinityScore(t, tc.terms, n); got != tc.want {
				t.Errorf("NodeAffinity: raw score = %d, want %d", got, tc.want)
			}
		})
	}
}

// affinityScore runs NodeAffinity's PreScore and Score for a pod with the
// preferred terms on n; a skipped pod scores 0.
func affinityScore(t *testing.T, terms []v1.PreferredSchedulingTerm, n *v1.Node) int64 {
	t.Helper()
	ctx := context.Background()
	p := pod("p", 100, 0)
	p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}}
	ni := framework.NewNodeInfo(n)
	state := framework.NewCycleState(framework.NewSnapshot([]*v1.Node{n}, nil), framework.NewPodInfo(p))
	if st := (NodeAffinity{}).PreScore(ctx, state, p, []*framework.NodeInfo{ni}); st.IsSkip() {
		return 0
	} else if !st.IsSuccess() {
		t.Fatalf("PreScore: %v", st.Message())
	}
	got, st := (NodeAffinity{}).Score(ctx, state, p, ni)
	if !st.IsSuccess() {
		t.Fatalf("Score: %v", st.Message())
	}
	return got
}

// E.3: a preferred term that does not parse, which kube-apiserver refuses
// but kubegate stores, is left out of the score, the other terms still
// counting; kube-scheduler would fail the scheduling attempt on it.
func TestNodeAffinityScoreSkipsBadTerms_E3(t *testing.T) {
	t.Parallel()
	n := node("n1", 4000, 8*gib, "zone", "a", "disk", "ssd")
	terms := []v1.PreferredSchedulingTerm{
		{Weight: 30, Preference: exprs(expr("disk", v1.NodeSelectorOpIn, "ssd"))},
		{Weight: 20, Preference: exprs(expr("zone", "Matches", "a"))},
		{Weight: 10, Preference: nameField(v1.NodeSelectorOpIn, "n1", "n2")},
		{Weight: 5, Preference: exprs(expr("zone", v1.NodeSelectorOpExists))},
	}
	if _, err := nodeaffinity.NewPreferredSchedulingTerms(terms); err == nil {
		t.Fatal("component-helpers parsed the bad terms; want an error")
	}
	if got := affinityScore(t, terms, n); got != 35 {
		t.Errorf("raw score = %d, want 35 (the two terms that parse)", got)
	}
	if got := affinityScore(t, terms[1:3], n); got != 0 {
		t.Errorf("raw score with only bad terms = %d, want 0", got)
	}
}

// BenchmarkNodeAffinityFilter filters a pod with a node selector and two
// required terms against one node, the cost paid per node and pod.
func BenchmarkNodeAffinityFilter(b *testing.B) {
	n := node("n1", 4000, 8*gib, "zone", "a", "disk", "ssd")
	p := pod("p", 100, 0)
	p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{exprs(expr("zone", v1.NodeSelectorOpIn, "b")), nameField(v1.NodeSelectorOpIn, "n1")}}}}
	ctx := context.Background()
	state := framework.NewCycleState(framework.NewSnapshot([]*v1.Node{n}, nil), framework.NewPodInfo(p))
	(NodeAffinity{}).PreFilter(ctx, state, p)
	ni := framework.NewNodeInfo(n)
	b.ReportAllocs()
	for b.Loop() {
		if st := (NodeAffinity{}).Filter(ctx, state, p, ni); !st.IsSuccess() {
			b.Fatal(st.Message())
		}
	}
}
