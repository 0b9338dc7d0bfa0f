// Package ttlafterfinished is kube-controller-manager's TTL-after-finished
// controller: a finished Job with spec.ttlSecondsAfterFinished is deleted
// that many seconds after it finished (docs/kubernetes-behaviour.md, G.6).
//
// A Job has finished when its Complete or Failed condition is True, at
// that condition's lastTransitionTime. Once the TTL has passed, the Job is
// read again from the API server and, if it still has finished that long
// ago, deleted with propagationPolicy Foreground and its UID as a
// precondition, so that the garbage collector deletes its pods first.
//
// The identity it runs as needs: jobs list, watch, get, delete.
package ttlafterfinished

import (
	"context"
	"log/slog"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/controllers"
)

// Descriptor runs the controller in the controller manager, as kube's
// "ttl-after-finished" controller.
var Descriptor = controllers.Descriptor{Name: "ttl-after-finished", ServiceAccount: "ttl-after-finished-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c)
}}

// DefaultWorkers is kube-controller-manager's --concurrent-ttl-after-finished-syncs.
const DefaultWorkers = 5

// Controller is the TTL-after-finished controller.
type Controller struct {
	client kubernetes.Interface
	log    *slog.Logger
	now    func() time.Time
	jobs   batchlisters.JobLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller from c.
func New(c *controllers.Context) (*Controller, error) {
	tc := &Controller{client: c.Client, log: c.Logger, now: c.Now, queue: controllers.NewQueue("ttl_jobs_to_delete")}
	if tc.now == nil {
		tc.now = time.Now
	}
	if tc.log == nil {
		tc.log = slog.Default()
	}
	ji := c.Informers.Batch().V1().Jobs()
	tc.jobs, tc.synced = ji.Lister(), ji.Informer().HasSynced
	enqueue := func(obj any) {
		if j, ok := obj.(*batchv1.Job); ok && needsCleanup(j) {
			controllers.Enqueue(tc.queue, j)
		}
	}
	if _, err := ji.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	return tc, nil
}

// Run works until ctx is done.
func (tc *Controller) Run(ctx context.Context) error {
	return controllers.RunWorkers(ctx, "ttl-after-finished", tc.queue, DefaultWorkers, tc.log, tc.sync, tc.synced)
}

func (tc *Controller) sync(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	j, err := tc.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if left, expired := tc.expired(j); !expired {
		if left > 0 {
			tc.queue.AddAfter(key, left)
		}
		return nil
	}
	// The cache may be stale: the TTL or the Job may have changed.
	fresh, err := tc.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if left, expired := tc.expired(fresh); !expired {
		if left > 0 {
			tc.queue.AddAfter(key, left)
		}
		return nil
	}
	tc.log.Info("deleting a finished job past its TTL", "job", key)
	err = tc.client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
		Preconditions:     &metav1.Preconditions{UID: &fresh.UID},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or another Job of that name now
	}
	return err
}

// expired reports whether j is due for deletion, or else how long until
// it is (0: never, as things stand).
func (tc *Controller) expired(j *batchv1.Job) (time.Duration, bool) {
	if !needsCleanup(j) {
		return 0, false
	}
	at, ok := finishTime(j)
	if !ok {
		return 0, false
	}
	left := at.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second).Sub(tc.now())
	if left <= 0 {
		return 0, true
	}
	return left, false
}

// needsCleanup: a finished Job with a TTL, not being deleted.
func needsCleanup(j *batchv1.Job) bool {
	_, finished := finishTime(j)
	return j.Spec.TTLSecondsAfterFinished != nil && j.DeletionTimestamp == nil && finished
}

// finishTime is when the Job's Complete or Failed condition turned True.
func finishTime(j *batchv1.Job) (time.Time, bool) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}
