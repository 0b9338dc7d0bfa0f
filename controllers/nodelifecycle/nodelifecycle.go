// Package nodelifecycle is kube-controller-manager's node lifecycle
// controller (docs/kubernetes-behaviour.md, D.8 and G.13). It has two
// halves.
//
// The NoSchedule taint pass keeps every node's condition taints in step
// with its conditions, so that a node created through the API, which the
// API server's TaintNodesByCondition admission taints
// node.kubernetes.io/not-ready, becomes schedulable once it reports Ready,
// and stops being so when it no longer does. On every add and update the
// node informer sees, it computes the NoSchedule taints the node should
// carry:
//
//   - Ready False: node.kubernetes.io/not-ready; Ready Unknown:
//     node.kubernetes.io/unreachable;
//   - MemoryPressure, DiskPressure, PIDPressure True: node.kubernetes.io/
//     memory-pressure, disk-pressure, pid-pressure;
//   - NetworkUnavailable True: node.kubernetes.io/network-unavailable;
//   - spec.unschedulable: node.kubernetes.io/unschedulable.
//
// It adds those the node lacks and removes the NoSchedule taints of those
// keys that it should not carry, matching taints by key and effect as kube
// does; every other taint (other keys, other effects) is left as it is. A
// node without conditions therefore loses the not-ready taint, as in kube.
//
// The health monitor (health.go) looks at every node every few seconds. A
// node it has not heard from (no new Ready heartbeat, no lease renewal in
// kube-node-lease) for the grace period gets its Ready and pressure
// conditions set Unknown; the pods on a node that stops being Ready are
// marked not ready; a node that is not Ready is tainted
// node.kubernetes.io/not-ready or unreachable with effect NoExecute, at a
// rate each zone's health sets, and the taint goes when it is Ready
// again. The taint eviction controller (controllers/tainteviction) then
// deletes the pods that do not tolerate the taint.
//
// It does not reconcile node labels.
//
// The identity it runs as needs: nodes list, watch, get, update, and
// nodes/status update; leases list, watch; pods list, watch, and
// pods/status update; events create, patch.
package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/internal/cachetrim"
)

func all(synced ...cache.InformerSynced) cache.InformerSynced {
	return func() bool {
		for _, s := range synced {
			if !s() {
				return false
			}
		}
		return true
	}
}

// Descriptor runs the controller in the controller manager, as kube's
// "nodelifecycle" controller.
var Descriptor = controllers.Descriptor{Name: "nodelifecycle", ServiceAccount: "node-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c.Client, Options{Logger: c.Logger, Factory: c.Informers, Now: c.Now})
}}

// DefaultWorkers is how many nodes are brought in step at once, kube's
// nodeUpdateWorkerSize.
const DefaultWorkers = 8

// conditionTaints maps a node condition and status to the NoSchedule
// taint key it calls for: kube's nodeConditionToTaintKeyStatusMap.
var conditionTaints = map[corev1.NodeConditionType]map[corev1.ConditionStatus]string{
	corev1.NodeReady: {
		corev1.ConditionFalse:   corev1.TaintNodeNotReady,
		corev1.ConditionUnknown: corev1.TaintNodeUnreachable,
	},
	corev1.NodeMemoryPressure:     {corev1.ConditionTrue: corev1.TaintNodeMemoryPressure},
	corev1.NodeDiskPressure:       {corev1.ConditionTrue: corev1.TaintNodeDiskPressure},
	corev1.NodeNetworkUnavailable: {corev1.ConditionTrue: corev1.TaintNodeNetworkUnavailable},
	corev1.NodePIDPressure:        {corev1.ConditionTrue: corev1.TaintNodePIDPressure},
}

// managed reports whether t is a taint this pass owns: NoSchedule, with
// the unschedulable key or a condition's.
func managed(t *corev1.Taint) bool {
	if t.Effect != corev1.TaintEffectNoSchedule {
		return false
	}
	switch t.Key {
	case corev1.TaintNodeUnschedulable, corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable,
		corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure,
		corev1.TaintNodeNetworkUnavailable, corev1.TaintNodePIDPressure:
		return true
	}
	return false
}

// Options configure a Controller.
type Options struct {
	// Workers is how many nodes are handled at once; 0 means
	// DefaultWorkers.
	Workers int
	// Logger receives the controller's logs; nil means slog.Default().
	Logger *slog.Logger
	// Factory is the shared informer factory to read nodes from; nil
	// means one of the controller's own, which Run starts.
	Factory informers.SharedInformerFactory

	// The node health monitor (G.13). Zero values mean kube's defaults:
	// MonitorPeriod (DefaultMonitorPeriod) is how often every node is
	// looked at; GracePeriod (DefaultGracePeriod) how long a node may go
	// without a Ready heartbeat or a lease renewal before its conditions
	// become Unknown, StartupGracePeriod (DefaultStartupGracePeriod) the
	// same for a node that never reported Ready; EvictionQPS
	// (DefaultEvictionQPS) how many nodes per second of a healthy zone get
	// their NoExecute taint, SecondaryEvictionQPS
	// (DefaultSecondaryEvictionQPS) the same in a partly disrupted zone of
	// more than LargeClusterThreshold (DefaultLargeClusterThreshold)
	// nodes; UnhealthyZoneThreshold (DefaultUnhealthyZoneThreshold) is the
	// share of not-Ready nodes (more than two) that makes a zone partly
	// disrupted.
	MonitorPeriod, GracePeriod, StartupGracePeriod time.Duration
	EvictionQPS, SecondaryEvictionQPS              float32
	LargeClusterThreshold                          int
	UnhealthyZoneThreshold                         float32
	// NoMonitor turns the health monitor off, leaving the NoSchedule
	// taint pass alone.
	NoMonitor bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (o *Options) defaults() {
	setDefault(&o.MonitorPeriod, DefaultMonitorPeriod)
	setDefault(&o.GracePeriod, DefaultGracePeriod)
	setDefault(&o.StartupGracePeriod, DefaultStartupGracePeriod)
	setDefault(&o.EvictionQPS, DefaultEvictionQPS)
	setDefault(&o.SecondaryEvictionQPS, DefaultSecondaryEvictionQPS)
	setDefault(&o.LargeClusterThreshold, DefaultLargeClusterThreshold)
	setDefault(&o.UnhealthyZoneThreshold, DefaultUnhealthyZoneThreshold)
	if o.Now == nil {
		o.Now = time.Now
	}
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Controller keeps nodes' condition taints in step with their conditions.
type Controller struct {
	client  kubernetes.Interface
	opts    Options
	log     *slog.Logger
	factory informers.SharedInformerFactory
	nodes   corelisters.NodeLister
	synced  cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
	// ownFactory is set when Run starts and stops factory.
	ownFactory bool

	leases   coordinationlisters.LeaseLister
	pods     cache.SharedIndexInformer
	recorder record.EventRecorder
}

// New returns a controller that reads and writes nodes through client.
// Run starts it.
func New(client kubernetes.Interface, o Options) (*Controller, error) {
	if client == nil {
		return nil, errors.New("nodelifecycle: a client is required")
	}
	if o.Workers < 0 {
		return nil, fmt.Errorf("nodelifecycle: workers %d is negative", o.Workers)
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.defaults()
	c := &Controller{client: client, opts: o, log: o.Logger}
	// Nodes are kept without their managedFields, which are never read
	// here: the write reads the node afresh.
	c.factory = o.Factory
	if c.factory == nil {
		c.factory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(cachetrim.StripManagedFields))
		c.ownFactory = true
	}
	inf := c.factory.Core().V1().Nodes()
	c.nodes = inf.Lister()
	c.synced = inf.Informer().HasSynced
	if !o.NoMonitor {
		leases := c.factory.Coordination().V1().Leases()
		c.leases = leases.Lister()
		c.pods = c.factory.Core().V1().Pods().Informer()
		if err := controllers.AddPodNodeNameIndex(c.pods); err != nil {
			return nil, err
		}
		c.synced = all(c.synced, leases.Informer().HasSynced, c.pods.HasSynced)
	}
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 10*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "nodelifecycle"})
	// AddEventHandler fails only on a started, stopped informer.
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueue(obj) },
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	})
	return c, nil
}

func (c *Controller) enqueue(obj any) {
	if n, ok := obj.(*corev1.Node); ok {
		c.queue.Add(n.Name)
	}
}

// Run brings nodes in step until ctx is done. It returns nil when ctx is
// done and an error only if the node cache never filled.
func (c *Controller) Run(ctx context.Context) error {
	if c.ownFactory {
		c.factory.Start(ctx.Done())
		defer c.factory.Shutdown()
	}
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("nodelifecycle: the node cache did not sync")
	}
	var wg sync.WaitGroup
	if !c.opts.NoMonitor {
		var stop func()
		c.recorder, stop = controllers.NewRecorder(c.client, "node-controller")
		defer stop()
		wg.Go(func() { newMonitor(c).run(ctx) })
	}
	for range c.opts.Workers {
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

// next handles one node. A failed write is retried with backoff, which
// kube's controller leaves to the node's next update.
func (c *Controller) next(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	if err := c.sync(ctx, name); err != nil && ctx.Err() == nil {
		c.log.Warn("update node taints; retrying", "node", name, "err", err)
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// sync brings one node's taints in step. The cached node decides whether
// there is anything to do; the write reads the node afresh and updates it
// with its resourceVersion, again on a conflict.
func (c *Controller) sync(ctx context.Context, name string) error {
	cached, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, changed := Taints(cached); !changed {
		return nil
	}
	nodes := c.client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		taints, changed := Taints(node)
		if !changed {
			return nil
		}
		node.Spec.Taints = taints
		if _, err := nodes.Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return err
		}
		c.log.Debug("node taints updated", "node", name, "taints", taints)
		return nil
	})
}

// Taints returns the taints node should carry, and whether they differ
// from those it carries: its taints without the NoSchedule condition and
// unschedulable taints its conditions and spec do not call for, in their
// order, followed by those it lacks, in the order of its conditions, the
// unschedulable taint last (kube's doNoScheduleTaintingPass).
func Taints(node *corev1.Node) ([]corev1.Taint, bool) {
	var want []corev1.Taint
	for _, cond := range node.Status.Conditions {
		if key, ok := conditionTaints[cond.Type][cond.Status]; ok {
			want = append(want, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	if node.Spec.Unschedulable {
		want = append(want, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	matches := func(t corev1.Taint) func(corev1.Taint) bool {
		return func(u corev1.Taint) bool { return u.MatchTaint(&t) }
	}
	changed := false
	out := make([]corev1.Taint, 0, len(node.Spec.Taints)+len(want))
	for _, t := range node.Spec.Taints {
		if managed(&t) && !slices.ContainsFunc(want, matches(t)) {
			changed = true
			continue
		}
		out = append(out, t)
	}
	for _, t := range want {
		if !slices.ContainsFunc(out, matches(t)) {
			out = append(out, t)
			changed = true
		}
	}
	if !changed {
		return node.Spec.Taints, false
	}
	return out, true
}
