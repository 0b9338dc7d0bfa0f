package plugins

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// node returns a node with cpu (millicores), memory (bytes) and 110 pods
// allocatable, labelled with its hostname and extra.
func node(name string, milliCPU, mem int64, extra ...string) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU:    *resource.NewMilliQuantity(milliCPU, resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
			v1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		}},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		n.Labels[extra[i]] = extra[i+1]
	}
	return n
}

var uidSeq atomic.Int64

// pod returns a pod in "default" with one container requesting cpu
// (millicores) and mem (bytes); 0 leaves the request unset.
func pod(name string, milliCPU, mem int64) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(fmt.Sprintf("uid-%d", uidSeq.Add(1))), Labels: map[string]string{}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "app"}}},
	}
	req := v1.ResourceList{}
	if milliCPU > 0 {
		req[v1.ResourceCPU] = *resource.NewMilliQuantity(milliCPU, resource.DecimalSI)
	}
	if mem > 0 {
		req[v1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	}
	p.Spec.Containers[0].Resources.Requests = req
	return p
}

// on returns p assigned to node.
func on(p *v1.Pod, node string) *v1.Pod {
	p.Spec.NodeName = node
	return p
}

func withLabels(p *v1.Pod, kv ...string) *v1.Pod {
	for i := 0; i+1 < len(kv); i += 2 {
		p.Labels[kv[i]] = kv[i+1]
	}
	return p
}

const gib = 1024 * mib

// run schedules p with only plugin (as filter if it filters, and as scorer
// with weight w if it scores) and returns the result.
func run(t *testing.T, plugin framework.Plugin, w int64, nodes []*v1.Node, pods []*v1.Pod, p *v1.Pod) (*framework.Result, error) {
	t.Helper()
	var prof framework.Profile
	if f, ok := plugin.(framework.FilterPlugin); ok {
		prof.Filters = append(prof.Filters, f)
	}
	if s, ok := plugin.(framework.ScorePlugin); ok {
		prof.Scorers = append(prof.Scorers, framework.WeightedScorer{Plugin: s, Weight: w})
	}
	fw, err := framework.New(prof)
	if err != nil {
		t.Fatal(err)
	}
	fw.IntN = func(int) int { return 1 } // ties keep the first node
	return fw.Schedule(context.Background(), framework.NewSnapshot(nodes, pods), p)
}

// scores returns node name → [raw, normalized] of the single score plugin.
func scores(t *testing.T, res *framework.Result) map[string][2]int64 {
	t.Helper()
	out := map[string][2]int64{}
	for _, ns := range res.Scores {
		out[ns.Node] = [2]int64{ns.Raw[0], ns.Normalized[0]}
	}
	return out
}

func checkScores(t *testing.T, res *framework.Result, err error, want map[string][2]int64) {
	t.Helper()
	if err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	got := scores(t, res)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("node %s: got [raw normalized] %v, want %v", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got scores for %d nodes (%v), want %d", len(got), got, len(want))
	}
}
