// Package garbagecollector is kube-controller-manager's garbage
// collector: it deletes the objects whose owners are gone, and carries out
// the foreground and orphan deletions the API server starts (docs/
// kubernetes-behaviour.md G.8).
//
// It watches the metadata of every resource that can be listed, watched
// and deleted (found through discovery, again every 30 seconds; events are
// left out, as kube leaves them), and keeps a graph of owners and their
// dependents from the ownerReferences it sees. Then:
//
//   - background: an object whose owners are all gone is deleted, with
//     its own finalizers deciding the propagation (orphan, foreground,
//     else background). An owner counts as gone only when a live GET by
//     the kind and name its reference gives (in the dependent's namespace
//     for a namespaced kind) finds nothing or an object with another UID,
//     and is remembered as gone by those coordinates only, never by its
//     UID alone; an owner that is itself being deleted in the foreground
//     keeps no dependent alive, and a dependent that has dependents of
//     its own is then deleted in the foreground too;
//   - foreground: an owner being deleted with the foregroundDeletion
//     finalizer has its dependents deleted, and the finalizer removed once
//     none of the dependents whose reference has blockOwnerDeletion is
//     left, so the API server deletes it;
//   - orphan: an owner being deleted with the orphan finalizer has its
//     reference removed from every dependent, then the finalizer removed.
//
// The identity it runs as needs get, list, watch, patch and delete on
// every resource.
package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/controllers"
)

// Descriptor runs the collector in the controller manager, as kube's
// "garbagecollector" controller.
var Descriptor = controllers.Descriptor{Name: "garbagecollector", ServiceAccount: "generic-garbage-collector", New: func(c *controllers.Context) (controllers.Controller, error) {
	d, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	return New(c.Metadata, d, c.MetadataInformers, Options{Logger: c.Logger}), nil
}}

// Options configure a Collector.
type Options struct {
	// Workers is how many objects are worked on at once; 0 means 20,
	// kube's --concurrent-gc-syncs.
	Workers int
	// ResyncPeriod is how often discovery is read again for new
	// resources; 0 means 30 seconds, as kube.
	ResyncPeriod time.Duration
	// Logger receives the collector's logs; nil means slog.Default().
	Logger *slog.Logger
}

// ignored are the resources the collector never watches, kube's default.
var ignored = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// watchAndDelete selects the resources the collector watches.
var watchAndDelete = discovery.SupportsAllVerbs{Verbs: []string{"list", "watch", "delete"}}

// Collector is the garbage collector.
type Collector struct {
	meta      metadata.Interface
	discovery discovery.DiscoveryInterface
	factory   metadatainformer.SharedInformerFactory
	opts      Options
	log       *slog.Logger
	graph     *graph
	toDelete  workqueue.TypedRateLimitingInterface[types.UID]
	toOrphan  workqueue.TypedRateLimitingInterface[types.UID]

	mu        sync.RWMutex
	monitored map[schema.GroupVersionResource]cache.InformerSynced
	// kinds maps every served kind, in every version, to its resource.
	kinds map[schema.GroupVersionKind]resourceInfo
}

type resourceInfo struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// New builds the collector; it discovers and watches resources when it
// runs.
func New(meta metadata.Interface, d discovery.DiscoveryInterface, factory metadatainformer.SharedInformerFactory, o Options) *Collector {
	if o.Workers <= 0 {
		o.Workers = 20
	}
	if o.ResyncPeriod <= 0 {
		o.ResyncPeriod = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	newQueue := func(name string) workqueue.TypedRateLimitingInterface[types.UID] {
		return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.UID](),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: name})
	}
	return &Collector{meta: meta, discovery: d, factory: factory, opts: o, log: o.Logger, graph: newGraph(),
		toDelete: newQueue("garbage_collector_attempt_to_delete"), toOrphan: newQueue("garbage_collector_attempt_to_orphan"),
		monitored: map[schema.GroupVersionResource]cache.InformerSynced{}, kinds: map[schema.GroupVersionKind]resourceInfo{}}
}

// Run collects garbage until ctx is done.
func (c *Collector) Run(ctx context.Context) error {
	defer c.toDelete.ShutDown()
	defer c.toOrphan.ShutDown()
	if err := c.resync(ctx); err != nil && len(c.syncedFuncs()) == 0 {
		c.log.Warn("discovery failed; retrying", "err", err)
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.syncedFuncs()...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("garbagecollector: the caches did not sync")
	}
	var wg sync.WaitGroup
	for range c.opts.Workers {
		wg.Go(func() { c.work(ctx, c.toDelete, c.attemptToDelete) })
		wg.Go(func() { c.work(ctx, c.toOrphan, c.attemptToOrphan) })
	}
	wg.Go(func() {
		t := time.NewTicker(c.opts.ResyncPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := c.resync(ctx); err != nil {
					c.log.Warn("discovery failed", "err", err)
				}
			}
		}
	})
	<-ctx.Done()
	c.toDelete.ShutDown()
	c.toOrphan.ShutDown()
	wg.Wait()
	return nil
}

func (c *Collector) syncedFuncs() []cache.InformerSynced {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []cache.InformerSynced
	for _, s := range c.monitored {
		out = append(out, s)
	}
	return out
}

func (c *Collector) work(ctx context.Context, q workqueue.TypedRateLimitingInterface[types.UID], handle func(context.Context, types.UID) error) {
	for {
		uid, quit := q.Get()
		if quit {
			return
		}
		err := handle(ctx, uid)
		switch {
		case err == nil:
			q.Forget(uid)
		case ctx.Err() != nil:
		case errors.Is(err, errNamespacedOwnerOfClusterScoped):
			// Retrying cannot change it: kube leaves the object alone.
			c.log.Warn("object left alone", "uid", uid, "err", err)
			q.Forget(uid)
		default:
			c.log.Warn("garbage collection failed; retrying", "uid", uid, "err", err)
			q.AddRateLimited(uid)
		}
		q.Done(uid)
	}
}

// resync reads discovery: it learns every kind's resource, forgets the
// kinds no longer served, and watches the resources that can be listed,
// watched and deleted and are not yet watched. A partial discovery
// failure still watches what was found.
func (c *Collector) resync(ctx context.Context) error {
	_, all, err := c.discovery.ServerGroupsAndResources()
	kinds := map[schema.GroupVersionKind]resourceInfo{}
	var watchable []schema.GroupVersionResource
	kindOf := map[schema.GroupVersionResource]string{}
	for _, list := range all {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			gvr := gv.WithResource(r.Name)
			kinds[gv.WithKind(r.Kind)] = resourceInfo{gvr: gvr, namespaced: r.Namespaced}
			if !ignored[gvr.GroupResource()] && watchAndDelete.Match(list.GroupVersion, &r) {
				watchable = append(watchable, gvr)
				kindOf[gvr] = r.Kind
			}
		}
	}
	// Watch one version of each resource: the server's preferred one
	// when discovery names it, else the first seen.
	preferred := map[schema.GroupResource]schema.GroupVersionResource{}
	if groups, gerr := c.discovery.ServerGroups(); gerr == nil {
		for _, g := range groups.Groups {
			for _, gvr := range watchable {
				if gvr.Group == g.Name && gvr.Version == g.PreferredVersion.Version {
					preferred[gvr.GroupResource()] = gvr
				}
			}
		}
	}
	for _, gvr := range watchable {
		if _, ok := preferred[gvr.GroupResource()]; !ok {
			preferred[gvr.GroupResource()] = gvr
		}
	}
	c.mu.Lock()
	c.kinds = mergeKinds(c.kinds, kinds, err)
	added := false
	for _, gvr := range preferred {
		if _, ok := c.monitored[gvr]; ok {
			continue
		}
		info := kinds[gvr.GroupVersion().WithKind(kindOf[gvr])]
		informer := c.factory.ForResource(gvr).Informer()
		if _, herr := informer.AddEventHandler(c.handler(gvr, kindOf[gvr], info.namespaced)); herr != nil {
			c.mu.Unlock()
			return herr
		}
		c.monitored[gvr] = informer.HasSynced
		added = true
	}
	c.mu.Unlock()
	if added {
		c.factory.Start(ctx.Done())
	}
	return err
}

// mergeKinds returns the kind map after a discovery that found found and
// failed with err. A discovery that succeeded replaces the map, so a kind
// no longer served has no resource; one that failed for some groups keeps
// what was known of those groups; one that failed otherwise only adds.
func mergeKinds(old, found map[schema.GroupVersionKind]resourceInfo, err error) map[schema.GroupVersionKind]resourceInfo {
	out := make(map[schema.GroupVersionKind]resourceInfo, len(found))
	if err != nil {
		var groupsFailed *discovery.ErrGroupDiscoveryFailed
		partial := errors.As(err, &groupsFailed)
		for k, v := range old {
			if !partial {
				out[k] = v
			} else if _, failed := groupsFailed.Groups[k.GroupVersion()]; failed {
				out[k] = v
			}
		}
	}
	for k, v := range found {
		out[k] = v
	}
	return out
}

// handler feeds one resource's events into the graph.
func (c *Collector) handler(gvr schema.GroupVersionResource, kind string, namespaced bool) cache.ResourceEventHandler {
	refOf := func(obj metav1.Object) objectRef {
		return objectRef{gvr: gvr, kind: kind, namespaced: namespaced, namespace: obj.GetNamespace(), name: obj.GetName(), uid: obj.GetUID()}
	}
	upsert := func(obj any) {
		acc, err := meta.Accessor(obj)
		if err != nil {
			return
		}
		c.apply(c.graph.upsert(refOf(acc), acc))
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    upsert,
		UpdateFunc: func(_, obj any) { upsert(obj) },
		DeleteFunc: func(obj any) {
			obj = controllers.Unwrap(obj)
			if acc, err := meta.Accessor(obj); err == nil {
				c.apply(c.graph.remove(acc.GetUID()))
			}
		},
	}
}

func (c *Collector) apply(ch change) {
	for _, uid := range ch.toDelete {
		c.toDelete.Add(uid)
	}
	if ch.toOrphan != "" {
		c.toOrphan.Add(ch.toOrphan)
	}
}

// resourceFor finds the resource of an owner reference's kind.
func (c *Collector) resourceFor(apiVersion, kind string) (resourceInfo, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return resourceInfo{}, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	info, ok := c.kinds[gv.WithKind(kind)]
	if !ok {
		return resourceInfo{}, fmt.Errorf("no resource serves kind %s in %s", kind, apiVersion)
	}
	return info, nil
}

func (c *Collector) client(ref objectRef) metadata.ResourceInterface {
	if ref.namespaced {
		return c.meta.Resource(ref.gvr).Namespace(ref.namespace)
	}
	return c.meta.Resource(ref.gvr)
}

// live reads the object ref names; nil when it is gone or was replaced
// by another of the same name. A 404 for the resource itself (no longer
// served) is an error, not the object gone: the object may well exist
// and come back when its resource is served again.
func (c *Collector) live(ctx context.Context, ref objectRef) (*metav1.PartialObjectMetadata, error) {
	obj, err := c.client(ref).Get(ctx, ref.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if !objectNotFound(err, ref.name) {
			return nil, fmt.Errorf("look up %s %q: the resource is not served: %w", ref.gvr.String(), ref.name, err)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if obj.UID != ref.uid {
		return nil, nil
	}
	return obj, nil
}

// objectNotFound reports whether the NotFound err is about the object
// name: the API server names the object it did not find in the Status
// details, and names nothing when the path's resource is not served (its
// own Status for a served group, or a plain 404 for an unknown one).
func objectNotFound(err error, name string) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name == name
}

// attemptToDelete looks at the object uid: an owner waiting for its
// dependents, or a dependent whose owners may be gone.
func (c *Collector) attemptToDelete(ctx context.Context, uid types.UID) error {
	n, ok := c.graph.get(uid)
	if !ok || n.deleting && !n.foreground {
		return nil
	}
	if !n.foreground && c.ownersPresent(n) {
		return nil // every owner is in the graph and none waits for dependents
	}
	latest, err := c.live(ctx, n.ref)
	if err != nil {
		return err
	}
	if latest == nil {
		c.apply(c.graph.remove(uid))
		return nil
	}
	if latest.DeletionTimestamp != nil && slices.Contains(latest.Finalizers, metav1.FinalizerDeleteDependents) {
		return c.processDeletingDependents(ctx, n)
	}
	if latest.DeletionTimestamp != nil || len(latest.OwnerReferences) == 0 {
		return nil
	}
	solid, dangling, waiting, err := c.classify(ctx, n.ref, latest.OwnerReferences)
	if err != nil {
		return err
	}
	switch {
	case len(solid) > 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			return nil
		}
		// The references to gone owners, and to owners waiting for their
		// dependents, go; the object stays with its living owners.
		drop := append(uids(dangling), uids(waiting)...)
		return c.patchOwners(ctx, n.ref, func(o metav1.OwnerReference) (metav1.OwnerReference, bool) {
			return o, !slices.Contains(drop, o.UID)
		})
	case len(waiting) > 0 && len(c.graph.dependentsOf(uid)) > 0:
		for _, dep := range c.graph.dependentsOf(uid) {
			if dep.foreground {
				// a possible cycle: stop this object's references from
				// blocking its owners before it waits for its dependents
				if err := c.patchOwners(ctx, n.ref, func(o metav1.OwnerReference) (metav1.OwnerReference, bool) {
					if blocks(o) {
						o.BlockOwnerDeletion = new(bool)
					}
					return o, true
				}); err != nil {
					return err
				}
				break
			}
		}
		return c.deleteObject(ctx, n.ref, latest, metav1.DeletePropagationForeground)
	default:
		policy := metav1.DeletePropagationBackground
		switch {
		case slices.Contains(latest.Finalizers, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case slices.Contains(latest.Finalizers, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		c.log.Info("deleting an object whose owners are gone", "resource", n.ref.gvr.String(), "namespace", n.ref.namespace, "name", n.ref.name, "propagation", policy)
		return c.deleteObject(ctx, n.ref, latest, policy)
	}
}

// ownersPresent reports whether every owner of n is in the graph, named
// by n's reference with its own coordinates, not known to be gone, and
// not waiting for its dependents.
func (c *Collector) ownersPresent(n node) bool {
	for _, o := range n.owners {
		owner, ok := c.graph.get(o.UID)
		if !ok || owner.foreground || !owner.ref.namedBy(o, n.ref.namespace) || c.graph.isAbsent(o, n.ref.namespace) {
			return false
		}
	}
	return true
}

func uids(refs []metav1.OwnerReference) []types.UID {
	out := make([]types.UID, len(refs))
	for i, r := range refs {
		out[i] = r.UID
	}
	return out
}

// errNamespacedOwnerOfClusterScoped is classify's answer for a
// cluster-scoped object that names a namespaced owner: such a reference is
// invalid, not dangling, and the object is left alone, not retried (kube's
// namespacedOwnerOfClusterScopedObjectErr).
var errNamespacedOwnerOfClusterScoped = errors.New("a cluster-scoped object cannot have a namespaced owner")

// classify sorts the owner references of the object ref: owners that
// exist (solid), owners gone (dangling), and owners being deleted in the
// foreground (waiting). Each reference is checked by its own coordinates,
// as kube's isDangling checks it: the absent cache is asked for the owner
// they name, then the owner is read by kind and name (in ref's namespace
// when the kind is namespaced), and it is gone when the read finds nothing
// or an object with another UID. What the graph holds under the
// reference's UID plays no part.
func (c *Collector) classify(ctx context.Context, ref objectRef, owners []metav1.OwnerReference) (solid, dangling, waiting []metav1.OwnerReference, err error) {
	for _, o := range owners {
		if c.graph.isAbsent(o, ref.namespace) {
			dangling = append(dangling, o)
			continue
		}
		info, err := c.resourceFor(o.APIVersion, o.Kind)
		if err != nil {
			return nil, nil, nil, err
		}
		if info.namespaced && !ref.namespaced {
			return nil, nil, nil, fmt.Errorf("%s %q names %s %q: %w", ref.kind, ref.name, o.Kind, o.Name, errNamespacedOwnerOfClusterScoped)
		}
		owner := objectRef{gvr: info.gvr, kind: o.Kind, namespaced: info.namespaced, name: o.Name, uid: o.UID}
		if info.namespaced {
			owner.namespace = ref.namespace
		}
		latest, err := c.live(ctx, owner)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case latest == nil:
			c.graph.markAbsent(keyOf(o, owner.namespace))
			dangling = append(dangling, o)
		case latest.DeletionTimestamp != nil && slices.Contains(latest.Finalizers, metav1.FinalizerDeleteDependents):
			waiting = append(waiting, o)
		default:
			solid = append(solid, o)
		}
	}
	return solid, dangling, waiting, nil
}

// processDeletingDependents finishes a foreground deletion once no
// dependent blocks it, and otherwise sees that the blocking ones go.
func (c *Collector) processDeletingDependents(ctx context.Context, owner node) error {
	var blocking []node
	for _, dep := range c.graph.dependentsOf(owner.ref.uid) {
		for _, o := range dep.owners {
			if o.UID == owner.ref.uid && blocks(o) {
				blocking = append(blocking, dep)
				break
			}
		}
	}
	if len(blocking) == 0 {
		return c.removeFinalizer(ctx, owner.ref, metav1.FinalizerDeleteDependents)
	}
	for _, dep := range blocking {
		if !dep.foreground {
			c.toDelete.Add(dep.ref.uid)
		}
	}
	return nil
}

// attemptToOrphan releases the dependents of an owner deleted with the
// orphan finalizer, then removes the finalizer.
func (c *Collector) attemptToOrphan(ctx context.Context, uid types.UID) error {
	owner, ok := c.graph.get(uid)
	if !ok {
		return nil
	}
	for _, dep := range c.graph.dependentsOf(uid) {
		if err := c.patchOwners(ctx, dep.ref, func(o metav1.OwnerReference) (metav1.OwnerReference, bool) {
			return o, o.UID != uid
		}); err != nil {
			return fmt.Errorf("orphan %s %s/%s: %w", dep.ref.gvr.Resource, dep.ref.namespace, dep.ref.name, err)
		}
	}
	return c.removeFinalizer(ctx, owner.ref, metav1.FinalizerOrphanDependents)
}

// patchOwners rewrites the owner references of the object ref with keep
// (which may change a reference, or drop it), reading it afresh after a
// conflict; an object gone or replaced is left alone.
func (c *Collector) patchOwners(ctx context.Context, ref objectRef, keep func(metav1.OwnerReference) (metav1.OwnerReference, bool)) error {
	return c.patchLatest(ctx, ref, func(obj *metav1.PartialObjectMetadata) (map[string]any, bool) {
		var owners []metav1.OwnerReference
		for _, o := range obj.OwnerReferences {
			if o, ok := keep(o); ok {
				owners = append(owners, o)
			}
		}
		if reflect.DeepEqual(owners, obj.OwnerReferences) {
			return nil, false
		}
		return map[string]any{"ownerReferences": owners}, true
	})
}

// removeFinalizer takes finalizer away from the object ref.
func (c *Collector) removeFinalizer(ctx context.Context, ref objectRef, finalizer string) error {
	return c.patchLatest(ctx, ref, func(obj *metav1.PartialObjectMetadata) (map[string]any, bool) {
		if !slices.Contains(obj.Finalizers, finalizer) {
			return nil, false
		}
		var rest []string
		for _, f := range obj.Finalizers {
			if f != finalizer {
				rest = append(rest, f)
			}
		}
		return map[string]any{"finalizers": rest}, true
	})
}

// patchLatest reads the object ref and sends the metadata change that
// change computes as a merge patch carrying the resourceVersion read,
// again after a conflict.
func (c *Collector) patchLatest(ctx context.Context, ref objectRef, change func(*metav1.PartialObjectMetadata) (map[string]any, bool)) error {
	for {
		obj, err := c.live(ctx, ref)
		if err != nil || obj == nil {
			return err
		}
		fields, ok := change(obj)
		if !ok {
			return nil
		}
		fields["resourceVersion"] = obj.ResourceVersion
		fields["uid"] = obj.UID
		patch, err := json.Marshal(map[string]any{"metadata": fields})
		if err != nil {
			return err
		}
		_, err = c.client(ref).Patch(ctx, ref.name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case apierrors.IsConflict(err):
			continue
		case apierrors.IsNotFound(err):
			return nil
		default:
			return err
		}
	}
}

// deleteObject deletes the object ref as read in latest, on the condition
// that it has not changed since; when it has, but not its owners, it
// tries again on the condition of its UID only.
func (c *Collector) deleteObject(ctx context.Context, ref objectRef, latest *metav1.PartialObjectMetadata, policy metav1.DeletionPropagation) error {
	uid, rv := ref.uid, latest.ResourceVersion
	err := c.client(ref).Delete(ctx, ref.name, metav1.DeleteOptions{PropagationPolicy: &policy,
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	if apierrors.IsConflict(err) {
		now, lerr := c.live(ctx, ref)
		if lerr != nil {
			return err
		}
		if now == nil {
			return nil
		}
		if !reflect.DeepEqual(now.OwnerReferences, latest.OwnerReferences) {
			return err // its owners changed: look again
		}
		err = c.client(ref).Delete(ctx, ref.name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
