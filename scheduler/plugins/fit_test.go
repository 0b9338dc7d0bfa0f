package plugins

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubegate/kubegate/scheduler/framework"
)

func mustFit(t *testing.T, s ScoringStrategy) *NodeResourcesFit {
	t.Helper()
	f, err := NewNodeResourcesFit(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// E.3: LeastAllocated, alloc 4000m / 8 GiB, request 1000m / 2 GiB → (75+75)/2 = 75.
func TestLeastAllocated_E3(t *testing.T) {
	t.Parallel()
	fit := mustFit(t, ScoringStrategy{})
	nodes := []*v1.Node{node("a", 4000, 8*gib), node("b", 4000, 8*gib), node("c", 2000, 8*gib)}
	existing := []*v1.Pod{on(pod("x", 2000, 0), "b")}
	res, err := run(t, fit, 1, nodes, existing, pod("p", 1000, 2*gib))
	// b: cpu (4000-3000)*100/4000 = 25; memory: the existing pod counts
	// 200 MiB (E.3 non-zero default): (8192-2048-200)*100/8192 = 72 →
	// (25+72)/2 = 48. c: cpu 50, memory 75 → 62.
	checkScores(t, res, err, map[string][2]int64{"a": {75, 75}, "b": {48, 48}, "c": {62, 62}})
	if res.SelectedNode != "a" {
		t.Errorf("selected %s, want a", res.SelectedNode)
	}
}

// E.3: a container with no requests counts as 100m and 200 MiB for scoring.
func TestLeastAllocatedNonZeroDefaults_E3(t *testing.T) {
	t.Parallel()
	fit := mustFit(t, ScoringStrategy{})
	res, err := run(t, fit, 1, []*v1.Node{node("a", 1000, 1*gib), node("b", 1000, 2*gib)}, nil, pod("p", 0, 0))
	// a: cpu 90, memory (1024-200)*100/1024 = 80 → 85; b: 90, 90 → 90.
	checkScores(t, res, err, map[string][2]int64{"a": {85, 85}, "b": {90, 90}})
}

// E.3 / E.6: MostAllocated is req·100/alloc, capped at 100.
func TestMostAllocated_E3(t *testing.T) {
	t.Parallel()
	fit := mustFit(t, ScoringStrategy{Type: MostAllocated})
	res, err := run(t, fit, 1, []*v1.Node{node("a", 4000, 8*gib), node("b", 2000, 4*gib)}, nil, pod("p", 1000, 2*gib))
	checkScores(t, res, err, map[string][2]int64{"a": {25, 25}, "b": {50, 50}})
}

// E.1: RequestedToCapacityRatio maps utilisation through the shape, scores
// scaled ×10 and the weighted mean rounded.
func TestRequestedToCapacityRatio_E1(t *testing.T) {
	t.Parallel()
	fit := mustFit(t, ScoringStrategy{Type: RequestedToCapacityRatio, Resources: []ResourceSpec{{Name: v1.ResourceCPU, Weight: 3}, {Name: v1.ResourceMemory, Weight: 1}},
		Shape: []UtilizationShapePoint{{Utilization: 0, Score: 10}, {Utilization: 100, Score: 0}}})
	res, err := run(t, fit, 1, []*v1.Node{node("a", 4000, 8*gib), node("b", 2000, 8*gib)}, nil, pod("p", 1000, 2*gib))
	// a: cpu 25% → 75, memory 25% → 75 → 75. b: cpu 50% → 50, memory 75
	// → (50·3 + 75)/4 = 56.25 → 56.
	checkScores(t, res, err, map[string][2]int64{"a": {75, 75}, "b": {56, 56}})
}

// E.2: reasons "Insufficient <resource>" and "Too many pods", one per
// failing resource; the 0/N message counts each.
func TestFitFilter_E2(t *testing.T) {
	t.Parallel()
	fit := mustFit(t, ScoringStrategy{})
	full := node("full", 4000, 8*gib)
	full.Status.Allocatable[v1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	gpu := node("gpu", 4000, 8*gib)
	gpu.Status.Allocatable["example.com/gpu"] = *resource.NewQuantity(1, resource.DecimalSI)
	nodes := []*v1.Node{node("small", 500, 8*gib), node("tiny", 500, 1*gib), full, gpu}
	p := pod("p", 1000, 2*gib)
	p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = *resource.NewQuantity(1, resource.DecimalSI)
	res, err := run(t, fit, 1, nodes, []*v1.Pod{on(pod("x", 0, 0), "full")}, p)
	if err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	want := map[string][]string{
		"small": {"Insufficient cpu", "Insufficient example.com/gpu"},
		"tiny":  {"Insufficient cpu", "Insufficient memory", "Insufficient example.com/gpu"},
		"full":  {"Too many pods", "Insufficient example.com/gpu"},
	}
	for _, r := range res.Rejected {
		if r.Plugin != NameNodeResourcesFit || !slices.Equal(r.Reasons, want[r.Node]) {
			t.Errorf("node %s: got %s %q, want %q", r.Node, r.Plugin, r.Reasons, want[r.Node])
		}
	}
	if res.SelectedNode != "gpu" || len(res.Rejected) != 3 {
		t.Errorf("got %d rejected, selected %q; want 3 rejected and gpu selected", len(res.Rejected), res.SelectedNode)
	}
}

// E.5: with no node left the message is the sorted reason histogram.
func TestFitErrorMessage_E5(t *testing.T) {
	t.Parallel()
	fit := mustFit(t, ScoringStrategy{})
	nodes := []*v1.Node{node("a", 500, 8*gib), node("b", 500, 1*gib), node("c", 4000, 1*gib)}
	_, err := run(t, fit, 1, nodes, nil, pod("p", 1000, 2*gib))
	want := "0/3 nodes are available: 2 Insufficient cpu, 2 Insufficient memory."
	if !framework.IsFitError(err) || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}
