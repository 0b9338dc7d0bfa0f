// Package replicaset is kube-controller-manager's ReplicaSet controller
// ("replicaset") and, with the same code, its ReplicationController
// controller ("replicationcontroller"): each keeps as many active pods as
// its object asks for, creating them from the template in batches that
// double while they succeed, deleting the surplus in kube's order of
// preference, adopting matching orphans and releasing pods it no longer
// selects, and reports the counts in the object's status
// (docs/kubernetes-behaviour.md, G.2).
//
// The identity it runs as needs: replicasets (or replicationcontrollers)
// list, watch, get and update of status; pods list, watch, create, delete
// and patch; events create and patch.
package replicaset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/ownership"
)

// Descriptor runs the ReplicaSet controller in the controller manager.
var Descriptor = controllers.Descriptor{Name: "replicaset", ServiceAccount: "replicaset-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return newController(c, replicaSetKind(c))
}}

// RCDescriptor runs the ReplicationController controller in the
// controller manager.
var RCDescriptor = controllers.Descriptor{Name: "replicationcontroller", ServiceAccount: "replication-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return newController(c, replicationControllerKind(c))
}}

const (
	// BurstReplicas is the most pods one sync creates or deletes.
	BurstReplicas = 500
	// Workers is how many objects are synced at once, kube's
	// --concurrent-replicaset-syncs default.
	Workers = 5
	// expectationsTimeout is how long expectations are waited for before
	// they are given up: a pod released before its deletion was seen
	// never reports it.
	expectationsTimeout = 5 * time.Minute
	// podOwnerIndex indexes pods by their controller, orphans by
	// namespace.
	podOwnerIndex = "replicaset.kubegate.io/controller"
)

// Event reasons, as kube records them.
const (
	reasonSuccessfulCreate = "SuccessfulCreate"
	reasonFailedCreate     = "FailedCreate"
	reasonSuccessfulDelete = "SuccessfulDelete"
	reasonFailedDelete     = "FailedDelete"
)

// Controller syncs the objects of one kind.
type Controller struct {
	kind   *kind
	client kubernetes.Interface
	log    *slog.Logger
	now    func() time.Time

	pods       corelisters.PodLister
	podIndex   cache.Indexer
	podsSynced cache.InformerSynced
	synced     cache.InformerSynced

	queue        workqueue.TypedRateLimitingInterface[string]
	expectations ownership.Expectations
	// deleting holds, per object key, the keys of the pods whose deletion
	// it expects, so that each is counted once however many events show
	// it (a deletion timestamp, then the deletion).
	mu       sync.Mutex
	deleting map[string]map[string]bool
	// expectedAt is when the expectations of each key were set.
	expectedAt map[string]time.Time

	recorder    record.EventRecorder
	startEvents func() (stop func())
	burst       int
}

func newController(c *controllers.Context, k *kind) (*Controller, error) {
	if c.Client == nil {
		return nil, errors.New(k.name + ": a client is required")
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	rc := &Controller{kind: k, client: c.Client, log: log, now: now, deleting: map[string]map[string]bool{}, expectedAt: map[string]time.Time{},
		queue: controllers.NewQueue(k.name), burst: BurstReplicas}
	rc.recorder, rc.startEvents = controllers.NewLazyRecorder(rc.client, k.component)

	_, _ = k.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { controllers.Enqueue(rc.queue, obj) },
		UpdateFunc: rc.updateOwner,
		DeleteFunc: rc.deleteOwner,
	})
	rc.synced = k.informer.HasSynced

	pods := c.Informers.Core().V1().Pods()
	inf := pods.Informer()
	if _, ok := inf.GetIndexer().GetIndexers()[podOwnerIndex]; !ok {
		if err := inf.AddIndexers(cache.Indexers{podOwnerIndex: indexPodOwner}); err != nil {
			return nil, fmt.Errorf("%s: index pods: %w", k.name, err)
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    rc.addPod,
		UpdateFunc: rc.updatePod,
		DeleteFunc: rc.deletePod,
	})
	rc.pods = pods.Lister()
	rc.podIndex = inf.GetIndexer()
	rc.podsSynced = inf.HasSynced
	return rc, nil
}

// indexPodOwner files a pod under its namespace and controller's kind,
// name and UID, or under its namespace alone when it has no controller.
func indexPodOwner(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	return []string{ownerIndexKey(p.Namespace, metav1.GetControllerOfNoCopy(p))}, nil
}

func ownerIndexKey(ns string, ref *metav1.OwnerReference) string {
	if ref == nil {
		return ns
	}
	return ns + "/" + ref.Kind + "/" + ref.Name + "/" + string(ref.UID)
}

// Run syncs objects until ctx is done.
func (rc *Controller) Run(ctx context.Context) error {
	defer rc.startEvents()()
	return controllers.RunWorkers(ctx, rc.kind.name, rc.queue, Workers, rc.log, rc.sync, rc.synced, rc.podsSynced)
}

func key(ns, name string) string { return ns + "/" + name }

func (rc *Controller) updateOwner(oldObj, newObj any) {
	old, cur := asReplicaSet(oldObj), asReplicaSet(newObj)
	if old == nil || cur == nil {
		return
	}
	if old.UID != cur.UID {
		// Replaced under the same name: the old one's expectations go.
		rc.forget(key(old.Namespace, old.Name))
	}
	controllers.Enqueue(rc.queue, newObj)
}

func (rc *Controller) deleteOwner(obj any) {
	rs := asReplicaSet(obj)
	if rs == nil {
		return
	}
	k := key(rs.Namespace, rs.Name)
	rc.forget(k)
	rc.queue.Add(k)
}

func (rc *Controller) forget(k string) {
	rc.expectations.Forget(k)
	rc.mu.Lock()
	delete(rc.deleting, k)
	delete(rc.expectedAt, k)
	rc.mu.Unlock()
}

// expect records that add creations and del deletions are on their way
// for k.
func (rc *Controller) expect(k string, add, del int) {
	rc.mu.Lock()
	rc.expectedAt[k] = rc.now()
	rc.mu.Unlock()
	rc.expectations.Expect(k, add, del)
}

// satisfied reports whether k expects nothing more, giving up
// expectations older than expectationsTimeout.
func (rc *Controller) satisfied(k string) bool {
	if rc.expectations.Satisfied(k) {
		return true
	}
	rc.mu.Lock()
	at, ok := rc.expectedAt[k]
	rc.mu.Unlock()
	if ok && rc.now().Sub(at) > expectationsTimeout {
		rc.log.Info("expectations timed out", "kind", rc.kind.gvk.Kind, "key", k)
		rc.forget(k)
		return true
	}
	return false
}

// resolve returns the object a controller reference names, if it is of
// this kind and still the same object.
func (rc *Controller) resolve(ns string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref == nil || ref.Kind != rc.kind.gvk.Kind {
		return nil
	}
	rs, err := rc.kind.get(ns, ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

// selecting returns the objects whose selector matches an orphan pod.
func (rc *Controller) selecting(p *corev1.Pod) []*appsv1.ReplicaSet {
	all, err := rc.kind.list(p.Namespace)
	if err != nil {
		return nil
	}
	var out []*appsv1.ReplicaSet
	for _, rs := range all {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, rs)
		}
	}
	return out
}

func (rc *Controller) enqueueRS(rs *appsv1.ReplicaSet) { rc.queue.Add(key(rs.Namespace, rs.Name)) }

func (rc *Controller) addPod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if p.DeletionTimestamp != nil {
		rc.deletePod(p)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		if rs := rc.resolve(p.Namespace, ref); rs != nil {
			k := key(rs.Namespace, rs.Name)
			rc.expectations.Observed(k, true)
			rc.queue.Add(k)
		}
		return
	}
	for _, rs := range rc.selecting(p) {
		rc.enqueueRS(rs)
	}
}

func (rc *Controller) updatePod(oldObj, newObj any) {
	old, okOld := oldObj.(*corev1.Pod)
	cur, okCur := newObj.(*corev1.Pod)
	if !okOld || !okCur || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	labelsChanged := !maps.Equal(old.Labels, cur.Labels)
	if cur.DeletionTimestamp != nil {
		rc.deletePod(cur)
		if labelsChanged {
			rc.deletePod(old)
		}
		return
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if rs := rc.resolve(old.Namespace, oldRef); rs != nil {
			rc.enqueueRS(rs)
		}
	}
	if curRef != nil {
		rs := rc.resolve(cur.Namespace, curRef)
		if rs == nil {
			return
		}
		rc.enqueueRS(rs)
		// A pod that just became ready is available minReadySeconds
		// later: look again then.
		if !controllers.PodReady(old) && controllers.PodReady(cur) && rs.Spec.MinReadySeconds > 0 {
			rc.queue.AddAfter(key(rs.Namespace, rs.Name), time.Duration(rs.Spec.MinReadySeconds)*time.Second)
		}
		return
	}
	if labelsChanged || refChanged {
		for _, rs := range rc.selecting(cur) {
			rc.enqueueRS(rs)
		}
	}
}

func (rc *Controller) deletePod(obj any) {
	obj = controllers.Unwrap(obj)
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil {
		return
	}
	rs := rc.resolve(p.Namespace, ref)
	if rs == nil {
		return
	}
	k := key(rs.Namespace, rs.Name)
	rc.deletionObserved(k, key(p.Namespace, p.Name))
	rc.queue.Add(k)
}

// expectDeletions records that pods are being deleted for k.
func (rc *Controller) expectDeletions(k string, pods []*corev1.Pod) {
	set := make(map[string]bool, len(pods))
	for _, p := range pods {
		set[key(p.Namespace, p.Name)] = true
	}
	rc.mu.Lock()
	rc.deleting[k] = set
	rc.mu.Unlock()
	rc.expect(k, 0, len(pods))
}

// deletionObserved counts the deletion of pod for k once, if k expects
// it.
func (rc *Controller) deletionObserved(k, pod string) {
	rc.mu.Lock()
	expected := rc.deleting[k][pod]
	delete(rc.deleting[k], pod)
	rc.mu.Unlock()
	if expected {
		rc.expectations.Observed(k, false)
	}
}

// sync brings one object's pods and status in step with it.
func (rc *Controller) sync(ctx context.Context, k string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(k)
	if err != nil {
		return nil
	}
	rs, err := rc.kind.get(ns, name)
	if apierrors.IsNotFound(err) {
		rc.forget(k)
		return nil
	}
	if err != nil {
		return err
	}
	satisfied := rc.satisfied(k)
	if !satisfied {
		// Look again when the expectations would be given up, should no
		// event come first.
		rc.queue.AddAfter(k, expectationsTimeout)
	}
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		rc.log.Warn("invalid selector", "kind", rc.kind.gvk.Kind, "key", k, "err", err)
		return nil
	}
	// Its own pods and the orphans of its namespace, from the cache.
	var candidates []*corev1.Pod
	for _, ik := range []string{ownerIndexKey(ns, &metav1.OwnerReference{Kind: rc.kind.gvk.Kind, Name: name, UID: rs.UID}), ns} {
		objs, err := rc.podIndex.ByIndex(podOwnerIndex, ik)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok {
				candidates = append(candidates, p)
			}
		}
	}
	var active []*corev1.Pod
	for _, p := range candidates {
		if isActive(p) {
			active = append(active, p)
		}
	}
	active, err = ownership.Claim(ctx, rs, rc.kind.gvk, selector, active, rc.stillLive(rs), ownership.PodPatcher(rc.client))
	if err != nil {
		return err
	}
	var terminating *int32
	if rc.kind.terminating {
		n := int32(0)
		for _, p := range candidates {
			if isTerminating(p) && metav1.IsControlledBy(p, rs) && selector.Matches(labels.Set(p.Labels)) {
				n++
			}
		}
		terminating = &n
	}

	var manageErr error
	if satisfied && rs.DeletionTimestamp == nil {
		manageErr = rc.manage(ctx, k, rs, active)
	}
	rs = rs.DeepCopy()
	now := rc.now()
	status := calculateStatus(rs, active, terminating, manageErr, now)
	updated, err := rc.writeStatus(ctx, rs, status)
	if err != nil {
		return err
	}
	if manageErr != nil {
		return manageErr
	}
	// With minReadySeconds, look again when the next ready pod becomes
	// available.
	if updated.Spec.MinReadySeconds > 0 && updated.Status.ReadyReplicas != updated.Status.AvailableReplicas {
		next := time.Duration(updated.Spec.MinReadySeconds) * time.Second
		var first *corev1.Pod
		for _, p := range active {
			if d, ok := untilAvailable(p, updated.Spec.MinReadySeconds, now); ok && (first == nil || d < next) {
				next, first = d, p
			}
		}
		if first != nil {
			next = 0
			if d, ok := untilAvailable(first, updated.Spec.MinReadySeconds, rc.now()); ok {
				next = d
			}
		}
		rc.queue.AddAfter(k, next)
	}
	return nil
}

// stillLive rereads rs from the API server before an adoption: it must be
// the same object, not being deleted.
func (rc *Controller) stillLive(rs *appsv1.ReplicaSet) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		fresh, err := rc.kind.fresh(ctx, rs.Namespace, rs.Name)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return fresh.UID == rs.UID && fresh.DeletionTimestamp == nil, nil
	}
}

// manage creates or deletes pods so that rs has as many active pods as it
// asks for, at most burst at a time.
func (rc *Controller) manage(ctx context.Context, k string, rs *appsv1.ReplicaSet, active []*corev1.Pod) error {
	diff := len(active) - int(replicas(rs))
	switch {
	case diff < 0:
		n := min(-diff, rc.burst)
		rc.expect(k, n, 0)
		created, err := slowStart(n, func() error { return rc.createPod(ctx, rs) })
		// Creations never attempted will not be seen: stop expecting them.
		for range n - created {
			rc.expectations.Observed(k, true)
		}
		return err
	case diff > 0:
		n := min(diff, rc.burst)
		family, err := rc.familyPods(rs)
		if err != nil {
			rc.log.Warn("list related pods", "kind", rc.kind.gvk.Kind, "key", k, "err", err)
		}
		victims := podsToDelete(active, family, n, rc.now())
		rc.expectDeletions(k, victims)
		errs := make(chan error, len(victims))
		var wg sync.WaitGroup
		for _, p := range victims {
			wg.Go(func() {
				if err := rc.deletePodFor(ctx, rs, p.Name); err != nil {
					rc.deletionObserved(k, key(p.Namespace, p.Name))
					if !apierrors.IsNotFound(err) {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	return nil
}

// replicas is how many pods rs asks for; the API server defaults it to 1.
func replicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// slowStart calls fn count times in batches of 1, 2, 4, …, each batch at
// once, and stops after a batch in which any call failed. It returns how
// many calls succeeded and the first error.
func slowStart(count int, fn func() error) (int, error) {
	done := 0
	for batch := min(count, 1); batch > 0; batch = min(2*batch, count-done) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Go(func() {
				if err := fn(); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		failed := len(errs)
		done += batch - failed
		if failed > 0 {
			return done, <-errs
		}
	}
	return done, nil
}

// createPod creates one pod from rs's template and records the event. A
// namespace being deleted refuses every pod; that is not a failure.
func (rc *Controller) createPod(ctx context.Context, rs *appsv1.ReplicaSet) error {
	if len(rs.Spec.Template.Labels) == 0 {
		return errors.New("unable to create pods, no labels")
	}
	pod := ownership.PodFromTemplate(&rs.Spec.Template, rs, rc.kind.gvk)
	if len(pod.GenerateName) > 253 {
		pod.GenerateName = rs.Name
	}
	created, err := rc.client.CoreV1().Pods(rs.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		rc.recorder.Eventf(rc.kind.object(rs), corev1.EventTypeWarning, reasonFailedCreate, "Error creating: %v", err)
		return err
	}
	rc.recorder.Eventf(rc.kind.object(rs), corev1.EventTypeNormal, reasonSuccessfulCreate, "Created pod: %v", created.Name)
	return nil
}

func (rc *Controller) deletePodFor(ctx context.Context, rs *appsv1.ReplicaSet, name string) error {
	if err := rc.client.CoreV1().Pods(rs.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		rc.recorder.Eventf(rc.kind.object(rs), corev1.EventTypeWarning, reasonFailedDelete, "Error deleting: %v", err)
		return fmt.Errorf("unable to delete pods: %v", err)
	}
	rc.recorder.Eventf(rc.kind.object(rs), corev1.EventTypeNormal, reasonSuccessfulDelete, "Deleted pod: %v", name)
	return nil
}

// familyPods returns the pods of every object of this kind controlled by
// the same owner as rs (a Deployment's ReplicaSets), each once; none when
// rs has no controller.
func (rc *Controller) familyPods(rs *appsv1.ReplicaSet) ([]*corev1.Pod, error) {
	owner := metav1.GetControllerOfNoCopy(rs)
	if owner == nil {
		return nil, nil
	}
	all, err := rc.kind.list(rs.Namespace)
	if err != nil {
		return nil, err
	}
	seen := map[types.UID]bool{}
	var out []*corev1.Pod
	for _, other := range all {
		if ref := metav1.GetControllerOfNoCopy(other); ref == nil || ref.UID != owner.UID {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(other.Spec.Selector)
		if err != nil {
			continue
		}
		pods, err := rc.pods.Pods(other.Namespace).List(sel)
		if err != nil {
			return nil, err
		}
		for _, p := range pods {
			if !seen[p.UID] {
				seen[p.UID] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}
