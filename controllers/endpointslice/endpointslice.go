// Package endpointslice is kube-controller-manager's endpointslice
// controller (docs/kubernetes-behaviour.md G.10): for every Service with
// a selector (not of type ExternalName) it keeps EndpointSlices named
// SERVICE-<random> (generateName), labelled kubernetes.io/service-name
// and endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io,
// controlled by the Service, holding an endpoint for every pod the
// selector matches that has an IP: its address of the slice's family, its
// ready, serving and terminating conditions, node, zone and target
// reference. The slices are worked out and written by the k8s.io/endpointslice
// module's reconciler, kube's own; this package watches, queues, picks the
// Services and pods to hand it, and holds a Service back while the cache
// has not shown the reconciler's last writes. A Service without a
// selector is left alone; a deleted Service's slices go with it through
// the garbage collector, as in kube.
//
// The identity it runs as needs: services, pods and nodes list and watch;
// endpointslices list, watch, create, update and delete; events create.
package endpointslice

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	endpointslicerec "k8s.io/endpointslice"
	endpointsliceutil "k8s.io/endpointslice/util"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/endpointutil"
)

// Descriptor runs the controller in the controller manager, as kube's
// "endpointslice" controller.
var Descriptor = controllers.Descriptor{Name: "endpointslice", ServiceAccount: "endpointslice-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c.Client, c.Informers, c.Logger), nil
}}

const (
	// DefaultWorkers is kube's --concurrent-service-endpoint-syncs.
	DefaultWorkers = 5
	// MaxEndpointsPerSlice is kube's --max-endpoints-per-slice default.
	MaxEndpointsPerSlice = 100
	// ControllerName is the managed-by label's value.
	ControllerName = "endpointslice-controller.k8s.io"
)

// Controller is the endpointslice controller.
type Controller struct {
	client     kubernetes.Interface
	services   corelisters.ServiceLister
	pods       corelisters.PodLister
	slices     discoverylisters.EndpointSliceLister
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
	reconciler *endpointslicerec.Reconciler
	triggers   *endpointsliceutil.TriggerTimeTracker
	log        *slog.Logger
	startRec   func() (stop func())

	// tracker holds the generation of each slice the reconciler last
	// wrote (or that it deleted one), so that a sync does not act on a
	// cache that has not seen those writes yet, as kube's controller
	// does. kubegate adds two ends to the wait: staleSince holds when
	// each Service was first found behind, and a Service behind for
	// longer than staleTimeout is synced from the cache as it is (a slice
	// created and deleted while the watch was broken never shows, and
	// kube would wait for it for ever); seenDeleted holds the slices the
	// cache has seen deleted lately, whose writes are not waited for even
	// when the answer to the write came after the delete event.
	tracker     *endpointsliceutil.EndpointSliceTracker
	mu          sync.Mutex
	staleSince  map[string]time.Time
	seenDeleted map[types.UID]deletedSlice
	now         func() time.Time
}

// deletedSlice is a slice the cache saw deleted, and when.
type deletedSlice struct {
	slice *discoveryv1.EndpointSlice
	at    time.Time
}

// staleTimeout bounds the wait for the cache to show the controller's
// writes: a slice deleted and re-listed away before its events arrived
// never shows, and the Service is synced from the cache as it is then.
const staleTimeout = 30 * time.Second

// New builds the controller on factory's informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, log *slog.Logger) *Controller {
	svcInf := factory.Core().V1().Services()
	podInf := factory.Core().V1().Pods()
	nodeInf := factory.Core().V1().Nodes()
	sliceInf := factory.Discovery().V1().EndpointSlices()
	rec, startRec := controllers.NewLazyRecorder(client, "endpoint-slice-controller")
	tracker := endpointsliceutil.NewEndpointSliceTracker()
	c := &Controller{client: client, services: svcInf.Lister(), pods: podInf.Lister(), slices: sliceInf.Lister(),
		synced: []cache.InformerSynced{svcInf.Informer().HasSynced, podInf.Informer().HasSynced, nodeInf.Informer().HasSynced,
			sliceInf.Informer().HasSynced},
		queue: controllers.NewQueue("endpointslice"), log: log, startRec: startRec, now: time.Now,
		triggers: endpointsliceutil.NewTriggerTimeTracker(), tracker: tracker,
		staleSince: map[string]time.Time{}, seenDeleted: map[types.UID]deletedSlice{},
		// Without a topology cache, as kubegate keeps no zone
		// distribution of nodes: the topology-mode annotation gives no
		// hints; trafficDistribution does, PreferSameZone and
		// PreferSameNode included as in kube 1.37. The reconciler's
		// metrics are never registered, and so count nothing.
		reconciler: endpointslicerec.NewReconciler(client, nodeInf.Lister(), MaxEndpointsPerSlice, tracker, nil, rec, ControllerName,
			endpointslicerec.WithPreferSameTrafficDistributionEnabled(true)),
	}
	enqueue := func(obj any) { controllers.Enqueue(c.queue, obj) }
	_, _ = svcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) }, DeleteFunc: enqueue})
	_, _ = podInf.Informer().AddEventHandler(endpointutil.PodHandler(c.services, c.queue))
	// A slice of ours changed or deleted by someone else is put back.
	_, _ = sliceInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, cur any) { c.sliceChanged(cur, false) }, DeleteFunc: func(obj any) { c.sliceChanged(obj, true) }})
	_ = nodeInf.Informer() // the reconciler reads zones from the node cache
	return c
}

func (c *Controller) sliceChanged(obj any, deleted bool) {
	obj = controllers.Unwrap(obj)
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || s.Labels[discoveryv1.LabelManagedBy] != ControllerName || s.Labels[discoveryv1.LabelServiceName] == "" {
		return
	}
	key := s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]
	if deleted {
		// Seen gone, whoever deleted it: nothing more to wait for.
		c.mu.Lock()
		c.tracker.HandleDeletion(s)
		c.seenDeleted[s.UID] = deletedSlice{slice: s, at: c.now()}
		c.mu.Unlock()
	}
	c.queue.Add(key)
}

// stale reports whether the cache, showing slices of svc, lacks a write
// the reconciler made for it. It first forgets the writes of slices the
// cache has seen deleted, and every write of a Service found behind for
// longer than staleTimeout.
func (c *Controller) stale(svc *corev1.Service, slices []*discoveryv1.EndpointSlice) bool {
	key := svc.Namespace + "/" + svc.Name
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for uid, d := range c.seenDeleted {
		switch {
		case now.Sub(d.at) > staleTimeout:
			delete(c.seenDeleted, uid)
		case d.slice.Namespace == svc.Namespace && d.slice.Labels[discoveryv1.LabelServiceName] == svc.Name:
			c.tracker.HandleDeletion(d.slice)
		}
	}
	if !c.tracker.StaleSlices(svc, slices) {
		delete(c.staleSince, key)
		return false
	}
	since, ok := c.staleSince[key]
	if !ok {
		c.staleSince[key] = now
		return true
	}
	if now.Sub(since) <= staleTimeout {
		return true
	}
	c.log.Warn("the EndpointSlice cache never showed a write; syncing without it", "service", key)
	c.tracker.DeleteService(svc.Namespace, svc.Name)
	delete(c.staleSince, key)
	return false
}

// Run syncs Services until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	defer c.startRec()()
	return controllers.RunWorkers(ctx, "endpointslice", c.queue, DefaultWorkers, c.log, c.sync, c.synced...)
}

// owned lists the slices of the Service named name in ns that this
// controller manages, but those being deleted.
func (c *Controller) owned(ns, name string) ([]*discoveryv1.EndpointSlice, error) {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ControllerName})
	list, err := c.slices.EndpointSlices(ns).List(sel)
	if err != nil {
		return nil, err
	}
	out := list[:0:0]
	for _, s := range list {
		if s.DeletionTimestamp == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

func (c *Controller) sync(_ context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// The garbage collector deletes the slices the Service owned.
		c.forget(ns, name)
		return nil
	}
	if err != nil || !endpointutil.ManagedService(svc) {
		return err
	}
	if svc.DeletionTimestamp != nil {
		return nil
	}
	existing, err := c.owned(ns, name)
	if err != nil {
		return err
	}
	if c.stale(svc, existing) {
		// The informer brings the write soon; look again then.
		c.queue.AddAfter(key, staleRetry)
		return nil
	}
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	trigger := c.triggers.ComputeEndpointLastChangeTriggerTime(ns, svc, pods)
	return c.reconciler.Reconcile(logr.FromSlogHandler(c.log.Handler()), svc, pods, existing, trigger)
}

// forget drops what is remembered of a deleted Service.
func (c *Controller) forget(ns, name string) {
	c.triggers.DeleteService(ns, name)
	c.reconciler.DeleteService(ns, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tracker.DeleteService(ns, name)
	delete(c.staleSince, ns+"/"+name)
}

// staleRetry is when a Service held back by a cache that has not seen the
// controller's last writes is looked at again, if no event comes first.
const staleRetry = 100 * time.Millisecond
