package framework

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Filtering and scoring fan out over goroutines only above parallelMinWork
// evaluations; the outcome must not depend on it. Every node is scored
// (percentage 100) so that both phases run in parallel, and the Results are
// released and reused between cycles.
func TestParallelMatchesSequential(t *testing.T) {
	t.Parallel()
	const n = 2 * parallelMinWork
	score, reject := map[string]int64{}, map[string]string{}
	for i := range n {
		name := fmt.Sprintf("n%04d", i)
		score[name] = int64(i*7919) % 101
		if i%13 == 0 {
			reject[name] = "no"
		}
	}
	p := &constScore{name: "S", score: score, reject: reject}
	run := func(par int) []string {
		fw, err := New(Profile{PercentageOfNodesToScore: 100, Filters: []FilterPlugin{p}, Scorers: []WeightedScorer{{Plugin: p, Weight: 3}}})
		if err != nil {
			t.Fatal(err)
		}
		fw.Parallelism = par
		fw.IntN = func(int) int { return 1 }
		snap := NewSnapshot(nodes(n), nil)
		var out []string
		for range 3 {
			res, err := fw.Schedule(context.Background(), snap, testPod())
			if err != nil {
				t.Fatal(err)
			}
			var sum int64
			for _, s := range res.Scores {
				sum += s.Total + s.Raw[0]
			}
			out = append(out, fmt.Sprintf("%s feasible=%d rejected=%d sum=%d", res.SelectedNode, res.FeasibleNodes, len(res.Rejected), sum))
			res.Release()
		}
		return out
	}
	seq, par := run(1), run(4)
	if !reflect.DeepEqual(seq, par) {
		t.Errorf("parallelism 4: got %v, want %v (as with 1)", par, seq)
	}
	// Nodes 0, 13, ..., 8190 are rejected.
	if want := fmt.Sprintf("feasible=%d rejected=%d", n-n/13-1, n/13+1); !strings.Contains(seq[0], want) {
		t.Errorf("got %s, want %s", seq[0], want)
	}
}
