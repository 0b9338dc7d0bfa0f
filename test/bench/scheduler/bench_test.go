// Package scheduler benchmarks kubegate's scheduling algorithm on an
// in-memory snapshot shaped like kube-scheduler's scheduler_perf
// SchedulingBasic case: nodes with 4 cpu, 32 GiB and 110 pods, 1,000 pods
// already placed, then pods requesting 100m and 500 MiB scheduled one
// after the other, each assumed onto its node before the next.
//
//	go test ./test/bench/scheduler -run '^$' -bench Schedule -benchtime 10000x -cpu 2
package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegate/kubegate/internal/benchcpu"
	"github.com/kubegate/kubegate/scheduler/explain"
	"github.com/kubegate/kubegate/scheduler/framework"
	"github.com/kubegate/kubegate/scheduler/plugins"
)

func makeNode(i int) *v1.Node {
	name := fmt.Sprintf("node-%05d", i)
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1.LabelHostname: name, v1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%3),
		}},
		Status: v1.NodeStatus{
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("32Gi"), v1.ResourcePods: resource.MustParse("110")},
			Images:      []v1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 300 * 1024}},
		},
	}
}

var requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("500Mi")}

func makePod(i int) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%06d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("uid-%06d", i))},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
			Resources: v1.ResourceRequirements{Requests: requests}}}},
	}
}

func setup(b *testing.B, numNodes, initPods int) (*framework.Framework, *framework.Snapshot) {
	b.Helper()
	nodes := make([]*v1.Node, numNodes)
	for i := range nodes {
		nodes[i] = makeNode(i)
	}
	var pods []*v1.Pod
	for i := range initPods {
		p := makePod(-i - 1)
		p.Spec.NodeName = nodes[i%numNodes].Name
		pods = append(pods, p)
	}
	prof, err := plugins.DefaultProfile(plugins.Args{Spread: &plugins.Objects{}})
	if err != nil {
		b.Fatal(err)
	}
	fw, err := framework.New(prof)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	fw.IntN = r.IntN
	return fw, framework.NewSnapshot(nodes, pods)
}

// BenchmarkSchedule is the algorithm alone, per pod what the online
// scheduler does under its lock and just after: filter, score, pick, assume
// the pod onto the node, and build the explanation annotation.
// BenchmarkScheduleNoAnnotation leaves out the annotation.
//
//	go test -c -o /tmp/schedbench ./test/bench/scheduler
//	/tmp/schedbench -test.run '^$' -test.bench 'Schedule/5000Nodes$' -test.benchtime 10000x -test.cpu 2
func BenchmarkSchedule(b *testing.B) { benchSchedule(b, true) }

// BenchmarkScheduleNoAnnotation is BenchmarkSchedule without the
// annotation.
func BenchmarkScheduleNoAnnotation(b *testing.B) { benchSchedule(b, false) }

func benchSchedule(b *testing.B, annotate bool) {
	for _, tc := range []struct{ nodes, init int }{{500, 100}, {5000, 1000}} {
		b.Run(fmt.Sprintf("%dNodes", tc.nodes), func(b *testing.B) {
			fw, snap := setup(b, tc.nodes, tc.init)
			pods := make([]*v1.Pod, b.N)
			for i := range pods {
				pods[i] = makePod(i)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			cpu := benchcpu.Start()
			for i := 0; i < b.N; i++ {
				res, err := fw.Schedule(ctx, snap, pods[i])
				if err != nil {
					b.Fatal(err)
				}
				if annotate {
					if _, err := explain.Annotation(res, nil); err != nil {
						b.Fatal(err)
					}
				}
				pods[i].Spec.NodeName = res.SelectedNode
				res.Release()
				snap.AddPod(pods[i])
			}
			cpu.Report(b)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
		})
	}
}
