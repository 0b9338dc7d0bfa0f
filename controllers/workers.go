package controllers

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// NewQueue returns a rate-limited work queue of object keys named name,
// with kube-controller-manager's default limiter: per item exponential
// backoff from 5 ms to 1000 s, and an overall 10 per second, burst 100.
func NewQueue(name string) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// Enqueue adds the namespace/name key of obj (an object or a tombstone)
// to queue.
func Enqueue(queue workqueue.TypedInterface[string], obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		queue.Add(key)
	}
}

// RunWorkers waits for synced, then runs workers goroutines that take keys
// from queue and pass each to handle until ctx is done. A key whose sync
// fails is put back with the queue's backoff; one that succeeds is
// forgotten. It shuts queue down and returns nil when ctx is done, and an
// error only when the caches never filled.
func RunWorkers(ctx context.Context, name string, queue workqueue.TypedRateLimitingInterface[string], workers int,
	log *slog.Logger, handle func(ctx context.Context, key string) error, synced ...cache.InformerSynced) error {
	defer queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New(name + ": the caches did not sync")
	}
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for {
				key, quit := queue.Get()
				if quit {
					return
				}
				start := time.Now()
				err := handle(ctx, key)
				switch {
				case err == nil:
					queue.Forget(key)
				case ctx.Err() != nil:
				case errors.As(err, new(quietError)):
					log.Debug("not done yet; retrying", "key", key, "err", err)
					queue.AddRateLimited(key)
				default:
					log.Warn("sync failed; retrying", "key", key, "err", err, "took", time.Since(start))
					queue.AddRateLimited(key)
				}
				queue.Done(key)
			}
		})
	}
	<-ctx.Done()
	queue.ShutDown()
	wg.Wait()
	return nil
}

// Quiet wraps err, a sync's answer that it is not done yet and wants to
// be retried with the queue's backoff, for an expected reason (an access
// review that does not allow it yet): RunWorkers logs it at debug level
// rather than as a warning.
func Quiet(err error) error { return quietError{err} }

type quietError struct{ err error }

func (e quietError) Error() string { return e.err.Error() }
func (e quietError) Unwrap() error { return e.err }

// PodNodeNameIndex is the index of pods by spec.nodeName that controllers
// reading the pods of one node share.
const PodNodeNameIndex = "spec.nodeName"

// AddPodNodeNameIndex adds PodNodeNameIndex to a pod informer, once; the
// informer must not have started.
func AddPodNodeNameIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[PodNodeNameIndex]; ok {
		return nil
	}
	return inf.AddIndexers(cache.Indexers{PodNodeNameIndex: func(obj any) ([]string, error) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
			return []string{pod.Spec.NodeName}, nil
		}
		return nil, nil
	}})
}

// PodsOnNode lists the pods an informer with PodNodeNameIndex has on node.
func PodsOnNode(inf cache.SharedIndexInformer, node string) ([]*corev1.Pod, error) {
	objs, err := inf.GetIndexer().ByIndex(PodNodeNameIndex, node)
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// Unwrap returns the object a tombstone holds: an informer hands a delete
// handler a cache.DeletedFinalStateUnknown when it missed the deletion and
// learnt of it only by relisting. Any other obj is returned as it is.
func Unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}
