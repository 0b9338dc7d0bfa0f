package plugins

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// E.3 classic formula: f = 0.25 / 0.75 → std 0.25 → 75; balanced → 100;
// three resources use the population standard deviation.
func TestBalanceScoreClassic_E3(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		req, alloc []int64
		want       int64
	}{
		{"quarter and three quarters", []int64{1000, 6}, []int64{4000, 8}, 75},
		{"even", []int64{2000, 4}, []int64{4000, 8}, 100},
		{"over capacity counts as 1", []int64{8000, 0}, []int64{4000, 8}, 50},
		{"one resource", []int64{1000, 0}, []int64{4000, 0}, 100},
		{"three resources", []int64{0, 4, 8}, []int64{8, 8, 8}, 59},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BalanceScore(tc.req, tc.alloc); got != tc.want {
				t.Errorf("BalanceScore(%v, %v) = %d, want %d", tc.req, tc.alloc, got, tc.want)
			}
		})
	}
}

// E.3 / gotcha 11: the 1.36+ formula scores the change in balance,
// 50 + (50 + with − without)/2; no change is 75.
func TestBalancedAllocationChange_E3(t *testing.T) {
	t.Parallel()
	ba := NewBalancedAllocation(nil)
	nodes := []*v1.Node{node("empty", 4000, 8*gib), node("cpuheavy", 4000, 8*gib), node("even", 4000, 8*gib)}
	existing := []*v1.Pod{on(pod("x", 2000, 0), "cpuheavy"), on(pod("y", 1000, 2*gib), "even")}
	res, err := run(t, ba, 1, nodes, existing, pod("p", 1000, 6*gib))
	// empty: with f=.25/.75 → 75, without 0/0 → 100 → 50+(50−25)/2 = 62.
	// cpuheavy: with .75/.75 → 100, without .5/0 → 75 → 50+75/2 = 87.
	// even: with .5/1 → 75, without .25/.25 → 100 → 62.
	checkScores(t, res, err, map[string][2]int64{"empty": {62, 62}, "cpuheavy": {87, 87}, "even": {62, 62}})
	if got := ChangeInBalanceScore(90, 90); got != 75 {
		t.Errorf("no change: got %d, want 75", got)
	}
}

// E.3 edge: a pod requesting nothing is skipped by BalancedAllocation.
func TestBalancedAllocationSkipsBestEffort_E3(t *testing.T) {
	t.Parallel()
	res, err := run(t, NewBalancedAllocation(nil), 1, []*v1.Node{node("a", 4000, 8*gib), node("b", 4000, 8*gib)}, nil, pod("p", 0, 0))
	if err != nil || !res.Plugins[0].Skipped {
		t.Fatalf("got err %v, skipped %v; want skipped", err, res.Plugins[0].Skipped)
	}
	checkScores(t, res, err, map[string][2]int64{"a": {0, 0}, "b": {0, 0}})
}

// E.3: DefaultNormalizeScore maps s → 100·s/max, reversed 100 − 100·s/max;
// all zero → all 100 reversed, all 0 otherwise.
func TestDefaultNormalizeScore_E3(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		in      []int64
		reverse bool
		want    []int64
	}{
		{"plain", []int64{1, 2, 4}, false, []int64{25, 50, 100}},
		{"reverse", []int64{1, 2, 4}, true, []int64{75, 50, 0}},
		{"zeros", []int64{0, 0}, false, []int64{0, 0}},
		{"zeros reverse", []int64{0, 0}, true, []int64{100, 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := append([]int64(nil), tc.in...)
			framework.DefaultNormalizeScore(tc.reverse, got)
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func taint(n *v1.Node, key, value string, effect v1.TaintEffect) *v1.Node {
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
	return n
}

// E.3 / E.5: TaintToleration filters with "node(s) had untolerated taint
// {k: v}" and scores untolerated PreferNoSchedule taints, reversed.
func TestTaintToleration_E3(t *testing.T) {
	t.Parallel()
	nodes := []*v1.Node{
		node("clean", 4000, 8*gib),
		taint(node("one", 4000, 8*gib), "a", "1", v1.TaintEffectPreferNoSchedule),
		taint(taint(node("two", 4000, 8*gib), "a", "1", v1.TaintEffectPreferNoSchedule), "b", "2", v1.TaintEffectPreferNoSchedule),
		taint(node("tolerated", 4000, 8*gib), "b", "2", v1.TaintEffectPreferNoSchedule),
		taint(node("blocked", 4000, 8*gib), "dedicated", "gpu", v1.TaintEffectNoSchedule),
	}
	p := pod("p", 100, 0)
	p.Spec.Tolerations = []v1.Toleration{{Key: "b", Operator: v1.TolerationOpExists}}
	res, err := run(t, TaintToleration{}, 3, nodes, nil, p)
	checkScores(t, res, err, map[string][2]int64{"clean": {0, 100}, "one": {1, 0}, "two": {1, 0}, "tolerated": {0, 100}})
	if len(res.Rejected) != 1 || res.Rejected[0].Reasons[0] != "node(s) had untolerated taint {dedicated: gpu}" {
		t.Errorf("got rejections %+v", res.Rejected)
	}
	if got := res.Scores[0].Total; got != 300 {
		t.Errorf("weighted score of clean = %d, want 300 (weight 3)", got)
	}
}

// E.3: NodeAffinity sums matching preferred weights, normalised to the max;
// the filter applies nodeSelector and required terms.
func TestNodeAffinity_E3(t *testing.T) {
	t.Parallel()
	nodes := []*v1.Node{
		node("ssd-a", 4000, 8*gib, "disk", "ssd", "zone", "a"),
		node("ssd-b", 4000, 8*gib, "disk", "ssd", "zone", "b"),
		node("hdd-a", 4000, 8*gib, "disk", "hdd", "zone", "a"),
		node("gpu", 4000, 8*gib, "disk", "ssd", "zone", "a", "gpu", "yes"),
	}
	p := pod("p", 100, 0)
	p.Spec.NodeSelector = map[string]string{"zone": "a"}
	p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{
			{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "gpu", Operator: v1.NodeSelectorOpDoesNotExist}}},
		}},
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
			{Weight: 30, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"ssd"}}}}},
			{Weight: 10, Preference: v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"hdd-a"}}}}},
		},
	}}
	res, err := run(t, NodeAffinity{}, 2, nodes, nil, p)
	checkScores(t, res, err, map[string][2]int64{"ssd-a": {30, 100}, "hdd-a": {10, 33}})
	for _, r := range res.Rejected {
		if r.Reasons[0] != ReasonNodeAffinity {
			t.Errorf("node %s: reason %q, want %q", r.Node, r.Reasons[0], ReasonNodeAffinity)
		}
	}
	if len(res.Rejected) != 2 {
		t.Errorf("got %d rejected, want 2 (ssd-b by selector, gpu by required term)", len(res.Rejected))
	}
}

// E.3: ImageLocality: size × (nodes with the image / all nodes), clamped
// to [23 MiB, 1000 MiB × containers], mapped to 0..100.
func TestImageLocality_E3(t *testing.T) {
	t.Parallel()
	withImage := func(n *v1.Node, size int64, names ...string) *v1.Node {
		n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: names, SizeBytes: size})
		return n
	}
	nodes := []*v1.Node{
		withImage(node("big", 4000, 8*gib), 500*mib, "app:latest"),
		withImage(node("big2", 4000, 8*gib), 500*mib, "docker.io/app:latest", "app:latest"),
		withImage(node("small", 4000, 8*gib), 10*mib, "side:1"),
		node("none", 4000, 8*gib),
	}
	p := pod("p", 100, 0)
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Image: "side:1"})
	res, err := run(t, ImageLocality{}, 1, nodes, nil, p)
	// big: 500 MiB × 2/4 = 250 MiB; 100·(250−23)/(2000−23) = 11.
	// small: 10 MiB × 1/4 < 23 MiB → 0.
	checkScores(t, res, err, map[string][2]int64{"big": {11, 11}, "big2": {11, 11}, "small": {0, 0}, "none": {0, 0}})
}

// E.3: with no constraints of its own, a pod owned by a ReplicaSet spreads
// by the system defaults (hostname maxSkew 3, zone maxSkew 5):
// raw = count·log(domains+2) + maxSkew − 1, normalised 100·(max+min−s)/max.
func TestPodTopologySpreadSystemDefaults_E3(t *testing.T) {
	t.Parallel()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	owned := func(name string) *v1.Pod {
		p := withLabels(pod(name, 100, 0), "app", "web")
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", Controller: &yes}}
		return p
	}
	nodes := []*v1.Node{node("a", 4000, 8*gib), node("b", 4000, 8*gib), node("c", 4000, 8*gib)}
	existing := []*v1.Pod{on(owned("w1"), "a"), on(owned("w2"), "a"), on(owned("w3"), "b"), on(withLabels(pod("other", 100, 0), "app", "db"), "c")}
	pts := &PodTopologySpread{Sources: &Objects{ReplicaSetList: []*appsv1.ReplicaSet{rs}}}
	res, err := run(t, pts, 2, nodes, existing, owned("new"))
	// log(3+2) = 1.609: a 2·1.609+2 = 5.2 → 5; b 3.6 → 4; c 2.
	// Normalised: a 100·(5+2−5)/5 = 40, b 60, c 100.
	checkScores(t, res, err, map[string][2]int64{"a": {5, 40}, "b": {4, 60}, "c": {2, 100}})
	if res.SelectedNode != "c" {
		t.Errorf("selected %s, want c", res.SelectedNode)
	}

	// Without an owner or service nothing selects the pod: skipped.
	res, err = run(t, pts, 2, nodes, existing, withLabels(pod("lone", 100, 0), "app", "web"))
	if err != nil || !res.Plugins[0].Skipped {
		t.Errorf("unowned pod: err %v, skipped %v; want skipped", err, res.Plugins[0].Skipped)
	}
}

// E.3: a DoNotSchedule constraint rejects nodes whose domain would exceed
// maxSkew, and nodes without the key as "(missing required label)".
func TestPodTopologySpreadFilter_E3(t *testing.T) {
	t.Parallel()
	nodes := []*v1.Node{
		node("a1", 4000, 8*gib, "zone", "a"), node("a2", 4000, 8*gib, "zone", "a"),
		node("b1", 4000, 8*gib, "zone", "b"), node("nozone", 4000, 8*gib),
	}
	existing := []*v1.Pod{on(withLabels(pod("w1", 100, 0), "app", "web"), "a1"), on(withLabels(pod("w2", 100, 0), "app", "web"), "b1"), on(withLabels(pod("w3", 100, 0), "app", "web"), "a2")}
	p := withLabels(pod("p", 100, 0), "app", "web")
	p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	res, err := run(t, &PodTopologySpread{}, 2, nodes, existing, p)
	if err != nil || res.SelectedNode != "b1" {
		t.Fatalf("got %q, %v; want b1", res.SelectedNode, err)
	}
	got := map[string]string{}
	for _, r := range res.Rejected {
		got[r.Node] = r.Reasons[0]
	}
	want := map[string]string{"a1": ReasonSpreadConstraints, "a2": ReasonSpreadConstraints, "nozone": ReasonSpreadMissingKey}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("node %s: got %q, want %q", n, got[n], w)
		}
	}
}

func podTerm(key string, kv ...string) v1.PodAffinityTerm {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return v1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: m}}
}

// E.3 / E.5: InterPodAffinity filter reasons, and the min-max normalised
// preferred score.
func TestInterPodAffinity_E3(t *testing.T) {
	t.Parallel()
	nodes := []*v1.Node{
		node("a1", 4000, 8*gib, "zone", "a"), node("a2", 4000, 8*gib, "zone", "a"),
		node("b1", 4000, 8*gib, "zone", "b"), node("c1", 4000, 8*gib, "zone", "c"),
	}
	db := on(withLabels(pod("db", 100, 0), "app", "db"), "a1")
	guard := on(withLabels(pod("guard", 100, 0), "app", "guard"), "c1")
	guard.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{podTerm("zone", "app", "web")}}}
	cache := on(withLabels(pod("cache", 100, 0), "app", "cache"), "b1")

	t.Run("required affinity and existing anti-affinity", func(t *testing.T) {
		p := withLabels(pod("web", 100, 0), "app", "web")
		p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{podTerm("zone", "app", "db")}}}
		res, err := run(t, InterPodAffinity{}, 2, nodes, []*v1.Pod{db, guard, cache}, p)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range res.Rejected {
			got[r.Node] = r.Reasons[0]
		}
		want := map[string]string{"b1": ReasonPodAffinity, "c1": ReasonPodAffinity}
		if len(got) != len(want) || got["b1"] != want["b1"] || got["c1"] != want["c1"] {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("existing pod's anti-affinity", func(t *testing.T) {
		p := withLabels(pod("web", 100, 0), "app", "web")
		res, err := run(t, InterPodAffinity{}, 2, nodes, []*v1.Pod{db, guard, cache}, p)
		if err != nil || len(res.Rejected) != 1 || res.Rejected[0].Node != "c1" || res.Rejected[0].Reasons[0] != ReasonExistingPodAntiAffinity {
			t.Errorf("got %+v, %v; want c1 rejected by existing anti-affinity", res.Rejected, err)
		}
	})
	t.Run("own anti-affinity", func(t *testing.T) {
		p := withLabels(pod("web", 100, 0), "app", "web")
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{podTerm("zone", "app", "db")}}}
		res, _ := run(t, InterPodAffinity{}, 2, nodes, []*v1.Pod{db, guard, cache}, p)
		got := map[string]string{}
		for _, r := range res.Rejected {
			got[r.Node] = r.Reasons[0]
		}
		if got["a1"] != ReasonPodAntiAffinity || got["a2"] != ReasonPodAntiAffinity {
			t.Errorf("got %v, want a1 and a2 rejected by the pod's anti-affinity", got)
		}
	})
	t.Run("preferred score min-max", func(t *testing.T) {
		p := withLabels(pod("web", 100, 0), "app", "web")
		p.Spec.Affinity = &v1.Affinity{
			PodAffinity:     &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 80, PodAffinityTerm: podTerm("zone", "app", "db")}}},
			PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 20, PodAffinityTerm: podTerm("zone", "app", "cache")}}},
		}
		res, err := run(t, InterPodAffinity{}, 2, nodes[:3], []*v1.Pod{db, cache}, p)
		// a: +80, b: −20 → min-max: a1, a2 100; b1 0.
		checkScores(t, res, err, map[string][2]int64{"a1": {80, 100}, "a2": {80, 100}, "b1": {-20, 0}})
	})
}

// E.2 reasons of the simple filters, word for word.
func TestSimpleFilters_E2(t *testing.T) {
	t.Parallel()
	cordoned := node("cordoned", 4000, 8*gib)
	cordoned.Spec.Unschedulable = true
	webPort := func(name string) *v1.Pod {
		p := pod(name, 100, 0)
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		return p
	}
	for _, tc := range []struct {
		name   string
		plugin framework.Plugin
		nodes  []*v1.Node
		pods   []*v1.Pod
		pod    *v1.Pod
		want   string
	}{
		{"NodeUnschedulable", NodeUnschedulable{}, []*v1.Node{cordoned}, nil, pod("p", 0, 0), "0/1 nodes are available: 1 node(s) were unschedulable."},
		{"NodeName", NodeName{}, []*v1.Node{node("a", 1, 1)}, nil, func() *v1.Pod { p := pod("p", 0, 0); p.Spec.NodeName = "b"; return p }(), "0/1 nodes are available: 1 node(s) didn't match the requested node name."},
		{"NodePorts", NodePorts{}, []*v1.Node{node("a", 1, 1)}, []*v1.Pod{on(webPort("x"), "a")}, webPort("p"), "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, tc.plugin, 1, tc.nodes, tc.pods, tc.pod)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	// A pod tolerating the unschedulable taint may use a cordoned node.
	p := pod("p", 0, 0)
	p.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	if res, err := run(t, NodeUnschedulable{}, 1, []*v1.Node{cordoned}, nil, p); err != nil || res.SelectedNode != "cordoned" {
		t.Errorf("tolerating pod: got %q, %v", res.SelectedNode, err)
	}
}

func TestHostPortConflicts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b framework.HostPort
		want bool
	}{
		{framework.HostPort{IP: "0.0.0.0", Protocol: "TCP", Port: 80}, framework.HostPort{IP: "10.0.0.1", Protocol: "TCP", Port: 80}, true},
		{framework.HostPort{IP: "10.0.0.2", Protocol: "TCP", Port: 80}, framework.HostPort{IP: "10.0.0.1", Protocol: "TCP", Port: 80}, false},
		{framework.HostPort{IP: "0.0.0.0", Protocol: "UDP", Port: 80}, framework.HostPort{IP: "0.0.0.0", Protocol: "TCP", Port: 80}, false},
	} {
		if got := tc.a.Conflicts(tc.b); got != tc.want {
			t.Errorf("%+v vs %+v: got %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
