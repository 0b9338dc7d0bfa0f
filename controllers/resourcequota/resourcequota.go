// Package resourcequota is kube-controller-manager's resource quota
// controller (docs/kubernetes-behaviour.md G.21): it keeps every
// ResourceQuota's status, hard as its spec.hard and used as what the
// objects of its namespace in its scopes use of each resource it names,
// counted with the evaluators the API server's quota admission charges
// with (internal/quotaeval).
//
// A quota is counted again when its spec.hard changes (at once when its
// status does not yet count every resource it names, which the API
// server's admission waits for), when an object it counts is created or
// deleted or changes what it uses, and on a full resync of every quota
// (kube's --resource-quota-sync-period, 5 minutes). Pods, services,
// persistent volume claims, config maps, secrets, replication
// controllers and quotas are read through the shared typed informers;
// any other count/RESOURCE.GROUP a quota names is watched, from the
// first quota that names it, through a metadata informer on the version
// discovery prefers. A resource the API server does not serve is not
// counted, and its usage stays as it was.
//
// The identity it runs as needs: list and watch of everything it counts,
// and update of resourcequotas/status.
package resourcequota

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/internal/quotaeval"
)

// Descriptor runs the controller in the controller manager, as kube's
// "resourcequota" controller.
var Descriptor = controllers.Descriptor{Name: "resourcequota", ServiceAccount: "resourcequota-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c, Options{})
}}

// Defaults of Options, kube-controller-manager's.
const (
	// DefaultWorkers is --concurrent-resource-quota-syncs.
	DefaultWorkers = 5
	// DefaultResyncPeriod is --resource-quota-sync-period.
	DefaultResyncPeriod = 5 * time.Minute
)

// Options configure a Controller.
type Options struct {
	// Workers is how many quotas are counted at once; 0 means
	// DefaultWorkers.
	Workers int
	// ResyncPeriod is how often every quota is counted again; 0 means
	// DefaultResyncPeriod.
	ResyncPeriod time.Duration
}

// monitorSyncWait bounds how long a sync waits for the metadata informer
// of a resource it has just started watching to fill.
const monitorSyncWait = 30 * time.Second

// Controller is the resource quota controller.
type Controller struct {
	client   kubernetes.Interface
	log      *slog.Logger
	now      func() time.Time
	opts     Options
	quotas   corelisters.ResourceQuotaLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	registry quota.Registry
	meta     metadatainformer.SharedInformerFactory
	mapper   *restmapper.DeferredDiscoveryRESTMapper

	mu sync.Mutex
	// monitored holds the resources counted through metadata informers,
	// with whether their informer has filled.
	monitored map[schema.GroupResource]cache.InformerSynced
	// runCtx is Run's context, which the metadata informers run under.
	runCtx context.Context
}

// New builds the controller from c.
func New(c *controllers.Context, o Options) (*Controller, error) {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.ResyncPeriod <= 0 {
		o.ResyncPeriod = DefaultResyncPeriod
	}
	rc := &Controller{client: c.Client, log: c.Logger, now: c.Now, opts: o, meta: c.MetadataInformers,
		queue: controllers.NewQueue("resourcequota_primary"), monitored: map[schema.GroupResource]cache.InformerSynced{}}
	if rc.now == nil {
		rc.now = time.Now
	}
	if rc.log == nil {
		rc.log = slog.Default()
	}
	if c.Config != nil {
		d, err := discovery.NewDiscoveryClientForConfig(c.Config)
		if err != nil {
			return nil, err
		}
		rc.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(d))
	}
	qi := c.Informers.Core().V1().ResourceQuotas()
	rc.quotas = qi.Lister()
	rc.synced = append(rc.synced, qi.Informer().HasSynced)
	if _, err := qi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { controllers.Enqueue(rc.queue, obj) },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.ResourceQuota)
			n, ok2 := cur.(*corev1.ResourceQuota)
			if ok1 && ok2 && quota.Equals(o.Spec.Hard, n.Spec.Hard) && rc.statusCounted(n) {
				return // its own status write, or a change that counts nothing new
			}
			controllers.Enqueue(rc.queue, cur)
		},
		DeleteFunc: func(obj any) { controllers.Enqueue(rc.queue, obj) },
	}); err != nil {
		return nil, err
	}
	evs, err := rc.typedEvaluators(c.Informers)
	if err != nil {
		return nil, err
	}
	rc.registry = generic.NewRegistry(evs)
	return rc, nil
}

// typedEvaluators builds the named evaluators on the shared typed
// informers, and has a change to what they count replenish the quotas.
func (rc *Controller) typedEvaluators(f informers.SharedInformerFactory) ([]quota.Evaluator, error) {
	listers := map[schema.GroupResource]cache.GenericLister{}
	for gr := range quotaeval.Evaluators(quotaeval.Options{}) {
		gi, err := f.ForResource(gr.WithVersion("v1"))
		if err != nil {
			return nil, fmt.Errorf("informer for %s: %w", gr, err)
		}
		listers[gr] = gi.Lister()
		rc.synced = append(rc.synced, gi.Informer().HasSynced)
	}
	evs := quotaeval.Evaluators(quotaeval.Options{Now: rc.now, List: func(gr schema.GroupResource) generic.ListFuncByNamespace {
		return listByNamespace(listers[gr])
	}})
	out := make([]quota.Evaluator, 0, len(evs))
	for gr, ev := range evs {
		gi, _ := f.ForResource(gr.WithVersion("v1"))
		if _, err := gi.Informer().AddEventHandler(rc.replenisher(gr, ev)); err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// listByNamespace lists l's objects in a namespace.
func listByNamespace(l cache.GenericLister) generic.ListFuncByNamespace {
	return func(ns string) ([]runtime.Object, error) { return l.ByNamespace(ns).List(labels.Everything()) }
}

// replenisher has the quotas of an object's namespace that count gr
// counted again when one is created or deleted, or changes what it uses
// or the scopes it falls in.
func (rc *Controller) replenisher(gr schema.GroupResource, ev quota.Evaluator) cache.ResourceEventHandler {
	replenish := func(obj any) {
		if m, err := metaOf(controllers.Unwrap(obj)); err == nil {
			rc.replenish(gr, ev, m.GetNamespace())
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    replenish,
		DeleteFunc: replenish,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(runtime.Object)
			n, ok2 := cur.(runtime.Object)
			if ok1 && ok2 && usageChanged(ev, o, n) {
				replenish(cur)
			}
		},
	}
}

func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}

// scopeProbes are the scopes whose match an update may change.
var scopeProbes = []corev1.ScopedResourceSelectorRequirement{
	{ScopeName: corev1.ResourceQuotaScopeTerminating, Operator: corev1.ScopeSelectorOpExists},
	{ScopeName: corev1.ResourceQuotaScopeBestEffort, Operator: corev1.ScopeSelectorOpExists},
	{ScopeName: corev1.ResourceQuotaScopeCrossNamespacePodAffinity, Operator: corev1.ScopeSelectorOpExists},
	{ScopeName: corev1.ResourceQuotaScopeVolumeAttributesClass, Operator: corev1.ScopeSelectorOpExists},
}

// usageChanged reports whether an update changed what an object uses or
// which scopes it falls in: a pod that finished or was resized, a
// service of another type, a claim asking for more storage.
func usageChanged(ev quota.Evaluator, old, cur runtime.Object) bool {
	ou, oerr := ev.Usage(old)
	nu, nerr := ev.Usage(cur)
	if oerr != nil || nerr != nil || !quota.Equals(ou, nu) {
		return true
	}
	os, oerr := ev.MatchingScopes(old, scopeProbes)
	ns, nerr := ev.MatchingScopes(cur, scopeProbes)
	return oerr != nil || nerr != nil || !apiequality.Semantic.DeepEqual(os, ns)
}

// replenish queues the quotas of namespace whose status counts a
// resource ev matches.
func (rc *Controller) replenish(gr schema.GroupResource, ev quota.Evaluator, namespace string) {
	qs, err := rc.quotas.ResourceQuotas(namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range qs {
		if len(ev.MatchingResources(quota.ResourceNames(q.Status.Hard))) > 0 || len(ev.MatchingResources(quota.ResourceNames(q.Spec.Hard))) > 0 {
			controllers.Enqueue(rc.queue, q)
		}
	}
}

// statusCounted reports whether q's status already holds its spec.hard
// and a used entry for each name in it that an evaluator counts.
func (rc *Controller) statusCounted(q *corev1.ResourceQuota) bool {
	if !apiequality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard) {
		return false
	}
	for name := range q.Status.Hard {
		if _, ok := q.Status.Used[name]; ok {
			continue
		}
		if _, count := countResource(name); count {
			return false // a resource not watched yet, maybe
		}
		for _, ev := range rc.registry.List() {
			if len(ev.MatchingResources([]corev1.ResourceName{name})) > 0 {
				return false
			}
		}
	}
	return true
}

// Run counts quotas until ctx is done.
func (rc *Controller) Run(ctx context.Context) error {
	rc.mu.Lock()
	rc.runCtx = ctx
	rc.mu.Unlock()
	go wait.UntilWithContext(ctx, func(context.Context) { rc.enqueueAll() }, rc.opts.ResyncPeriod)
	return controllers.RunWorkers(ctx, "resourcequota", rc.queue, rc.opts.Workers, rc.log, rc.sync, rc.synced...)
}

// enqueueAll queues every quota, the full resync.
func (rc *Controller) enqueueAll() {
	qs, err := rc.quotas.List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range qs {
		controllers.Enqueue(rc.queue, q)
	}
}

func (rc *Controller) sync(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	q, err := rc.quotas.ResourceQuotas(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := rc.monitorCounts(ctx, q.Spec.Hard); err != nil {
		return err
	}
	hard := quota.Add(corev1.ResourceList{}, q.Spec.Hard)
	used := quota.Add(corev1.ResourceList{}, q.Status.Used)
	counted, calcErr := quota.CalculateUsage(ns, q.Spec.Scopes, hard, rc.registry, q.Spec.ScopeSelector)
	for n, v := range counted {
		used[n] = v
	}
	used = quota.Mask(used, quota.ResourceNames(hard))
	dirty := !apiequality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard) || q.Status.Hard == nil || q.Status.Used == nil ||
		!quota.Equals(used, q.Status.Used)
	if dirty {
		up := q.DeepCopy()
		up.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
		if _, err := rc.client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, up, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
	}
	return calcErr
}

// countResource is the resource a count/RESOURCE.GROUP name counts.
func countResource(name corev1.ResourceName) (schema.GroupResource, bool) {
	rest, ok := strings.CutPrefix(string(name), "count/")
	if !ok || rest == "" {
		return schema.GroupResource{}, false
	}
	res, group, _ := strings.Cut(rest, ".")
	return schema.GroupResource{Group: group, Resource: res}, res != ""
}

// monitorCounts watches each resource a count/RESOURCE.GROUP name of hard
// counts that no evaluator counts yet, and waits for its informer to
// fill. A resource the API server does not serve is left uncounted.
func (rc *Controller) monitorCounts(ctx context.Context, hard corev1.ResourceList) error {
	var waitFor []cache.InformerSynced
	for name := range hard {
		gr, ok := countResource(name)
		if !ok || quotaeval.Ignored[gr] {
			continue
		}
		rc.mu.Lock()
		synced, seen := rc.monitored[gr]
		rc.mu.Unlock()
		if !seen && rc.registry.Get(gr) != nil {
			continue
		}
		if !seen {
			var err error
			if synced, err = rc.monitor(gr); err != nil {
				rc.log.Debug("not counting a resource the API server does not serve", "resource", gr.String(), "err", err)
				continue
			}
		}
		waitFor = append(waitFor, synced)
	}
	if len(waitFor) == 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, monitorSyncWait)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), waitFor...) {
		return controllers.Quiet(fmt.Errorf("the informers of the counted resources have not filled yet"))
	}
	return nil
}

// monitor starts watching gr's metadata, in the version discovery
// prefers, and adds its object count evaluator.
func (rc *Controller) monitor(gr schema.GroupResource) (cache.InformerSynced, error) {
	if rc.mapper == nil || rc.meta == nil {
		return nil, fmt.Errorf("no discovery")
	}
	gvr, err := rc.mapper.ResourceFor(gr.WithVersion(""))
	if err != nil {
		return nil, err
	}
	kind, err := rc.mapper.KindFor(gvr)
	if err != nil {
		return nil, err
	}
	if m, err := rc.mapper.RESTMapping(kind.GroupKind(), gvr.Version); err != nil || m.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil, fmt.Errorf("%s is not a namespaced resource", gr)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if synced, ok := rc.monitored[gr]; ok {
		return synced, nil
	}
	gi := rc.meta.ForResource(gvr)
	ev := quotaeval.ObjectCount(gr, listByNamespace(gi.Lister()))
	if _, err := gi.Informer().AddEventHandler(rc.replenisher(gr, ev)); err != nil {
		return nil, err
	}
	rc.registry.Add(ev)
	rc.monitored[gr] = gi.Informer().HasSynced
	if rc.runCtx != nil {
		rc.meta.Start(rc.runCtx.Done())
	}
	return gi.Informer().HasSynced, nil
}
