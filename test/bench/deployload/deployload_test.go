package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

func pod(uid, node string, phase v1.PodPhase) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Spec: v1.PodSpec{NodeName: node}, Status: v1.PodStatus{Phase: phase}}
}

func TestTrackerCountsEachPodOnceAndNotesWhenEachCountIsReached(t *testing.T) {
	t.Parallel()
	tr := newTracker(2)
	tr.start(time.Now().Add(-time.Second))
	tr.set(pod("a", "", v1.PodPending))
	tr.set(pod("a", "n1", v1.PodPending))
	tr.set(pod("b", "", v1.PodPending))
	n := tr.counts()
	if n.created != 2 || n.bound != 1 || n.running != 0 || n.createdAt < time.Second || n.boundAt != 0 {
		t.Fatalf("after two pods, one bound: %+v", n)
	}
	tr.set(pod("b", "n2", v1.PodPending))
	tr.set(pod("a", "n1", v1.PodRunning))
	tr.remove(cache.DeletedFinalStateUnknown{Obj: pod("a", "n1", v1.PodRunning)})
	tr.set(pod("c", "n1", v1.PodRunning))
	select {
	case <-tr.done:
		t.Fatalf("done with %+v: only one pod Running", tr.counts())
	default:
	}
	tr.set(pod("b", "n2", v1.PodRunning))
	select {
	case <-tr.done:
	default:
		t.Fatalf("not done with %+v", tr.counts())
	}
	if n := tr.counts(); n.created != 2 || n.bound != 2 || n.running != 2 || n.runningAt < n.boundAt || n.boundAt == 0 {
		t.Errorf("at the end: %+v", n)
	}
	tr.set(pod("d", "n1", v1.PodRunning)) // a later pod closes nothing twice
}

func TestReportGivesMediansAndTheRatioToEachSystem(t *testing.T) {
	t.Parallel()
	results := []result{
		{System: "kube", Round: 1, RunningSeconds: 100, CPUSeconds: 50, CPUByProcess: map[string]float64{"etcd": 10}},
		{System: "kubegate", Round: 1, RunningSeconds: 40, PodsPerSecond: 250, CPUSeconds: 20, CPUByProcess: map[string]float64{"kubegate": 20}},
		{System: "kube", Round: 2, RunningSeconds: 120, CPUSeconds: 60},
		{System: "kubegate", Round: 2, RunningSeconds: 70, PodsPerSecond: 143, CPUSeconds: 25},
		{System: "kubegate", Round: 3, Error: "timed out"},
	}
	var out bytes.Buffer
	if err := writeReport(&out, results, []string{"kubegate", "kubegate-split"}, 0.5); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"seconds to all pods Running   110.0      55.0",
		"runs completed/all     2/2       2/3",
		"kubegate ÷ kube  0.50  by round 0.49  goal ≤ 0.5: met",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
