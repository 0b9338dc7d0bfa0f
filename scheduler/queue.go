package scheduler

import (
	"container/heap"
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Default backoff of pods that could not be scheduled (kube-scheduler's
// podInitialBackoffSeconds and podMaxBackoffSeconds).
const (
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 10 * time.Second
)

// Queue holds the pods waiting to be scheduled in three places, as
// kube-scheduler's does: active (ready now, highest priority then oldest
// first), backoff (failed recently; ready when the backoff expires) and
// unschedulable (did not fit; moved out when the cluster changes).
type Queue struct {
	clock          clock.PassiveClock
	initial, limit time.Duration

	mu            sync.Mutex
	ready         chan struct{} // signalled when active gains a pod
	active        podHeap
	backoff       map[types.UID]*queuedPod
	unschedulable map[types.UID]*queuedPod
	all           map[types.UID]*queuedPod
	// cycle counts Pops, and moveCycle is the cycle of the last
	// MoveAllToActiveOrBackoff: a pod popped before the cluster changed
	// was tried against the old cluster, so it must not wait for a change
	// that has already happened (kube's moveRequestCycle).
	cycle, moveCycle int64
}

type queuedPod struct {
	pod      *v1.Pod
	attempts int
	popped   int64 // the queue's cycle when it was last popped
	added    time.Time
	until    time.Time // end of backoff
	index    int       // in active, or -1
}

// NewQueue returns an empty queue; zero durations mean the defaults.
func NewQueue(c clock.PassiveClock, initial, limit time.Duration) *Queue {
	if initial <= 0 {
		initial = DefaultInitialBackoff
	}
	if limit <= 0 {
		limit = DefaultMaxBackoff
	}
	return &Queue{
		clock: c, initial: initial, limit: limit, ready: make(chan struct{}, 1),
		backoff: map[types.UID]*queuedPod{}, unschedulable: map[types.UID]*queuedPod{}, all: map[types.UID]*queuedPod{},
	}
}

// Add queues a new pod, or refreshes a queued one; a pod waiting as
// unschedulable whose spec or labels changed goes back to active (status
// and annotation updates, such as the scheduler's own, do not count).
func (q *Queue) Add(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp, ok := q.all[pod.UID]; ok {
		changed := !equality.Semantic.DeepEqual(qp.pod.Spec, pod.Spec) || !equality.Semantic.DeepEqual(qp.pod.Labels, pod.Labels)
		qp.pod = pod
		if _, waiting := q.unschedulable[pod.UID]; waiting && changed {
			delete(q.unschedulable, pod.UID)
			q.pushActive(qp)
		}
		return
	}
	qp := &queuedPod{pod: pod, added: q.clock.Now(), index: -1}
	q.all[pod.UID] = qp
	q.pushActive(qp)
}

// Delete forgets the pod.
func (q *Queue) Delete(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	qp, ok := q.all[uid]
	if !ok {
		return
	}
	delete(q.all, uid)
	delete(q.backoff, uid)
	delete(q.unschedulable, uid)
	if qp.index >= 0 {
		heap.Remove(&q.active, qp.index)
	}
}

func (q *Queue) pushActive(qp *queuedPod) {
	heap.Push(&q.active, qp)
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Pop blocks until a pod is active or ctx ends, and returns the pod and how
// many attempts it has had. The pod stays known to the queue (so updates
// to it are not queued twice) until Done, Unschedulable or Backoff.
func (q *Queue) Pop(ctx context.Context) (*v1.Pod, int, bool) {
	for {
		q.mu.Lock()
		if q.active.Len() > 0 {
			qp := heap.Pop(&q.active).(*queuedPod)
			qp.attempts++
			q.cycle++
			qp.popped = q.cycle
			q.mu.Unlock()
			return qp.pod, qp.attempts, true
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, 0, false
		case <-q.ready:
		}
	}
}

// Done forgets a pod that was scheduled.
func (q *Queue) Done(uid types.UID) { q.Delete(uid) }

// Unschedulable parks a pod that fit no node until the cluster changes;
// if it changed while the pod was being tried, the pod only waits out its
// backoff.
func (q *Queue) Unschedulable(pod *v1.Pod) { q.park(pod, true) }

// Backoff parks a pod that failed for another reason until its backoff
// expires.
func (q *Queue) Backoff(pod *v1.Pod) { q.park(pod, false) }

func (q *Queue) park(pod *v1.Pod, unschedulable bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	qp, ok := q.all[pod.UID]
	if !ok || qp.index >= 0 {
		return // deleted meanwhile, or already re-queued by an update
	}
	qp.until = q.clock.Now().Add(q.backoffFor(qp.attempts))
	if unschedulable && q.moveCycle < qp.popped {
		q.unschedulable[pod.UID] = qp
		return
	}
	q.backoff[pod.UID] = qp
}

// backoffFor is initial·2^(attempts−1), at most the limit.
func (q *Queue) backoffFor(attempts int) time.Duration {
	d := q.initial
	for i := 1; i < attempts && d < q.limit; i++ {
		d *= 2
	}
	return min(d, q.limit)
}

// MoveAllToActiveOrBackoff is called when the cluster changes (a node was
// added or updated, a pod left): unschedulable pods whose backoff has
// expired become active, the others wait out their backoff.
func (q *Queue) MoveAllToActiveOrBackoff() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.moveCycle = q.cycle
	now := q.clock.Now()
	for uid, qp := range q.unschedulable {
		delete(q.unschedulable, uid)
		if now.Before(qp.until) {
			q.backoff[uid] = qp
		} else {
			q.pushActive(qp)
		}
	}
}

// FlushBackoff makes active every backoff pod whose backoff has expired;
// the scheduler calls it every second.
func (q *Queue) FlushBackoff() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for uid, qp := range q.backoff {
		if !now.Before(qp.until) {
			delete(q.backoff, uid)
			q.pushActive(qp)
		}
	}
}

// Len returns the number of pods in active, backoff and unschedulable.
func (q *Queue) Len() (active, backoff, unschedulable int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active.Len(), len(q.backoff), len(q.unschedulable)
}

// podHeap orders by priority (higher first), then by time added.
type podHeap []*queuedPod

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

func (h podHeap) Len() int { return len(h) }
func (h podHeap) Less(i, j int) bool {
	pi, pj := priority(h[i].pod), priority(h[j].pod)
	if pi != pj {
		return pi > pj
	}
	return h[i].added.Before(h[j].added)
}
func (h podHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *podHeap) Push(x any) {
	qp := x.(*queuedPod)
	qp.index = len(*h)
	*h = append(*h, qp)
}
func (h *podHeap) Pop() any {
	old := *h
	qp := old[len(old)-1]
	*h = old[:len(old)-1]
	qp.index = -1
	return qp
}
