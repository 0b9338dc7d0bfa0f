package explain

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegate/kubegate/internal/testgolden"
	"github.com/kubegate/kubegate/scheduler/framework"
	"github.com/kubegate/kubegate/scheduler/plugins"
)

func mkNode(name string, cpu, mem string, taints ...v1.Taint) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Spec:       v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem), v1.ResourcePods: resource.MustParse("110"),
		}},
	}
}

func mkPod(name, node, cpu, mem string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "kube-easy",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}}}}},
	}
}

func schedule(t *testing.T, nodes []*v1.Node, pods []*v1.Pod, p *v1.Pod) (*framework.Result, error) {
	t.Helper()
	prof, err := plugins.DefaultProfile(plugins.Args{})
	if err != nil {
		t.Fatal(err)
	}
	fw, err := framework.New(prof)
	if err != nil {
		t.Fatal(err)
	}
	fw.IntN = func(int) int { return 1 }
	return fw.Schedule(context.Background(), framework.NewSnapshot(nodes, pods), p)
}

func threeNodes() ([]*v1.Node, []*v1.Pod) {
	nodes := []*v1.Node{
		mkNode("node-a", "4", "8Gi"),
		mkNode("node-b", "4", "8Gi", v1.Taint{Key: "spot", Value: "true", Effect: v1.TaintEffectPreferNoSchedule}),
		mkNode("node-c", "2", "4Gi"),
		mkNode("node-d", "8", "16Gi", v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}),
	}
	pods := []*v1.Pod{mkPod("x", "node-a", "2", "1Gi"), mkPod("y", "node-c", "1", "3Gi")}
	return nodes, pods
}

func TestTableGolden(t *testing.T) {
	nodes, pods := threeNodes()
	res, err := schedule(t, nodes, pods, mkPod("app", "", "500m", "1Gi"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Table(&buf, FromResult(res, err, -1)); err != nil {
		t.Fatal(err)
	}
	testgolden.Check(t, filepath.Join("testdata", "table.golden"), buf.Bytes())

	res, err = schedule(t, nodes, pods, mkPod("big", "", "1000", "1Gi"))
	if !framework.IsFitError(err) {
		t.Fatalf("got %v, want a FitError", err)
	}
	buf.Reset()
	if err := Table(&buf, FromResult(res, err, -1)); err != nil {
		t.Fatal(err)
	}
	testgolden.Check(t, filepath.Join("testdata", "table-unschedulable.golden"), buf.Bytes())
}

func TestAnnotationRoundTrip(t *testing.T) {
	t.Parallel()
	nodes, pods := threeNodes()
	res, err := schedule(t, nodes, pods, mkPod("app", "", "500m", "1Gi"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Annotation(res, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ParseAnnotation(v)
	if err != nil {
		t.Fatal(err)
	}
	if e.Node != res.SelectedNode || len(e.Scores) != 3 || e.RejectedCounts["node(s) had untolerated taint {dedicated: gpu}"] != 1 {
		t.Errorf("round trip lost data: %+v", e)
	}
	var a, b bytes.Buffer
	_ = Table(&a, e)
	_ = Table(&b, FromResult(res, nil, AnnotationTopNodes))
	if a.String() != b.String() {
		t.Errorf("table from annotation differs:\n%s\nvs\n%s", a.String(), b.String())
	}
	if msg := ScheduledMessage(e); !strings.HasPrefix(msg, "Successfully assigned default/app to "+res.SelectedNode+" (score ") {
		t.Errorf("Scheduled message %q", msg)
	}
}

// The annotation stays under MaxAnnotationBytes on 5,000 nodes with
// thousands of distinct reasons.
func TestAnnotationBounded(t *testing.T) {
	t.Parallel()
	var nodes []*v1.Node
	for i := range 5000 {
		n := mkNode(fmt.Sprintf("node-%05d", i), "4", "8Gi")
		if i%2 == 0 {
			n.Spec.Taints = []v1.Taint{{Key: fmt.Sprintf("team-%d-with-a-rather-long-taint-key", i), Value: "x", Effect: v1.TaintEffectNoSchedule}}
		}
		nodes = append(nodes, n)
	}
	p := mkPod("app", "", "100m", "1Gi")
	res, err := schedule(t, nodes, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Annotation(res, err)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) > MaxAnnotationBytes {
		t.Fatalf("annotation is %d bytes, bound %d", len(v), MaxAnnotationBytes)
	}
	e, _ := ParseAnnotation(v)
	total := 0
	for _, n := range e.RejectedCounts {
		total += n
	}
	if len(e.Scores) != AnnotationTopNodes || e.MoreFeasible != res.FeasibleNodes-AnnotationTopNodes ||
		total != len(res.Rejected) || len(e.RejectedCounts) > AnnotationMaxReasons || e.RejectedCounts[otherReasons] == 0 {
		t.Errorf("got %d scores, %d more, %d rejected in %d reasons; want %d, %d, %d in at most %d",
			len(e.Scores), e.MoreFeasible, total, len(e.RejectedCounts), AnnotationTopNodes, res.FeasibleNodes-AnnotationTopNodes, len(res.Rejected), AnnotationMaxReasons)
	}
}

func TestLogLines(t *testing.T) {
	t.Parallel()
	nodes, pods := threeNodes()
	res, err := schedule(t, nodes, pods, mkPod("app", "", "500m", "1Gi"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	if err := LogLines(&buf, now, 10, res, nil); err != nil {
		t.Fatal(err)
	}
	testgolden.Check(t, filepath.Join("testdata", "v10.golden"), buf.Bytes())
	buf.Reset()
	_ = LogLines(&buf, now, 2, res, nil)
	if n := strings.Count(buf.String(), "\n"); n != 1 || !strings.Contains(buf.String(), `"Successfully bound pod to node" pod="default/app"`) {
		t.Errorf("v=2 output:\n%s", buf.String())
	}
}

// The top-k selection gives the same rows as sorting every score and
// moving the pick first, including among ties and when the pick is not in
// the top.
func TestTopScoresMatchesFullSort(t *testing.T) {
	t.Parallel()
	var scores []framework.NodeScore
	for i := range 200 {
		scores = append(scores, framework.NodeScore{Node: fmt.Sprintf("n%03d", (i*37)%200), Total: int64((i * 7) % 5), Raw: []int64{int64(i)}})
	}
	for _, tc := range []struct {
		name, pick string
		n          int
	}{
		{"pick among ties", "n150", 5},
		{"pick last", scores[199].Node, 5},
		{"no pick", "", 5},
		{"one", "n007", 1},
		{"largest selected", "n042", maxSelectTop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := topScores(scores, tc.pick, tc.n)
			want := sortedScores(scores, tc.pick, tc.n)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v\nwant %v", got, want)
			}
			if tc.pick != "" && got[0].Node != tc.pick {
				t.Errorf("first %s, want the pick %s", got[0].Node, tc.pick)
			}
		})
	}
}
