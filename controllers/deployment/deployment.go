// Package deployment is kube-controller-manager's Deployment controller:
// it turns each Deployment into ReplicaSets, one per pod template it has
// had, and moves replicas between them as the strategy says
// (docs/kubernetes-behaviour.md, G.3).
//
//   - The ReplicaSet of the current template (the new one) is named
//     DEPLOYMENT-HASH, HASH being the pod-template-hash kube computes from
//     the template and status.collisionCount; the label
//     pod-template-hash=HASH is added to its selector, template and
//     labels, and it carries a controller reference to the Deployment.
//     ReplicaSets the selector matches are adopted, those it no longer
//     matches released.
//
//   - Revisions: the new ReplicaSet's deployment.kubernetes.io/revision is
//     one more than the highest of the old ones (an old template made
//     current again, as by kubectl rollout undo, moves its earlier
//     number to revision-history), and the Deployment carries the same.
//     The Deployment's other annotations, kubernetes.io/change-cause
//     among them, are copied to its new ReplicaSet; desired-replicas and
//     max-replicas record the Deployment's size when a ReplicaSet was
//     last scaled.
//
//   - RollingUpdate scales the new ReplicaSet up within maxSurge and the
//     old ones down within maxUnavailable, unhealthy old replicas first;
//     Recreate scales the old ones to zero and waits for their pods to be
//     gone before it creates or scales up the new one. A Deployment
//     scaled during a rollout, or while paused, has the difference shared
//     among its active ReplicaSets in proportion to their sizes. A paused
//     Deployment is only scaled.
//
//   - Old ReplicaSets scaled to zero beyond revisionHistoryLimit are
//     deleted once a rollout completes (or while paused).
//
//   - Status: the ReplicaSets' counts, observedGeneration, and the
//     Available and Progressing conditions with kube's reasons and
//     messages; a rollout that makes no progress for
//     progressDeadlineSeconds goes ProgressDeadlineExceeded.
//
//   - Events: ScalingReplicaSet "Scaled up replica set NAME from X to Y",
//     as deployment-controller.
//
//   - Rollback: kubectl rolls back client side, by putting an old
//     ReplicaSet's template back in the Deployment; the annotation
//     deprecated.deployment.rollback.to=REVISION (extensions/v1beta1's
//     spec.rollbackTo, carried through apps/v1) makes the controller do
//     the same, emitting DeploymentRollback, and removes the annotation.
//
// The identity it runs as needs: deployments get, list, watch, update;
// deployments/status update; replicasets get, list, watch, create,
// update, patch, delete; pods list, watch; events create, patch.
package deployment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/ownership"
)

// Descriptor runs the controller in the controller manager, as kube's
// "deployment" controller.
var Descriptor = controllers.Descriptor{Name: "deployment", ServiceAccount: "deployment-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c.Client, Options{Factory: c.Informers, Logger: c.Logger, Now: c.Now})
}}

// DefaultWorkers is how many Deployments are synced at once, kube's
// --concurrent-deployment-syncs default.
const DefaultWorkers = 5

var kind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Options configure a Controller.
type Options struct {
	// Factory is the shared informer factory to read Deployments,
	// ReplicaSets and pods from; the caller starts it. Required.
	Factory informers.SharedInformerFactory
	// Workers is how many Deployments are synced at once; 0 means
	// DefaultWorkers.
	Workers int
	// Logger receives the controller's logs; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of conditions and progress deadlines; nil means
	// time.Now.
	Now func() time.Time
}

// Controller rolls Deployments out as ReplicaSets.
type Controller struct {
	client      kubernetes.Interface
	opts        Options
	log         *slog.Logger
	now         func() time.Time
	recorder    record.EventRecorder
	startEvents func() (stop func())
	deployments appslisters.DeploymentLister
	replicaSets appslisters.ReplicaSetLister
	pods        corelisters.PodLister
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller that reads through o.Factory and writes
// through client. Run starts it.
func New(client kubernetes.Interface, o Options) (*Controller, error) {
	if client == nil || o.Factory == nil {
		return nil, errors.New("deployment: a client and an informer factory are required")
	}
	if o.Workers < 0 {
		return nil, fmt.Errorf("deployment: workers %d is negative", o.Workers)
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Controller{client: client, opts: o, log: o.Logger, now: o.Now, queue: controllers.NewQueue("deployment")}
	c.recorder, c.startEvents = controllers.NewLazyRecorder(c.client, "deployment-controller")
	dInf := o.Factory.Apps().V1().Deployments()
	rsInf := o.Factory.Apps().V1().ReplicaSets()
	podInf := o.Factory.Core().V1().Pods()
	c.deployments, c.replicaSets, c.pods = dInf.Lister(), rsInf.Lister(), podInf.Lister()
	c.synced = []cache.InformerSynced{dInf.Informer().HasSynced, rsInf.Informer().HasSynced, podInf.Informer().HasSynced}
	// AddEventHandler fails only on a started, stopped informer.
	_, _ = dInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { controllers.Enqueue(c.queue, obj) },
		UpdateFunc: func(_, obj any) { controllers.Enqueue(c.queue, obj) },
		DeleteFunc: func(obj any) { controllers.Enqueue(c.queue, obj) },
	})
	_, _ = rsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addReplicaSet,
		UpdateFunc: c.updateReplicaSet,
		DeleteFunc: c.deleteReplicaSet,
	})
	_, _ = podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.deletePod})
	return c, nil
}

// Run syncs Deployments until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	defer c.startEvents()()
	return controllers.RunWorkers(ctx, "deployment", c.queue, c.opts.Workers, c.log, c.sync, c.synced...)
}

// owner returns the Deployment ref points at, if it is one the cache
// holds with that UID.
func (c *Controller) owner(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	if ref == nil || ref.Kind != kind.Kind {
		return nil
	}
	d, err := c.deployments.Deployments(namespace).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

// selecting returns the Deployments whose selectors match rs's labels.
func (c *Controller) selecting(rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	if len(rs.Labels) == 0 {
		return nil
	}
	all, err := c.deployments.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.Deployment
	for _, d := range all {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(rs.Labels)) {
			continue
		}
		out = append(out, d)
	}
	return out
}

func (c *Controller) addReplicaSet(obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if rs.DeletionTimestamp != nil {
		c.deleteReplicaSet(rs)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		if d := c.owner(rs.Namespace, ref); d != nil {
			controllers.Enqueue(c.queue, d)
		}
		return
	}
	for _, d := range c.selecting(rs) {
		controllers.Enqueue(c.queue, d)
	}
}

func (c *Controller) updateReplicaSet(oldObj, obj any) {
	old, ok1 := oldObj.(*appsv1.ReplicaSet)
	rs, ok2 := obj.(*appsv1.ReplicaSet)
	if !ok1 || !ok2 || old.ResourceVersion == rs.ResourceVersion {
		return
	}
	oldRef, ref := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(rs)
	refChanged := !reflect.DeepEqual(oldRef, ref)
	if refChanged && oldRef != nil {
		if d := c.owner(old.Namespace, oldRef); d != nil {
			controllers.Enqueue(c.queue, d)
		}
	}
	if ref != nil {
		if d := c.owner(rs.Namespace, ref); d != nil {
			controllers.Enqueue(c.queue, d)
		}
		return
	}
	if refChanged || !reflect.DeepEqual(old.Labels, rs.Labels) {
		for _, d := range c.selecting(rs) {
			controllers.Enqueue(c.queue, d)
		}
	}
}

func (c *Controller) deleteReplicaSet(obj any) {
	obj = controllers.Unwrap(obj)
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if d := c.owner(rs.Namespace, metav1.GetControllerOfNoCopy(rs)); d != nil {
		controllers.Enqueue(c.queue, d)
	}
}

// deletePod wakes a Recreate Deployment, which waits for its old pods to
// be gone.
func (c *Controller) deletePod(obj any) {
	obj = controllers.Unwrap(obj)
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return
	}
	rs, err := c.replicaSets.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	if d := c.owner(rs.Namespace, metav1.GetControllerOfNoCopy(rs)); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		controllers.Enqueue(c.queue, d)
	}
}

// sync brings the Deployment named key in step.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.deployments.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	err = c.syncDeployment(ctx, cached.DeepCopy())
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil // nothing more can be created there
	case apierrors.IsConflict(err):
		// A write raced the caches, which are about to catch up: try
		// again shortly, without a warning.
		c.log.Debug("sync raced a write; retrying", "deployment", key, "err", err)
		c.queue.AddRateLimited(key)
		return nil
	}
	return err
}

func (c *Controller) syncDeployment(ctx context.Context, d *appsv1.Deployment) error {
	if d.Spec.Selector == nil || reflect.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{}) {
		c.recorder.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			_, _ = c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		}
		return nil
	}
	rss, err := c.claim(ctx, d)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		newRS, old, err := c.newAndOld(ctx, d, rss, false)
		if err != nil {
			return err
		}
		return c.syncStatus(ctx, append(old, newRS), newRS, d)
	}
	if err := c.checkPaused(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return c.scaleOnly(ctx, d, rss)
	}
	if _, ok := rollbackTo(d); ok {
		return c.rollback(ctx, d, rss)
	}
	scaling, err := c.isScalingEvent(ctx, d, rss)
	if err != nil {
		return err
	}
	if scaling {
		return c.scaleOnly(ctx, d, rss)
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		return c.rolloutRecreate(ctx, d, rss)
	case appsv1.RollingUpdateDeploymentStrategyType:
		return c.rolloutRolling(ctx, d, rss)
	}
	return fmt.Errorf("unexpected deployment strategy type: %s", d.Spec.Strategy.Type)
}

// claim returns the ReplicaSets d controls once it has adopted the
// orphans its selector matches and released those it no longer does.
func (c *Controller) claim(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	all, err := c.replicaSets.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s has invalid label selector: %v", d.Namespace, d.Name, err)
	}
	fresh := ownership.Recheck(d, func(ctx context.Context) (metav1.Object, error) {
		return c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	})
	patch := func(ctx context.Context, namespace, name string, body []byte) error {
		_, err := c.client.AppsV1().ReplicaSets(namespace).Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
		return err
	}
	return ownership.Claim(ctx, d, kind, sel, all, fresh, patch)
}

// checkPaused records pausing and resuming in the Progressing condition,
// so that the time spent paused does not count against the progress
// deadline; a deadline already exceeded is left as it is.
func (c *Controller) checkPaused(ctx context.Context, d *appsv1.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	cur := getCondition(&d.Status, appsv1.DeploymentProgressing)
	if cur != nil && cur.Reason == ReasonProgressDeadlineExceeded {
		return nil
	}
	pausedCond := cur != nil && cur.Reason == ReasonDeploymentPaused
	switch {
	case d.Spec.Paused && !pausedCond:
		setCondition(&d.Status, newCondition(c.now(), appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentPaused, "Deployment is paused"))
	case !d.Spec.Paused && pausedCond:
		setCondition(&d.Status, newCondition(c.now(), appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentResumed, "Deployment is resumed"))
	default:
		return nil
	}
	return c.updateStatus(ctx, d)
}

// updateStatus writes d's status (and, through the status subresource,
// its annotations), keeping d's resourceVersion current.
func (c *Controller) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	out, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err == nil {
		d.ResourceVersion = out.ResourceVersion
	}
	return err
}

// isScalingEvent reports whether d's replicas differ from those recorded
// on any of its active ReplicaSets.
func (c *Controller) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rss []*appsv1.ReplicaSet) (bool, error) {
	newRS, old, err := c.newAndOld(ctx, d, rss, false)
	if err != nil {
		return false, err
	}
	for _, rs := range active(append(old, newRS)) {
		if want, ok := annotationInt32(rs, DesiredReplicasAnnotation); ok && want != desired(d) {
			return true, nil
		}
	}
	return false, nil
}

// syncStatus writes d's calculated status if it changed.
func (c *Controller) syncStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	s := calculateStatus(c.now(), all, newRS, d)
	if reflect.DeepEqual(d.Status, s) {
		return nil
	}
	d.Status = s
	return c.updateStatus(ctx, d)
}

// syncRolloutStatus writes d's status during a rollout if it changed, and
// otherwise arranges to look again when its progress deadline passes.
func (c *Controller) syncRolloutStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	s := rolloutStatus(c.now(), all, newRS, d)
	if reflect.DeepEqual(d.Status, s) {
		if after, ok := progressCheckAfter(c.now(), d, &s); ok {
			key, _ := cache.MetaNamespaceKeyFunc(d)
			if after < time.Second {
				c.queue.AddRateLimited(key)
			} else {
				c.queue.AddAfter(key, after+time.Second)
			}
		}
		return nil
	}
	d.Status = s
	return c.updateStatus(ctx, d)
}
