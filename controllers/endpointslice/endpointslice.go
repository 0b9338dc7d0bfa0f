// Package endpointslice is kube-controller-manager's endpointslice
// controller (docs/kubernetes-behaviour.md G.10): for every Service with
// a selector (not of type ExternalName) it keeps EndpointSlices named
// SERVICE-<random> (generateName), labelled kubernetes.io/service-name
// and endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io,
// controlled by the Service, holding an endpoint for every pod the
// selector matches that has an IP: its address of the slice's family, its
// ready, serving and terminating conditions, node, zone and target
// reference. Endpoints are grouped by the ports the Service's target
// ports resolve to on their pod, at most 100 to a slice; a Service with
// no endpoints keeps one empty placeholder slice. A Service without a
// selector is left alone; a deleted Service's slices go with it through
// the garbage collector, as in kube.
//
// The identity it runs as needs: services, pods and nodes list and watch;
// endpointslices list, watch, create, update and delete.
package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

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
	client   kubernetes.Interface
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	slices   discoverylisters.EndpointSliceLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	triggers endpointutil.TriggerTimes
	log      *slog.Logger

	// written remembers, per Service, the generation of each slice this
	// controller last wrote (gone for a deleted one) and when, so that a
	// sync does not act on a cache that has not seen its own writes yet.
	// seenDeleted holds the UIDs of the slices the cache has seen deleted
	// lately: a write answered after its slice's delete event is not
	// waited for. Both are kept for staleTimeout at most.
	mu          sync.Mutex
	written     map[string]map[string]expectation
	seenDeleted map[types.UID]time.Time
	now         func() time.Time
}

// expectation is a write the cache should show: the slice's generation
// (gone for a delete), and when it was made.
type expectation struct {
	gen int64
	at  time.Time
}

// gone marks a deleted slice in written.
const gone = -1

// staleTimeout bounds the wait for the cache to show a write: a slice
// deleted and re-listed away before its events arrived never shows, and
// the Service is synced from the cache as it is then.
const staleTimeout = 30 * time.Second

// stale reports whether the cache lacks a write this controller made for
// the Service key, and forgets the writes it has, and those waited for
// longer than staleTimeout.
func (c *Controller) stale(key, ns string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	stale := false
	now := c.now()
	for name, want := range c.written[key] {
		s, err := c.slices.EndpointSlices(ns).Get(name)
		switch {
		case now.Sub(want.at) > staleTimeout:
			c.log.Warn("the EndpointSlice cache never showed a write; syncing without it", "service", key, "slice", name)
			delete(c.written[key], name)
		case want.gen == gone && err == nil, want.gen != gone && (err != nil || s.Generation < want.gen):
			stale = true
		default:
			delete(c.written[key], name)
		}
	}
	if len(c.written[key]) == 0 {
		delete(c.written, key)
	}
	return stale
}

// wrote records a write of the slice name (UID uid) for the Service key,
// unless the cache has already seen that slice deleted.
func (c *Controller) wrote(key, name string, uid types.UID, gen int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for u, at := range c.seenDeleted {
		if now.Sub(at) > staleTimeout {
			delete(c.seenDeleted, u)
		}
	}
	if _, ok := c.seenDeleted[uid]; ok {
		return
	}
	if c.written == nil {
		c.written = map[string]map[string]expectation{}
	}
	if c.written[key] == nil {
		c.written[key] = map[string]expectation{}
	}
	c.written[key][name] = expectation{gen: gen, at: now}
}

// New builds the controller on factory's informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, log *slog.Logger) *Controller {
	svcInf := factory.Core().V1().Services()
	podInf := factory.Core().V1().Pods()
	nodeInf := factory.Core().V1().Nodes()
	sliceInf := factory.Discovery().V1().EndpointSlices()
	c := &Controller{client: client, services: svcInf.Lister(), pods: podInf.Lister(), nodes: nodeInf.Lister(), slices: sliceInf.Lister(),
		synced: []cache.InformerSynced{svcInf.Informer().HasSynced, podInf.Informer().HasSynced, nodeInf.Informer().HasSynced,
			sliceInf.Informer().HasSynced},
		queue: controllers.NewQueue("endpointslice"), log: log, now: time.Now}
	enqueue := func(obj any) { controllers.Enqueue(c.queue, obj) }
	_, _ = svcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) }, DeleteFunc: enqueue})
	_, _ = podInf.Informer().AddEventHandler(endpointutil.PodHandler(c.services, c.queue))
	// A slice of ours changed or deleted by someone else is put back.
	_, _ = sliceInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, cur any) { c.sliceChanged(cur, false) }, DeleteFunc: func(obj any) { c.sliceChanged(obj, true) }})
	_ = nodeInf.Informer() // zones are read from the node cache
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
		delete(c.written[key], s.Name)
		if c.seenDeleted == nil {
			c.seenDeleted = map[types.UID]time.Time{}
		}
		c.seenDeleted[s.UID] = c.now()
		c.mu.Unlock()
	}
	c.queue.Add(key)
}

// Run syncs Services until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	return controllers.RunWorkers(ctx, "endpointslice", c.queue, DefaultWorkers, c.log, c.sync, c.synced...)
}

// owned lists the slices of the Service named name in ns that this
// controller manages.
func (c *Controller) owned(ns, name string) ([]*discoveryv1.EndpointSlice, error) {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ControllerName})
	return c.slices.EndpointSlices(ns).List(sel)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// The garbage collector deletes the slices the Service owned.
		c.triggers.Forget(key)
		return nil
	}
	if err != nil || !endpointutil.ManagedService(svc) {
		return err
	}
	if svc.DeletionTimestamp != nil {
		return nil
	}
	if c.stale(key, ns) {
		// The informer brings the write soon; look again then.
		c.queue.AddAfter(key, staleRetry)
		return nil
	}
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	existing, err := c.owned(ns, name)
	if err != nil {
		return err
	}
	trigger := c.triggers.Compute(svc, pods)
	r := &reconcile{c: c, svc: svc, trigger: trigger}
	for _, at := range addressTypes(svc) {
		var mine []*discoveryv1.EndpointSlice
		for _, s := range existing {
			if s.AddressType == at {
				mine = append(mine, s)
			}
		}
		r.plan(at, c.desired(svc, pods, at), mine)
	}
	// Slices of an address type the Service no longer has go.
	for _, s := range existing {
		if !slices.Contains(addressTypes(svc), s.AddressType) {
			r.deletes = append(r.deletes, s)
		}
	}
	return r.apply(ctx)
}

// staleRetry is when a Service held back by a cache that has not seen the
// controller's last writes is looked at again, if no event comes first.
const staleRetry = 100 * time.Millisecond

// addressTypes are the slice address types of svc's IP families (IPv4
// without any).
func addressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var out []discoveryv1.AddressType
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case corev1.IPv4Protocol:
			out = append(out, discoveryv1.AddressTypeIPv4)
		case corev1.IPv6Protocol:
			out = append(out, discoveryv1.AddressTypeIPv6)
		}
	}
	if len(out) == 0 {
		if a, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil && a.Is6() && !a.Is4In6() {
			return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}
		}
		return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
	}
	return out
}

// group is the endpoints of one set of ports.
type group struct {
	ports     []discoveryv1.EndpointPort
	endpoints []discoveryv1.Endpoint
}

// desired groups the endpoints svc's pods give, for address type at, by
// their ports, in the pods' name order.
func (c *Controller) desired(svc *corev1.Service, pods []*corev1.Pod, at discoveryv1.AddressType) map[string]*group {
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	out := map[string]*group{}
	for _, pod := range pods {
		if !endpointutil.Serves(pod, true) {
			continue
		}
		addr := podAddress(pod, at)
		if addr == "" {
			continue
		}
		ports := endpointPorts(svc, pod)
		k := portsKey(ports)
		g := out[k]
		if g == nil {
			g = &group{ports: ports}
			out[k] = g
		}
		g.endpoints = append(g.endpoints, c.endpoint(svc, pod, addr))
	}
	return out
}

// podAddress is pod's first IP of address type at; empty without one.
func podAddress(pod *corev1.Pod, at discoveryv1.AddressType) string {
	ips := []string{pod.Status.PodIP}
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	for _, ip := range ips {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			continue
		}
		if v6 := a.Is6() && !a.Is4In6(); v6 == (at == discoveryv1.AddressTypeIPv6) {
			return ip
		}
	}
	return ""
}

// endpointPorts are the ports svc's ports reach on pod; a named target
// port the pod lacks is left out.
func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	out := []discoveryv1.EndpointPort{}
	if len(svc.Spec.Ports) == 0 && svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return out // a headless Service may have no ports
	}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		n, err := endpointutil.FindPort(pod, sp)
		if err != nil {
			continue
		}
		out = append(out, discoveryv1.EndpointPort{Name: ptr(sp.Name), Port: ptr(n), Protocol: ptr(sp.Protocol), AppProtocol: sp.AppProtocol})
	}
	return out
}

func portsKey(ports []discoveryv1.EndpointPort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = fmt.Sprintf("%s/%d/%s/%s", deref(p.Name), deref(p.Port), deref(p.Protocol), deref(p.AppProtocol))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// endpoint is pod's endpoint: ready when serving and not terminating
// (always, when the Service publishes not-ready addresses).
func (c *Controller) endpoint(svc *corev1.Service, pod *corev1.Pod, addr string) discoveryv1.Endpoint {
	serving := controllers.PodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ready := svc.Spec.PublishNotReadyAddresses || serving && !terminating
	ep := discoveryv1.Endpoint{Addresses: []string{addr},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr(ready), Serving: ptr(serving), Terminating: ptr(terminating)},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
	if pod.Spec.NodeName != "" {
		ep.NodeName = ptr(pod.Spec.NodeName)
		if node, err := c.nodes.Get(pod.Spec.NodeName); err == nil && node.Labels[corev1.LabelTopologyZone] != "" {
			ep.Zone = ptr(node.Labels[corev1.LabelTopologyZone])
		}
	}
	if endpointutil.SetsHostname(pod, svc) {
		ep.Hostname = ptr(pod.Spec.Hostname)
	}
	return ep
}

// endpointKey identifies an endpoint across syncs: its pod, else its
// addresses.
func endpointKey(ep *discoveryv1.Endpoint) string {
	if ep.TargetRef != nil && ep.TargetRef.UID != "" {
		return "uid:" + string(ep.TargetRef.UID)
	}
	return "addr:" + strings.Join(ep.Addresses, ",")
}

// reconcile collects the writes that bring a Service's slices in step.
type reconcile struct {
	c       *Controller
	svc     *corev1.Service
	trigger time.Time
	creates []*discoveryv1.EndpointSlice
	updates []*discoveryv1.EndpointSlice
	deletes []*discoveryv1.EndpointSlice
}

// plan compares the wanted groups of one address type with the slices
// there are: endpoints still wanted stay in their slice (updated when
// they changed), the others leave it; new endpoints fill the slices with
// room, then new slices; emptied slices go. With no endpoints at all one
// empty placeholder slice stays.
func (r *reconcile) plan(at discoveryv1.AddressType, want map[string]*group, have []*discoveryv1.EndpointSlice) {
	slices.SortFunc(have, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	wantLabels := r.labels()
	total := 0
	for _, g := range want {
		total += len(g.endpoints)
	}
	if total == 0 {
		// Keep (or make) one placeholder: no ports, no endpoints.
		var keep *discoveryv1.EndpointSlice
		for _, s := range have {
			if keep == nil && len(s.Ports) == 0 {
				keep = s
				continue
			}
			r.deletes = append(r.deletes, s)
		}
		if keep == nil {
			r.creates = append(r.creates, r.newSlice(at, nil))
		} else if !r.current(keep, wantLabels) || len(keep.Endpoints) > 0 {
			s := keep.DeepCopy()
			s.Endpoints = nil
			r.updates = append(r.updates, r.refresh(s, wantLabels))
		}
		return
	}
	// Endpoints wanted, by group and key.
	wanted := map[string]map[string]discoveryv1.Endpoint{}
	for k, g := range want {
		wanted[k] = map[string]discoveryv1.Endpoint{}
		for _, ep := range g.endpoints {
			wanted[k][endpointKey(&ep)] = ep
		}
	}
	placed := map[string]bool{} // group/endpoint keys already in a slice
	withRoom := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range have {
		k := portsKey(s.Ports)
		w, ok := wanted[k]
		if !ok {
			r.deletes = append(r.deletes, s)
			continue
		}
		var eps []discoveryv1.Endpoint
		for _, ep := range s.Endpoints {
			ek := endpointKey(&ep)
			if next, ok := w[ek]; ok && !placed[k+"/"+ek] {
				placed[k+"/"+ek] = true
				eps = append(eps, next)
			}
		}
		if len(eps) == 0 {
			r.deletes = append(r.deletes, s)
			continue
		}
		changed := !apiequality.Semantic.DeepEqual(eps, s.Endpoints) || !r.current(s, wantLabels)
		s = s.DeepCopy()
		s.Endpoints = eps
		if changed {
			s = r.refresh(s, wantLabels)
			r.updates = append(r.updates, s)
		}
		if len(s.Endpoints) < MaxEndpointsPerSlice {
			withRoom[k] = append(withRoom[k], s)
		}
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		g := want[k]
		var missing []discoveryv1.Endpoint
		for _, ep := range g.endpoints {
			if !placed[k+"/"+endpointKey(&ep)] {
				missing = append(missing, ep)
			}
		}
		for _, s := range withRoom[k] {
			if len(missing) == 0 {
				break
			}
			n := min(MaxEndpointsPerSlice-len(s.Endpoints), len(missing))
			s.Endpoints = append(s.Endpoints, missing[:n]...)
			missing = missing[n:]
			if !slices.Contains(r.updates, s) {
				r.updates = append(r.updates, r.refresh(s, wantLabels))
			}
		}
		for len(missing) > 0 {
			n := min(MaxEndpointsPerSlice, len(missing))
			s := r.newSlice(at, g.ports)
			s.Endpoints = missing[:n]
			missing = missing[n:]
			r.creates = append(r.creates, s)
		}
	}
}

// labels are a slice's labels: the Service's, its name, the manager and,
// for a headless Service, service.kubernetes.io/headless.
func (r *reconcile) labels() map[string]string {
	l := map[string]string{}
	for k, v := range r.svc.Labels {
		if k == discoveryv1.LabelServiceName || k == discoveryv1.LabelManagedBy || k == corev1.IsHeadlessService {
			continue
		}
		l[k] = v
	}
	l[discoveryv1.LabelServiceName] = r.svc.Name
	l[discoveryv1.LabelManagedBy] = ControllerName
	if r.svc.Spec.ClusterIP == corev1.ClusterIPNone || r.svc.Spec.ClusterIP == "" {
		l[corev1.IsHeadlessService] = ""
	}
	return l
}

// current reports whether s has the labels and owner it should.
func (r *reconcile) current(s *discoveryv1.EndpointSlice, want map[string]string) bool {
	return apiequality.Semantic.DeepEqual(s.Labels, want) && metav1.IsControlledBy(s, r.svc)
}

// refresh sets s's labels, owner and trigger time.
func (r *reconcile) refresh(s *discoveryv1.EndpointSlice, want map[string]string) *discoveryv1.EndpointSlice {
	s.Labels = want
	if !metav1.IsControlledBy(s, r.svc) {
		s.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(r.svc, corev1.SchemeGroupVersion.WithKind("Service"))}
	}
	if !r.trigger.IsZero() {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[corev1.EndpointsLastChangeTriggerTime] = endpointutil.FormatTriggerTime(r.trigger)
	} else {
		delete(s.Annotations, corev1.EndpointsLastChangeTriggerTime)
	}
	return s
}

// newSlice is a slice for r's Service named from its name.
func (r *reconcile) newSlice(at discoveryv1.AddressType, ports []discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
	prefix := r.svc.Name + "-"
	if len(apivalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		prefix = "endpointslice-"
	}
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Namespace: r.svc.Namespace},
		AddressType: at, Ports: ports, Endpoints: []discoveryv1.Endpoint{}}
	return r.refresh(s, r.labels())
}

// apply writes the plan: creates, then updates, then deletes, as kube's
// reconciler orders them so that no endpoint is missing in between.
func (r *reconcile) apply(ctx context.Context) error {
	api := r.c.client.DiscoveryV1().EndpointSlices(r.svc.Namespace)
	key := r.svc.Namespace + "/" + r.svc.Name
	var errs []error
	for _, s := range r.creates {
		got, err := api.Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			if apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
			errs = append(errs, err)
			continue
		}
		r.c.wrote(key, got.Name, got.UID, got.Generation)
	}
	for _, s := range r.updates {
		got, err := api.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		r.c.wrote(key, got.Name, got.UID, got.Generation)
	}
	for _, s := range r.deletes {
		err := api.Delete(ctx, s.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		r.c.wrote(key, s.Name, s.UID, gone)
	}
	return errors.Join(errs...)
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
