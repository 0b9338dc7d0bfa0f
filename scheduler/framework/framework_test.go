package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// E.2: examples of numFeasibleNodesToFind with the adaptive percentage.
func TestNumFeasibleNodesToFind_E2(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pct     int32
		n, want int
	}{
		{0, 50, 50}, {0, 100, 100}, {0, 500, 230}, {0, 1000, 420}, {0, 5000, 500},
		{0, 6000, 300}, {0, 10000, 500}, {100, 5000, 5000}, {30, 1000, 300}, {1, 1000, 100},
	} {
		if got := NumFeasibleNodesToFind(tc.pct, tc.n); got != tc.want {
			t.Errorf("NumFeasibleNodesToFind(%d, %d) = %d, want %d", tc.pct, tc.n, got, tc.want)
		}
	}
}

// constScore scores every node by a fixed table; its filter rejects nodes
// named in reject.
type constScore struct {
	name   string
	score  map[string]int64
	reject map[string]string
}

func (c *constScore) Name() string { return c.name }
func (c *constScore) Filter(_ context.Context, _ *CycleState, _ *v1.Pod, n *NodeInfo) *Status {
	if r, ok := c.reject[n.Name()]; ok {
		return NewStatus(Unschedulable, r)
	}
	return nil
}
func (c *constScore) Score(_ context.Context, _ *CycleState, _ *v1.Pod, n *NodeInfo) (int64, *Status) {
	return c.score[n.Name()], nil
}

func nodes(n int) []*v1.Node {
	out := make([]*v1.Node, n)
	for i := range out {
		out[i] = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%04d", i)}}
	}
	return out
}

func testPod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
}

// E.4: the highest total wins; ties are broken by reservoir sampling, the
// k-th tie replacing the pick with probability 1/k.
func TestSelectHostReservoir_E4(t *testing.T) {
	t.Parallel()
	p := &constScore{name: "S", score: map[string]int64{"n0000": 50, "n0001": 90, "n0002": 90, "n0003": 10, "n0004": 90}}
	fw, err := New(Profile{Scorers: []WeightedScorer{{Plugin: p, Weight: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	snap := NewSnapshot(nodes(5), nil)
	for _, tc := range []struct {
		name  string
		draws []int
		want  string
	}{
		{"keep first tie", []int{1, 1}, "n0001"},
		{"second tie replaces", []int{0, 1}, "n0002"},
		{"third tie replaces", []int{1, 0}, "n0004"},
	} {
		var got []int
		i := 0
		fw.IntN = func(n int) int { got = append(got, n); d := tc.draws[i]; i++; return d }
		res, err := fw.Schedule(context.Background(), snap, testPod())
		if err != nil {
			t.Fatal(err)
		}
		if res.SelectedNode != tc.want {
			t.Errorf("%s: selected %s, want %s", tc.name, res.SelectedNode, tc.want)
		}
		if fmt.Sprint(got) != "[2 3]" {
			t.Errorf("%s: IntN called with %v, want [2 3] (k-th tie draws from k)", tc.name, got)
		}
		if res.Scores[1].Total != 180 {
			t.Errorf("weighted total %d, want 180", res.Scores[1].Total)
		}
	}
}

// E.2: filtering starts at a rotating index and stops once enough feasible
// nodes are found; the next cycle starts after the last node processed.
func TestNodeSamplingRotates_E2(t *testing.T) {
	t.Parallel()
	p := &constScore{name: "S", score: map[string]int64{}, reject: map[string]string{"n0001": "no"}}
	fw, err := New(Profile{Filters: []FilterPlugin{p}, Scorers: []WeightedScorer{{Plugin: p, Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, par := range []int{1, 2, 7} {
		fw.Parallelism = par
		fw.nextStart = 0
		snap := NewSnapshot(nodes(1000), nil)
		res, err := fw.Schedule(context.Background(), snap, testPod())
		if err != nil {
			t.Fatal(err)
		}
		// 1000 nodes → 420 wanted; n0001 is rejected so 421 are processed.
		if res.FeasibleNodes != 420 || res.EvaluatedNodes != 421 || len(res.Rejected) != 1 {
			t.Errorf("parallelism %d: feasible %d evaluated %d rejected %d, want 420, 421, 1", par, res.FeasibleNodes, res.EvaluatedNodes, len(res.Rejected))
		}
		if res.Scores[0].Node != "n0000" || res.Scores[419].Node != "n0420" {
			t.Errorf("parallelism %d: first/last feasible %s/%s, want n0000/n0420", par, res.Scores[0].Node, res.Scores[419].Node)
		}
		res, _ = fw.Schedule(context.Background(), snap, testPod())
		if res.Scores[0].Node != "n0421" || res.EvaluatedNodes != 420 {
			t.Errorf("parallelism %d: second cycle starts at %s (evaluated %d), want n0421 (420)", par, res.Scores[0].Node, res.EvaluatedNodes)
		}
		// The third cycle wraps around.
		res, _ = fw.Schedule(context.Background(), snap, testPod())
		if res.Scores[0].Node != "n0841" || res.Scores[len(res.Scores)-1].Node != "n0261" {
			t.Errorf("parallelism %d: third cycle %s..%s, want n0841..n0261 (n0001 is rejected)", par, res.Scores[0].Node, res.Scores[len(res.Scores)-1].Node)
		}
	}
}

// E.2: with exactly one feasible node scoring is skipped.
func TestOneFeasibleSkipsScoring_E2(t *testing.T) {
	t.Parallel()
	p := &constScore{name: "S", reject: map[string]string{"n0000": "no", "n0002": "no"}}
	counting := &countingScore{}
	fw, _ := New(Profile{Filters: []FilterPlugin{p}, Scorers: []WeightedScorer{{Plugin: counting, Weight: 1}}})
	res, err := fw.Schedule(context.Background(), NewSnapshot(nodes(3), nil), testPod())
	if err != nil || res.SelectedNode != "n0001" || !res.ScoringSkipped || counting.calls != 0 {
		t.Errorf("got %q skipped=%v calls=%d err=%v; want n0001 without scoring", res.SelectedNode, res.ScoringSkipped, counting.calls, err)
	}
}

type countingScore struct{ calls int }

func (c *countingScore) Name() string { return "Counting" }
func (c *countingScore) Score(context.Context, *CycleState, *v1.Pod, *NodeInfo) (int64, *Status) {
	c.calls++
	return 1000, nil
}

// E.4: a normalised score outside 0..100 fails the cycle.
func TestInvalidScore_E4(t *testing.T) {
	t.Parallel()
	fw, _ := New(Profile{Scorers: []WeightedScorer{{Plugin: &countingScore{}, Weight: 1}}})
	_, err := fw.Schedule(context.Background(), NewSnapshot(nodes(2), nil), testPod())
	if err == nil || !strings.Contains(err.Error(), `plugin "Counting" returns an invalid score 1000`) {
		t.Errorf("got %v, want an invalid score error", err)
	}
}

// E.5: the FitError message, histogram sorted as strings; a PreFilter
// message replaces it.
func TestFitError_E5(t *testing.T) {
	t.Parallel()
	e := &FitError{NumAllNodes: 12, Reasons: map[string]int{"Insufficient cpu": 3, "node(s) had untolerated taint {k: v}": 1, "Insufficient memory": 10}}
	want := "0/12 nodes are available: 1 node(s) had untolerated taint {k: v}, 10 Insufficient memory, 3 Insufficient cpu."
	if got := e.Error(); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	e = &FitError{NumAllNodes: 3, PreFilterMsg: "pod has unbound immediate PersistentVolumeClaims"}
	if got, want := e.Error(), "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := (&Framework{}).Schedule(context.Background(), NewSnapshot(nil, nil), testPod()); err != ErrNoNodesAvailable {
		t.Errorf("no nodes: got %v, want ErrNoNodesAvailable", err)
	}
}

func TestNewRejectsBadProfiles(t *testing.T) {
	t.Parallel()
	s := &countingScore{}
	for _, tc := range []struct {
		name string
		p    Profile
		want string
	}{
		{"percentage", Profile{PercentageOfNodesToScore: 101}, "percentageOfNodesToScore 101: want 0 to 100"},
		{"weight", Profile{Scorers: []WeightedScorer{{Plugin: s, Weight: 0}}}, "score plugin Counting: weight 0: want at least 1"},
		{"twice", Profile{Scorers: []WeightedScorer{{Plugin: s, Weight: 1}, {Plugin: s, Weight: 1}}}, "score plugin Counting: enabled twice"},
	} {
		if _, err := New(tc.p); err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}
