package ttlafterfinished_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/garbagecollector"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/controllers/ttlafterfinished"
	"github.com/kubegate/kubegate/internal/testwait"
)

// clock is a settable time for the controller.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// finishedJob creates a Job with ttl and marks it Complete at done.
func finishedJob(t *testing.T, c kubernetes.Interface, name string, ttl int32, done time.Time) {
	t.Helper()
	ctx := context.Background()
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ptr.To(ttl), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "work", Image: "busybox"}}}}}}
	j, err := c.BatchV1().Jobs("default").Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := metav1.NewTime(done)
	j.Status = batchv1.JobStatus{StartTime: &at, CompletionTime: &at, Succeeded: 1, Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: at},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: at}}}
	if _, err := c.BatchV1().Jobs("default").UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func gone(c kubernetes.Interface, name string) (bool, string) {
	j, err := c.BatchV1().Jobs("default").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, ""
	}
	if err != nil {
		return false, err.Error()
	}
	return false, fmt.Sprintf("job %s still there (deletionTimestamp %v)", name, j.DeletionTimestamp)
}

func TestFinishedJobDeletedAfterTTL_G6(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Second)
	clk := &clock{t: now}
	// The garbage collector finishes the foreground deletions the
	// controller starts (G.8).
	s := controllertest.StartWith(t, manager.Options{Descriptors: []controllers.Descriptor{ttlafterfinished.Descriptor, garbagecollector.Descriptor},
		Logger: slog.New(slog.DiscardHandler), Now: clk.now})
	c := s.Client
	// Finished 200 s ago with a TTL of 100 s: deleted at once.
	finishedJob(t, c, "old", 100, now.Add(-200*time.Second))
	testwait.For(t, 30*time.Second, "old deleted", func() (bool, string) { return gone(c, "old") })
	// Finished now with a TTL of 100 s: kept until the clock passes it.
	finishedJob(t, c, "new", 100, now)
	finishedJob(t, c, "marker", 0, now.Add(-time.Second))
	testwait.For(t, 30*time.Second, "marker deleted", func() (bool, string) { return gone(c, "marker") })
	if ok, _ := gone(c, "new"); ok {
		t.Fatal("new deleted before its TTL passed")
	}
	clk.set(now.Add(101 * time.Second))
	// A change to the Job has it looked at again with the new time.
	j, err := c.BatchV1().Jobs("default").Get(context.Background(), "new", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j.Labels = map[string]string{"touched": "yes"}
	if _, err := c.BatchV1().Jobs("default").Update(context.Background(), j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "new deleted", func() (bool, string) { return gone(c, "new") })
}
