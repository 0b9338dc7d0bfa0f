// Package podautoscaler is kube-controller-manager's horizontal pod
// autoscaler controller (docs/kubernetes-behaviour.md, G.19): every sync
// period it reads each HorizontalPodAutoscaler's target through the
// target's scale subresource, computes the replicas its metrics ask for
// within its bounds, behavior and stabilization windows, writes them to
// the scale subresource, and records what it saw in the autoscaler's
// status, conditions and events.
//
// Resource metrics come from metrics.k8s.io, Pods and Object metrics from
// custom.metrics.k8s.io and External ones from external.metrics.k8s.io,
// each through k8s.io/metrics' clients; an API that is not served gives
// kube's conditions for a metric it cannot get.
//
// The identity it runs as needs: horizontalpodautoscalers list, watch,
// get and update of status; get and update of any */scale; pods list and
// watch; the metrics APIs' reads; events create and patch.
package podautoscaler

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	resourceclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	"k8s.io/metrics/pkg/client/custom_metrics"
	"k8s.io/metrics/pkg/client/external_metrics"

	"github.com/kubegate/kubegate/controllers"
)

// Name is the controller's name in --controllers.
const Name = "horizontalpodautoscaling"

// Descriptor runs the controller in the controller manager, as kube's
// horizontal pod autoscaler controller, as the service account
// horizontal-pod-autoscaler.
var Descriptor = controllers.Descriptor{Name: Name, ServiceAccount: "horizontal-pod-autoscaler",
	New: func(c *controllers.Context) (controllers.Controller, error) { return New(c) }}

// DefaultWorkers is kube-controller-manager's
// --concurrent-horizontal-pod-autoscaler-syncs.
const DefaultWorkers = 5

// Clients are what the controller reads scales and metrics with. A nil
// field is made from the context's Config and Client, as
// kube-controller-manager makes them.
type Clients struct {
	// Scales reads and writes targets' scale subresources.
	Scales scale.ScalesGetter
	// Mapper finds a target kind's resources.
	Mapper meta.RESTMapper
	// Metrics reads the metrics APIs.
	Metrics MetricsClient
}

// Controller is the horizontal pod autoscaler controller.
type Controller struct {
	client        kubernetes.Interface
	scales        scale.ScalesGetter
	mapper        meta.RESTMapper
	calc          *calculator
	recorder      record.EventRecorder
	startRecorder func() func()
	invalidate    custom_metrics.AvailableAPIsGetter
	log           *slog.Logger
	now           func() time.Time
	settings      controllers.HPASettings
	hpas          autoscalinglisters.HorizontalPodAutoscalerLister
	synced        []cache.InformerSynced
	queue         workqueue.TypedRateLimitingInterface[string]

	mu        sync.Mutex
	histories map[string]*history
	// selectors are the pod selectors of the autoscalers by key, so that
	// two autoscalers of the same pods are found (registered when seen,
	// with a selector once synced).
	selectors map[string]labels.Selector
}

// New builds the controller from c with the metrics APIs' clients.
func New(c *controllers.Context) (*Controller, error) { return NewWith(c, Clients{}) }

// NewWith builds the controller from c with cl's clients.
func NewWith(c *controllers.Context, cl Clients) (*Controller, error) {
	hc := &Controller{client: c.Client, log: c.Logger, now: c.Now, settings: c.HPA.OrDefault(),
		histories: map[string]*history{}, selectors: map[string]labels.Selector{}}
	if hc.log == nil {
		hc.log = slog.Default()
	}
	if hc.now == nil {
		hc.now = time.Now
	}
	if err := hc.settings.Validate(); err != nil {
		return nil, err
	}
	if err := hc.clients(c, &cl); err != nil {
		return nil, err
	}
	hc.scales, hc.mapper = cl.Scales, cl.Mapper
	hc.recorder, hc.startRecorder = controllers.NewLazyRecorder(c.Client, "horizontal-pod-autoscaler")
	hc.queue = workqueue.NewTypedRateLimitingQueueWithConfig[string](fixedInterval(hc.settings.SyncPeriod),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "horizontalpodautoscaler"})
	hi := c.Informers.Autoscaling().V2().HorizontalPodAutoscalers()
	pi := c.Informers.Core().V1().Pods()
	hc.hpas = hi.Lister()
	hc.calc = &calculator{metrics: cl.Metrics, pods: pi.Lister(), now: hc.now,
		cpuInitPeriod: hc.settings.CPUInitializationPeriod, readinessDelay: hc.settings.InitialReadinessDelay}
	hc.synced = []cache.InformerSynced{hi.Informer().HasSynced, pi.Informer().HasSynced}
	if _, err := hi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    hc.added,
		UpdateFunc: hc.updated,
		DeleteFunc: hc.deleted,
	}); err != nil {
		return nil, err
	}
	return hc, nil
}

// clients fills cl's nil fields from c, as kube-controller-manager does:
// a RESTMapper over discovery that reads discovery again when a kind is
// not found, a scale client resolving each resource's scale kind through
// discovery, and the three metrics APIs' clients.
func (hc *Controller) clients(c *controllers.Context, cl *Clients) error {
	if cl.Mapper == nil {
		cl.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))
	}
	if cl.Scales == nil {
		if c.Config == nil {
			return fmt.Errorf("%s: no REST config for the scale client", Name)
		}
		s, err := scale.NewForConfig(c.Config, cl.Mapper, dynamic.LegacyAPIPathResolverFunc,
			scale.NewDiscoveryScaleKindResolver(c.Client.Discovery()))
		if err != nil {
			return fmt.Errorf("%s: the scale client: %w", Name, err)
		}
		cl.Scales = s
	}
	if cl.Metrics == nil {
		if c.Config == nil {
			return fmt.Errorf("%s: no REST config for the metrics clients", Name)
		}
		res, err := resourceclient.NewForConfig(c.Config)
		if err != nil {
			return fmt.Errorf("%s: the resource metrics client: %w", Name, err)
		}
		ext, err := external_metrics.NewForConfig(c.Config)
		if err != nil {
			return fmt.Errorf("%s: the external metrics client: %w", Name, err)
		}
		hc.invalidate = custom_metrics.NewAvailableAPIsGetter(c.Client.Discovery())
		cl.Metrics = &RESTMetrics{Resource: res, External: ext,
			Custom: custom_metrics.NewForConfig(c.Config, cl.Mapper, hc.invalidate)}
	}
	return nil
}

// Run syncs autoscalers until ctx is done.
func (hc *Controller) Run(ctx context.Context) error {
	defer hc.startRecorder()()
	if hc.invalidate != nil {
		// The custom metrics API's version is looked up again each sync
		// period, so that an adapter installed later is found.
		go custom_metrics.PeriodicallyInvalidate(hc.invalidate, hc.settings.SyncPeriod, ctx.Done())
	}
	return controllers.RunWorkers(ctx, Name, hc.queue, DefaultWorkers, hc.log, hc.sync, hc.synced...)
}

// sync reconciles one autoscaler and, unless it is gone, queues it again
// a sync period later.
func (hc *Controller) sync(ctx context.Context, key string) error {
	deleted, err := hc.reconcileKey(ctx, key)
	if !deleted {
		hc.queue.AddRateLimited(key)
	}
	return err
}

func (hc *Controller) added(obj any) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	hc.mu.Lock()
	if _, ok := hc.selectors[key]; !ok {
		hc.selectors[key] = labels.Nothing()
	}
	hc.mu.Unlock()
	hc.queue.Add(key)
}

// updated syncs at once on a change of spec (a new generation), and a
// sync period later on a change of status, such as the controller's own.
func (hc *Controller) updated(old, cur any) {
	o, ok1 := old.(*autoscalingv2.HorizontalPodAutoscaler)
	n, ok2 := cur.(*autoscalingv2.HorizontalPodAutoscaler)
	if ok1 && ok2 && o.Generation != n.Generation {
		hc.added(n)
		return
	}
	if key, err := cache.MetaNamespaceKeyFunc(cur); err == nil {
		hc.queue.AddRateLimited(key)
	}
}

func (hc *Controller) deleted(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	hc.queue.Forget(key)
	hc.mu.Lock()
	delete(hc.selectors, key)
	hc.mu.Unlock()
}

// setSelector records the autoscaler's pod selector, unless it has been
// deleted meanwhile; it says whether it was recorded.
func (hc *Controller) setSelector(key string, sel labels.Selector) bool {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if _, ok := hc.selectors[key]; !ok {
		return false
	}
	hc.selectors[key] = sel
	return true
}

// selecting lists the autoscalers of namespace whose selectors match any
// of pods' labels, up to two.
func (hc *Controller) selecting(namespace string, pods []labels.Set) []string {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	var out []string
	for key, sel := range hc.selectors {
		if ns, _, _ := strings.Cut(key, "/"); ns != namespace {
			continue
		}
		for _, l := range pods {
			if sel.Matches(l) {
				out = append(out, key)
				break
			}
		}
		if len(out) == 2 {
			break
		}
	}
	return out
}

// historyOf is the remembered history of the autoscaler key.
func (hc *Controller) historyOf(key string) *history {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	h := hc.histories[key]
	if h == nil {
		h = &history{}
		hc.histories[key] = h
	}
	return h
}

// fixedInterval is kube's autoscaler queue limiter: every item waits the
// sync period, whatever its failures.
type fixedInterval time.Duration

func (f fixedInterval) When(string) time.Duration { return time.Duration(f) }
func (fixedInterval) NumRequeues(string) int      { return 1 }
func (fixedInterval) Forget(string)               {}
