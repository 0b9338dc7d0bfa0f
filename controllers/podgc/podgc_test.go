package podgc_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/controllers/podgc"
	"github.com/kubegate/kubegate/internal/testwait"
)

const wait = 30 * time.Second

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func start(t *testing.T, o podgc.Options, now func() time.Time) kubernetes.Interface {
	t.Helper()
	d := controllers.Descriptor{Name: podgc.Descriptor.Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return podgc.New(c, o)
	}}
	return controllertest.StartWith(t, manager.Options{Descriptors: []controllers.Descriptor{d}, Logger: slog.New(slog.DiscardHandler), Now: now}).Client
}

// createPod creates pod name in default, bound to node when set, held by
// a finalizer when hold, and sets its status phase (and reason).
func createPod(t *testing.T, c kubernetes.Interface, name, node string, hold bool, phase corev1.PodPhase, reason string) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if hold {
		p.Finalizers = []string{"example.com/hold"}
	}
	p, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase, p.Status.Reason = phase, reason
	if _, err := c.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func podNames(t *testing.T, c kubernetes.Interface) []string {
	t.Helper()
	l, err := c.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// Above the threshold, the evicted terminated pods go first, then the
// oldest; running pods are never counted.
func TestTerminatedPodsAboveThreshold_G22(t *testing.T) {
	t.Parallel()
	c := start(t, podgc.Options{TerminatedPodThreshold: 2, GCPeriod: 50 * time.Millisecond}, nil)
	createPod(t, c, "a", "", false, corev1.PodSucceeded, "")
	createPod(t, c, "b", "", false, corev1.PodFailed, "")
	createPod(t, c, "c", "", false, corev1.PodSucceeded, "")
	createPod(t, c, "r", "", false, corev1.PodRunning, "")
	createPod(t, c, "z", "", false, corev1.PodFailed, "Evicted")
	testwait.For(t, wait, "pods b, c and r left", func() (bool, string) {
		got := podNames(t, c)
		return slices.Equal(got, []string{"b", "c", "r"}), fmt.Sprint(got)
	})
}

func getPod(t *testing.T, c kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A terminating pod that was never scheduled is marked Failed and
// force-deleted; the pods of a deleted node wait for the quarantine, then
// are marked Failed with kube's DisruptionTarget condition and deleted.
func TestOrphanedAndUnscheduledPods_G22(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Now()}
	c := start(t, podgc.Options{GCPeriod: 50 * time.Millisecond}, clk.now)
	ctx := context.Background()
	if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPod(t, c, "orphan", "gone", true, corev1.PodRunning, "")
	createPod(t, c, "free", "", false, corev1.PodPending, "")
	if err := c.CoreV1().Nodes().Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A terminating unscheduled pod (held by its finalizer) is failed.
	createPod(t, c, "unscheduled", "", true, corev1.PodPending, "")
	if err := c.CoreV1().Pods("default").Delete(ctx, "unscheduled", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, wait, "unscheduled marked Failed", func() (bool, string) {
		p := getPod(t, c, "unscheduled")
		return p.Status.Phase == corev1.PodFailed, string(p.Status.Phase)
	})
	// Without the clock passing the quarantine the orphan stays.
	if p := getPod(t, c, "orphan"); p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		t.Fatalf("orphan touched within the quarantine: phase %s, deletionTimestamp %v", p.Status.Phase, p.DeletionTimestamp)
	}
	testwait.For(t, wait, "orphan failed and deleted", func() (bool, string) {
		// Each look moves the clock past a quarantine, whenever the
		// collector's cache saw the node go.
		clk.add(podgc.DefaultQuarantine + time.Second)
		p := getPod(t, c, "orphan")
		i := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.DisruptionTarget })
		if p.DeletionTimestamp == nil || p.Status.Phase != corev1.PodFailed || i < 0 {
			return false, fmt.Sprintf("phase %s, deletionTimestamp %v, conditions %v", p.Status.Phase, p.DeletionTimestamp, p.Status.Conditions)
		}
		// Marked at the pod's first generation, before the deletion
		// that moved it on.
		cond := p.Status.Conditions[i]
		want := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: podgc.ReasonDeletionByPodGC,
			Message: "PodGC: node no longer exists", ObservedGeneration: 1, LastTransitionTime: cond.LastTransitionTime}
		if cond != want {
			t.Fatalf("DisruptionTarget condition = %+v, want %+v", cond, want)
		}
		return true, ""
	})
	// A pod on no node, not terminating, is left alone.
	if _, err := c.CoreV1().Pods("default").Get(ctx, "free", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Fatal("pending unscheduled pod deleted")
	}
}
