package nodesim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/internal/cachetrim"
)

// maxRetries is how many times a failing pod write is retried (with
// backoff) before the pod is left until its next change.
const maxRetries = 15

// podSync moves the pods bound to the simulator's nodes through their
// lifecycle. One watch covers every node: pods with spec.nodeName set,
// filtered here by node name.
type podSync struct {
	s       *Simulator
	factory informers.SharedInformerFactory
	synced  cache.InformerSynced
	pods    corelisters.PodLister
	queue   workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex               // guards the maps below and every node's used and next
	due     map[types.UID]time.Time  // when a pod seen Pending may be Running
	ips     map[types.UID]podAddress // addresses handed out
	started map[types.UID]time.Time  // when a running pod's containers last started
	wake    map[types.UID]time.Time  // when a running pod is next looked at
	warned  map[warnKey]bool         // bad annotations logged
}

// podAddress is a pod's address: host byte h of its node's pod /24.
type podAddress struct {
	n *node
	h int
}

func newPodSync(s *Simulator) *podSync {
	p := &podSync{s: s, due: map[types.UID]time.Time{}, ips: map[types.UID]podAddress{},
		started: map[types.UID]time.Time{}, wake: map[types.UID]time.Time{}, warned: map[warnKey]bool{}}
	// The pods are kept without their managedFields, which nodes never
	// read, as kube-scheduler keeps its pods.
	p.factory = informers.NewSharedInformerFactoryWithOptions(s.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName!=" }),
		informers.WithTransform(cachetrim.StripManagedFields))
	inf := p.factory.Core().V1().Pods()
	p.pods = inf.Lister()
	p.synced = inf.Informer().HasSynced
	p.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 10*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{})
	// AddEventHandler fails only on a started, stopped informer.
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.enqueue(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { p.enqueue(obj.(*corev1.Pod)) },
		DeleteFunc: p.onDelete,
	})
	return p
}

// node is the simulated node pod is bound to, or nil.
func (p *podSync) node(pod *corev1.Pod) *node {
	n := p.s.nodes[pod.Spec.NodeName]
	if n == nil || n.gone.Load() {
		return nil
	}
	return n
}

func (p *podSync) enqueue(pod *corev1.Pod) {
	if p.node(pod) != nil {
		p.queue.Add(pod.Namespace + "/" + pod.Name)
	}
}

func (p *podSync) onDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		p.forget(pod.UID)
	}
}

// forget drops what is kept about a pod and frees its address.
func (p *podSync) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.due, uid)
	delete(p.started, uid)
	delete(p.wake, uid)
	for k := range p.warned {
		if k.uid == uid {
			delete(p.warned, k)
		}
	}
	p.release(uid)
}

// release frees the address handed out to a pod; p.mu is held.
func (p *podSync) release(uid types.UID) {
	if a, ok := p.ips[uid]; ok {
		a.n.used[a.h] = false
		delete(p.ips, uid)
	}
}

func (p *podSync) run(ctx context.Context) {
	p.factory.Start(ctx.Done())
	defer p.factory.Shutdown()
	defer p.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), p.synced) {
		return
	}
	var wg sync.WaitGroup
	for range p.s.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p.next(ctx) {
			}
		}()
	}
	<-ctx.Done()
	p.queue.ShutDown()
	wg.Wait()
}

func (p *podSync) next(ctx context.Context) bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	err := p.sync(ctx, key)
	switch {
	case err == nil || ctx.Err() != nil:
		p.queue.Forget(key)
	case p.queue.NumRequeues(key) < maxRetries:
		if !apierrors.IsConflict(err) {
			p.s.log.Warn("simulated pod update failed; retrying", "pod", key, "err", err)
		}
		p.queue.AddRateLimited(key)
	default:
		p.s.log.Error("simulated pod update failed; giving up until the pod changes", "pod", key, "err", err)
		p.queue.Forget(key)
	}
	return true
}

// sync takes one pod a step on: ContainerCreating, Running, Ready,
// exited (or restarted), or for a pod being deleted, terminated and gone.
func (p *podSync) sync(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	pod, err := p.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	n := p.node(pod)
	switch {
	case n == nil:
		return nil
	case pod.DeletionTimestamp != nil:
		return p.finish(ctx, n, pod)
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return nil
	case pod.Status.Phase == corev1.PodRunning:
		p.adopt(n, pod)
		return p.progress(ctx, n, pod)
	}
	now := p.s.clock.Now()
	p.mu.Lock()
	due, seen := p.due[pod.UID]
	if !seen {
		due = now.Add(p.s.opts.RunningDelay)
		p.due[pod.UID] = due
		if p.s.opts.RunningDelay > 0 {
			p.syncAt(key, due)
		}
	}
	p.mu.Unlock()
	upd := pod.DeepCopy()
	if now.Before(due) {
		if pod.Status.HostIP != "" {
			return nil // already ContainerCreating
		}
		upd.Status = creatingStatus(pod, n, metav1.NewTime(now))
	} else {
		ip, err := p.address(n, pod)
		if err != nil {
			return err
		}
		lc := p.lifecycle(pod)
		upd.Status = runningStatus(pod, n, ip, lc.readyAfter == 0, metav1.NewTime(now))
		upd.Status, _ = withSpec(pod, upd.Status, metav1.NewTime(now))
	}
	_, err = p.s.client.CoreV1().Pods(ns).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		p.forget(pod.UID)
		return nil
	}
	if err == nil && upd.Status.Phase == corev1.PodRunning {
		p.mu.Lock()
		delete(p.due, pod.UID)
		p.started[pod.UID] = now
		p.mu.Unlock()
	}
	return err
}

// progress moves a running pod on by its lifecycle: Ready once ready-after
// has passed since its containers started, and its containers exited once
// complete-after has (then restarted, or the pod finished, by its restart
// policy); ephemeral containers added and resources resized are reported
// at once. It wakes itself for the next step.
func (p *podSync) progress(ctx context.Context, n *node, pod *corev1.Pod) error {
	lc := p.lifecycle(pod)
	now := p.s.clock.Now()
	mnow := metav1.NewTime(now)
	start := p.runStart(pod, now)
	var st *corev1.PodStatus
	if lc.complete && !now.Before(start.Add(lc.runFor(pod))) {
		if !restarts(pod, lc.exitCode) {
			return p.writeStatus(ctx, pod, exitedStatus(pod, n, lc.exitCode, mnow), time.Time{})
		}
		start = now
		st = ptr.To(restartedStatus(pod, lc.exitCode, lc.readyAfter == 0, mnow))
	}
	ready := !now.Before(start.Add(lc.readyAfter))
	if st == nil && podReady(pod) != ready {
		st = ptr.To(readinessStatus(pod, ready, mnow))
	}
	var next time.Time
	if !ready {
		next = start.Add(lc.readyAfter)
	}
	if end := start.Add(lc.runFor(pod)); lc.complete && (next.IsZero() || end.Before(next)) {
		next = end
	}
	p.wakeAt(pod, next)
	base := pod.Status
	if st != nil {
		base = *st
	}
	if upd, changed := withSpec(pod, base, mnow); changed {
		st = &upd
	}
	if st == nil {
		return nil
	}
	return p.writeStatus(ctx, pod, *st, start)
}

// minRun is the least containers that will be restarted run before they
// exit, so that complete-after 0 with restarts does not spin.
const minRun = time.Second

// runFor is how long the pod's containers run before they exit.
func (lc lifecycle) runFor(pod *corev1.Pod) time.Duration {
	if restarts(pod, lc.exitCode) {
		return max(lc.completeAfter, minRun)
	}
	return lc.completeAfter
}

// writeStatus writes st as pod's status and, for a running pod, records
// start as when its containers started.
func (p *podSync) writeStatus(ctx context.Context, pod *corev1.Pod, st corev1.PodStatus, start time.Time) error {
	upd := pod.DeepCopy()
	upd.Status = st
	_, err := p.s.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		p.forget(pod.UID)
		return nil
	}
	if err == nil {
		p.mu.Lock()
		if st.Phase == corev1.PodRunning {
			p.started[pod.UID] = start
		} else {
			p.release(pod.UID) // a finished pod's sandbox is gone
		}
		p.mu.Unlock()
	}
	return err
}

// runStart is when a running pod's containers last started: recorded when
// they were started here, or else read from its status (a pod found
// running after a restart of the simulator).
func (p *podSync) runStart(pod *corev1.Pod, now time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.started[pod.UID]; ok {
		return t
	}
	var t time.Time
	for _, cs := range pod.Status.ContainerStatuses {
		if r := cs.State.Running; r != nil && r.StartedAt.After(t) {
			t = r.StartedAt.Time
		}
	}
	if t.IsZero() {
		t = now
	}
	p.started[pod.UID] = t
	return t
}

// wakeAt has pod synced again at t, unless that is already arranged; a
// zero t asks for nothing.
func (p *podSync) wakeAt(pod *corev1.Pod, t time.Time) {
	if t.IsZero() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.wake[pod.UID]; ok && w.Equal(t) {
		return
	}
	p.wake[pod.UID] = t
	p.syncAt(pod.Namespace+"/"+pod.Name, t)
}

// syncAt has key synced at t. The wait is measured from the clock as it
// reads now, not as it read when t was worked out, so that a clock moved
// meanwhile neither delays the sync nor loses it; a t already reached is
// synced at once (a fake clock fires a timer only when it is next moved).
func (p *podSync) syncAt(key string, t time.Time) {
	if d := t.Sub(p.s.clock.Now()); d > 0 {
		p.s.clock.AfterFunc(d, func() { p.queue.Add(key) })
		return
	}
	p.queue.Add(key)
}

// podReady reports whether pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// finish reports the containers of a pod being deleted as terminated and
// deletes it with grace period 0, only if it is still the same pod.
func (p *podSync) finish(ctx context.Context, n *node, pod *corev1.Pod) error {
	pods := p.s.client.CoreV1().Pods(pod.Namespace)
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		upd := pod.DeepCopy()
		upd.Status = exitedStatus(pod, n, 0, metav1.NewTime(p.s.clock.Now()))
		_, err := pods.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			p.forget(pod.UID)
			return nil
		}
		if err != nil {
			return err
		}
	}
	err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
		Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) { // conflict: another pod of that name now
		return err
	}
	p.forget(pod.UID)
	return nil
}

// address is the pod's IP: the node's for a host-network pod, otherwise the
// one handed out before, or the next free one in the node's pod CIDR.
func (p *podSync) address(n *node, pod *corev1.Pod) (netip.Addr, error) {
	if pod.Spec.HostNetwork {
		return n.hostIP, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.ips[pod.UID]; ok {
		return a.addr(), nil
	}
	for range MaxPods {
		h := 2 + n.next%MaxPods // .1 is the node's bridge, .255 broadcast
		n.next++
		if !n.used[h] {
			n.used[h] = true
			p.ips[pod.UID] = podAddress{n, h}
			return podAddress{n, h}.addr(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("node %s: pod CIDR %s is full", n.name, n.podNet)
}

// adopt records the address of a pod found Running (say, after a restart)
// so that it is not handed out again.
func (p *podSync) adopt(n *node, pod *corev1.Pod) {
	ip, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil || !n.podNet.Contains(ip) {
		return
	}
	h := int(ip.As4()[3])
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.ips[pod.UID]; !ok && !n.used[h] {
		n.used[h] = true
		p.ips[pod.UID] = podAddress{n, h}
	}
}

func (a podAddress) addr() netip.Addr {
	b := a.n.podNet.Addr().As4()
	b[3] = byte(a.h)
	return netip.AddrFrom4(b)
}

// containerID is a stable made-up runtime ID for a pod's container.
func containerID(uid types.UID, name string) string {
	sum := sha256.Sum256([]byte(string(uid) + "/" + name))
	return "kubegate://" + hex.EncodeToString(sum[:])
}
