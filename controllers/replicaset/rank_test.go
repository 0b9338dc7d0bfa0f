package replicaset

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func phase(ph corev1.PodPhase) podOpt {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}
func readyFor(d time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(-d))}}
	}
}
func cost(v string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{podDeletionCost: v} }
}
func age(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-d)) }
}
func restartsN(n int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
	}
}

func mkPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	p.Spec.NodeName = "n1"
	for _, o := range opts {
		o(p)
	}
	return p
}

// Each rule of the deletion order decides between two pods that the
// rules before it leave tied (G.2).
func TestDeletionOrder_G2(t *testing.T) {
	running := []podOpt{phase(corev1.PodRunning), readyFor(time.Hour)}
	tests := []struct {
		name        string
		first, then *corev1.Pod
		family      []*corev1.Pod
	}{
		{"unassigned first", mkPod("a", onNode("")), mkPod("b", onNode("n1")), nil},
		{"pending before unknown", mkPod("a", phase(corev1.PodPending)), mkPod("b", phase(corev1.PodUnknown)), nil},
		{"unknown before running", mkPod("a", phase(corev1.PodUnknown)), mkPod("b", phase(corev1.PodRunning)), nil},
		{"not ready before ready", mkPod("a"), mkPod("b", readyFor(time.Hour)), nil},
		{"lower deletion cost", mkPod("a", append(running, cost("-3"))...), mkPod("b", append(running, cost("2"))...), nil},
		{"an invalid cost is 0", mkPod("a", append(running, cost("+5"))...), mkPod("b", append(running, cost("1"))...), nil},
		{"crowded node first", mkPod("a", append(running, onNode("busy"))...), mkPod("b", append(running, onNode("quiet"))...),
			[]*corev1.Pod{mkPod("x", onNode("busy")), mkPod("y", onNode("busy"))}},
		{"ready more recently", mkPod("a", phase(corev1.PodRunning), readyFor(time.Minute)), mkPod("b", phase(corev1.PodRunning), readyFor(time.Hour)), nil},
		{"more restarts", mkPod("a", append(running, restartsN(4))...), mkPod("b", append(running, restartsN(1))...), nil},
		{"younger", mkPod("a", append(running, age(time.Minute))...), mkPod("b", append(running, age(24*time.Hour))...), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			family := append([]*corev1.Pod{tt.first, tt.then}, tt.family...)
			for _, order := range [][]*corev1.Pod{{tt.first, tt.then}, {tt.then, tt.first}} {
				got := podsToDelete(order, family, 1, now)
				if got[0] != tt.first {
					t.Errorf("deleted %s first, want %s", got[0].Name, tt.first.Name)
				}
			}
		})
	}
}

// Batches double while they succeed; a failed batch ends the run (G.2).
func TestSlowStart_G2(t *testing.T) {
	var calls atomic.Int32
	n, err := slowStart(10, func() error { calls.Add(1); return nil })
	if n != 10 || err != nil || calls.Load() != 10 {
		t.Fatalf("slowStart(10) = %d, %v after %d calls; want 10 successes", n, err, calls.Load())
	}
	calls.Store(0)
	boom := errors.New("boom")
	n, err = slowStart(10, func() error {
		if calls.Add(1) > 3 { // batches 1 and 2 succeed; batch 4 fails
			return boom
		}
		return nil
	})
	if n != 3 || !errors.Is(err, boom) || calls.Load() != 7 {
		t.Fatalf("slowStart with failures = %d, %v after %d calls; want 3 successes, the error, 7 calls (1+2+4)", n, err, calls.Load())
	}
}
