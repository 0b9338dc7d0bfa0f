// Package namespace is kube-controller-manager's namespace controller: it
// empties a namespace being deleted and then releases it (docs/
// kubernetes-behaviour.md G.9).
//
// For a namespace with a deletionTimestamp it:
//
//  1. reads the namespace from the API server and sets its phase to
//     Terminating if it is not already;
//  2. returns when "kubernetes" is no longer in spec.finalizers;
//  3. discovers every namespaced resource that can be deleted and deletes
//     its objects in the namespace, in the background (a deletecollection,
//     or a list and a delete of each object where the collection cannot
//     be deleted at once), then lists what is left;
//  4. records the outcome in the namespace's status conditions
//     (NamespaceDeletionDiscoveryFailure, NamespaceDeletionGroupVersion-
//     ParsingFailure, NamespaceDeletionContentFailure, NamespaceContent-
//     Remaining, NamespaceFinalizersRemaining), as kube does;
//  5. when objects remain it tries again after half the time they need
//     (the longest grace period of a running pod, 15 s for objects held
//     by finalizers) plus a second; when none remain it removes
//     "kubernetes" from spec.finalizers through the finalize subresource,
//     and the API server deletes the namespace once no finalizer is left.
//
// The identity it runs as needs: namespaces get, list, watch, and update
// of namespaces/status and namespaces/finalize; list, delete and
// deletecollection of every namespaced resource.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/controllers"
)

// Descriptor runs the controller in the controller manager, as kube's
// "namespace" controller.
var Descriptor = controllers.Descriptor{Name: "namespace", ServiceAccount: "namespace-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c.Client, c.Metadata, c.Informers.Core().V1().Namespaces(), Options{Logger: c.Logger, Now: c.Now})
}}

// Options configure a Controller.
type Options struct {
	// Workers is how many namespaces are emptied at once; 0 means 10,
	// kube's --concurrent-namespace-syncs.
	Workers int
	// Logger receives the controller's logs; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// finalizerEstimateSeconds is how long objects held by finalizers are
// given before the namespace is looked at again.
const finalizerEstimateSeconds = 15

// Controller empties namespaces being deleted.
type Controller struct {
	client    kubernetes.Interface
	meta      metadata.Interface
	discovery discovery.DiscoveryInterface
	lister    corelisters.NamespaceLister
	synced    cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	workers   int
	log       *slog.Logger
	now       func() time.Time

	// unsupported remembers the resources that cannot be deleted as a
	// collection or listed.
	mu          sync.Mutex
	unsupported map[operation]bool
}

type operation struct {
	verb string
	gvr  schema.GroupVersionResource
}

// New builds the controller on the namespace informer.
func New(client kubernetes.Interface, meta metadata.Interface, namespaces interface {
	Informer() cache.SharedIndexInformer
	Lister() corelisters.NamespaceLister
}, o Options) (*Controller, error) {
	if o.Workers <= 0 {
		o.Workers = 10
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Controller{client: client, meta: meta, discovery: client.Discovery(), lister: namespaces.Lister(),
		synced: namespaces.Informer().HasSynced, workers: o.Workers, log: o.Logger, now: o.Now,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 60*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespace"}),
		unsupported: map[operation]bool{}}
	enqueue := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
			controllers.Enqueue(c.queue, ns)
		}
	}
	if _, err := namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run empties namespaces until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("namespace: the caches did not sync")
	}
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for c.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// next handles one key: a namespace with content left comes back after
// the time the content needs, one that failed with the queue's backoff.
func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	err := c.sync(ctx, key)
	var remaining *remainingError
	switch {
	case err == nil:
		c.queue.Forget(key)
	case ctx.Err() != nil:
	case errors.As(err, &remaining):
		c.queue.AddAfter(key, time.Duration(remaining.estimate/2+1)*time.Second)
	default:
		c.log.Warn("namespace deletion failed; retrying", "namespace", key, "err", err)
		c.queue.AddRateLimited(key)
	}
	return true
}

// remainingError says that content is left and how many seconds it is
// expected to take.
type remainingError struct{ estimate int64 }

func (e *remainingError) Error() string {
	return fmt.Sprintf("some content remains in the namespace, estimate %d seconds before it is removed", e.estimate)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp == nil {
		return nil
	}
	ns, err = c.retryOnConflict(ctx, ns, c.markTerminating)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return nil
	}
	estimate, err := c.deleteAllContent(ctx, ns)
	if err != nil {
		return err
	}
	if estimate > 0 {
		return &remainingError{estimate}
	}
	_, err = c.retryOnConflict(ctx, ns, c.finalize)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// retryOnConflict applies fn to ns, and to a fresh read of it after each
// conflict, as long as it is the same namespace.
func (c *Controller) retryOnConflict(ctx context.Context, ns *corev1.Namespace, fn func(context.Context, *corev1.Namespace) (*corev1.Namespace, error)) (*corev1.Namespace, error) {
	for {
		out, err := fn(ctx, ns)
		if !apierrors.IsConflict(err) {
			return out, err
		}
		latest, err := c.client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if latest.UID != ns.UID {
			return nil, errors.New("namespace uid has changed across retries")
		}
		ns = latest
	}
}

func (c *Controller) markTerminating(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	if ns.DeletionTimestamp == nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return ns, nil
	}
	ns = ns.DeepCopy()
	ns.Status.Phase = corev1.NamespaceTerminating
	return c.client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{})
}

// finalize removes "kubernetes" from spec.finalizers (sorted, as kube
// leaves them).
func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	ns = ns.DeepCopy()
	var keep []corev1.FinalizerName
	for _, f := range ns.Spec.Finalizers {
		if f != corev1.FinalizerKubernetes && !slices.Contains(keep, f) {
			keep = append(keep, f)
		}
	}
	slices.Sort(keep)
	ns.Spec.Finalizers = keep
	return c.client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
}

// deleteAllContent deletes the objects of every deletable namespaced
// resource in ns and returns the seconds the remaining ones are expected
// to take; the status conditions record the outcome.
func (c *Controller) deleteAllContent(ctx context.Context, ns *corev1.Namespace) (int64, error) {
	var errs []error
	conditions := &conditionUpdater{now: metav1.NewTime(c.now())}
	lists, err := c.discovery.ServerPreferredNamespacedResources()
	if err != nil {
		errs = append(errs, err)
		conditions.discoveryFailed(err)
	}
	deletable := discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete"}}, lists)
	gvrs, err := discovery.GroupVersionResources(deletable)
	if err != nil {
		errs = append(errs, err)
		conditions.groupVersionFailed(err)
	}
	var estimate int64
	remaining := map[schema.GroupVersionResource]int{}
	byFinalizer := map[string]int{}
	for gvr := range gvrs {
		left, err := c.deleteAllOf(ctx, gvr, ns)
		if err != nil {
			errs = append(errs, err)
			conditions.contentFailed(err)
		}
		estimate = max(estimate, left.estimate)
		if left.count > 0 {
			remaining[gvr] = left.count
			for f, n := range left.byFinalizer {
				byFinalizer[f] += n
			}
		}
	}
	conditions.contentTotals(remaining, byFinalizer)
	updated := ns.DeepCopy()
	if conditions.apply(&updated.Status) {
		if _, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			c.log.Warn("could not update the namespace's conditions", "namespace", ns.Name, "err", err)
		}
	}
	return estimate, errors.Join(errs...)
}

// leftover is what remains of one resource in a namespace after a delete.
type leftover struct {
	estimate    int64
	count       int
	byFinalizer map[string]int
}

func (c *Controller) deleteAllOf(ctx context.Context, gvr schema.GroupVersionResource, ns *corev1.Namespace) (leftover, error) {
	estimate, err := c.graceEstimate(ctx, gvr, ns)
	if err != nil {
		return leftover{estimate: estimate}, err
	}
	if done, err := c.deleteCollection(ctx, gvr, ns.Name); err != nil {
		return leftover{estimate: estimate}, err
	} else if !done {
		if err := c.deleteEach(ctx, gvr, ns.Name); err != nil {
			return leftover{estimate: estimate}, err
		}
	}
	items, ok, err := c.list(ctx, gvr, ns.Name)
	if err != nil || !ok {
		return leftover{estimate: estimate}, err
	}
	left := leftover{estimate: estimate, count: len(items), byFinalizer: map[string]int{}}
	for _, item := range items {
		for _, f := range item.Finalizers {
			left.byFinalizer[f]++
		}
	}
	if len(items) == 0 || estimate > 0 {
		return left, nil
	}
	if len(left.byFinalizer) > 0 {
		left.estimate = finalizerEstimateSeconds // finalizers are expected to take a while
		return left, nil
	}
	return left, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", ns.Name, gvr)
}

// graceEstimate is, for pods, the longest grace period of the pods not yet
// finished, unless that much time has passed since the namespace's
// deletion began; 0 for every other resource.
func (c *Controller) graceEstimate(ctx context.Context, gvr schema.GroupVersionResource, ns *corev1.Namespace) (int64, error) {
	if gvr.GroupResource() != (schema.GroupResource{Resource: "pods"}) {
		return 0, nil
	}
	pods, err := c.client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	var estimate int64
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g > estimate {
			estimate = *g
		}
	}
	if c.now().Sub(ns.DeletionTimestamp.Time) >= time.Duration(estimate)*time.Second {
		return 0, nil
	}
	return estimate, nil
}

var background = metav1.DeletePropagationBackground

func (c *Controller) isUnsupported(op operation) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unsupported[op]
}

func (c *Controller) setUnsupported(op operation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unsupported[op] = true
}

// deleteCollection deletes every object of gvr in namespace at once, and
// reports whether the server can.
func (c *Controller) deleteCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (bool, error) {
	op := operation{"deletecollection", gvr}
	if c.isUnsupported(op) {
		return false, nil
	}
	err := c.meta.Resource(gvr).Namespace(namespace).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{})
	if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
		c.setUnsupported(op)
		return false, nil
	}
	return true, err
}

// list lists the objects of gvr in namespace, and reports whether the
// server can.
func (c *Controller) list(ctx context.Context, gvr schema.GroupVersionResource, namespace string) ([]metav1.PartialObjectMetadata, bool, error) {
	op := operation{"list", gvr}
	if c.isUnsupported(op) {
		return nil, false, nil
	}
	list, err := c.meta.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
		c.setUnsupported(op)
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return list.Items, true, nil
}

func (c *Controller) deleteEach(ctx context.Context, gvr schema.GroupVersionResource, namespace string) error {
	items, ok, err := c.list(ctx, gvr, namespace)
	if err != nil || !ok {
		return err
	}
	for _, item := range items {
		err := c.meta.Resource(gvr).Namespace(namespace).Delete(ctx, item.Name, metav1.DeleteOptions{PropagationPolicy: &background})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			return err
		}
	}
	return nil
}

// conditionTypes are the namespace conditions the controller keeps, in
// kube's order, with the reason and message of each when all is well.
var conditionTypes = []struct {
	t               corev1.NamespaceConditionType
	reason, message string
}{
	{corev1.NamespaceDeletionDiscoveryFailure, "ResourcesDiscovered", "All resources successfully discovered"},
	{corev1.NamespaceDeletionGVParsingFailure, "ParsedGroupVersions", "All legacy kube types successfully parsed"},
	{corev1.NamespaceDeletionContentFailure, "ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	{corev1.NamespaceContentRemaining, "ContentRemoved", "All content successfully removed"},
	{corev1.NamespaceFinalizersRemaining, "ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

// conditionUpdater collects the failing conditions of one pass.
type conditionUpdater struct {
	now           metav1.Time
	failing       []corev1.NamespaceCondition
	contentErrors []string
}

func (u *conditionUpdater) fail(t corev1.NamespaceConditionType, reason, message string) {
	u.failing = append(u.failing, corev1.NamespaceCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: u.now, Reason: reason, Message: message})
}

func (u *conditionUpdater) discoveryFailed(err error) {
	msg := err.Error()
	var groups *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &groups) {
		msg = fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(groups.Groups), err)
	}
	u.fail(corev1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", msg)
}

func (u *conditionUpdater) groupVersionFailed(err error) {
	u.fail(corev1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", err.Error())
}

func (u *conditionUpdater) contentFailed(err error) {
	u.contentErrors = append(u.contentErrors, err.Error())
}

func (u *conditionUpdater) contentTotals(remaining map[schema.GroupVersionResource]int, byFinalizer map[string]int) {
	if len(remaining) > 0 {
		var parts []string
		for gvr, n := range remaining {
			parts = append(parts, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
		}
		sort.Strings(parts)
		u.fail(corev1.NamespaceContentRemaining, "SomeResourcesRemain", "Some resources are remaining: "+strings.Join(parts, ", "))
	}
	if len(byFinalizer) > 0 {
		var parts []string
		for f, n := range byFinalizer {
			parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, n))
		}
		sort.Strings(parts)
		u.fail(corev1.NamespaceFinalizersRemaining, "SomeFinalizerRemain", "Some finalizers are remaining: "+strings.Join(parts, ", "))
	}
}

// apply sets the conditions of status, each failing one or else its
// all-well form, keeping the transition time of those whose status did
// not change; it reports whether anything changed.
func (u *conditionUpdater) apply(status *corev1.NamespaceStatus) bool {
	if len(u.contentErrors) > 0 {
		sort.Strings(u.contentErrors)
		u.fail(corev1.NamespaceDeletionContentFailure, "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(u.contentErrors), strings.Join(u.contentErrors, ", ")))
	}
	before := status.DeepCopy()
	for _, ct := range conditionTypes {
		want := corev1.NamespaceCondition{Type: ct.t, Status: corev1.ConditionFalse, LastTransitionTime: u.now, Reason: ct.reason, Message: ct.message}
		if i := slices.IndexFunc(u.failing, func(c corev1.NamespaceCondition) bool { return c.Type == ct.t }); i >= 0 {
			want = u.failing[i]
		}
		i := slices.IndexFunc(status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == ct.t })
		if i < 0 {
			status.Conditions = append(status.Conditions, want)
			continue
		}
		old := &status.Conditions[i]
		if old.Status != want.Status {
			old.LastTransitionTime = want.LastTransitionTime
		}
		old.Status, old.Reason, old.Message = want.Status, want.Reason, want.Message
	}
	return !apiequality.Semantic.DeepEqual(before, status)
}
