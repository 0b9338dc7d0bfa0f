package apiserver

//lint:file-ignore SA1019 v1 Endpoints are deprecated, and written for the kubernetes Service as kube-apiserver writes them (J.3)

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegate/kubegate/store"
)

// The kubernetes Service's endpoints, kept by the lease endpoint
// reconciler of kube-apiserver (docs/kubernetes-behaviour.md J.3): every
// API server sharing the store keeps a lease of its advertised address,
// and each one writes the Endpoints and the EndpointSlice "kubernetes" in
// default with the addresses of the leases there are, when they differ.

// The endpoint reconcilers (kube-apiserver's --endpoint-reconciler-type).
const (
	// EndpointReconcilerLease lists every API server that holds a lease.
	EndpointReconcilerLease = "lease"
	// EndpointReconcilerNone writes no endpoints.
	EndpointReconcilerNone = "none"
)

// kube-apiserver's lease TTL and reconcile interval.
const (
	DefaultEndpointLeaseTTL          = 15 * time.Second
	DefaultEndpointReconcileInterval = 10 * time.Second
)

// masterLeasesPrefix is where the leases are kept, kube-apiserver's own
// key: one key per advertised address, holding an Endpoints with it.
const masterLeasesPrefix = "/registry/masterleases/"

const kubernetesName = "kubernetes"

// CheckAdvertiseAddress refuses an address the lease reconciler cannot
// list, as kube-apiserver does at start: one an Endpoints may not hold
// (loopback, unspecified, link-local), or one of another family than the
// service range.
func CheckAdvertiseAddress(ip netip.Addr, serviceRange netip.Prefix) error {
	if errs := NonSpecialIP(nil, ip.String()); len(errs) > 0 {
		return fmt.Errorf("cannot use public IP %s with endpoint reconciler: %s", ip, errs[0].Detail)
	}
	if serviceRange.IsValid() && serviceRange.Addr().Is4() != ip.Unmap().Is4() {
		return fmt.Errorf("service IP family %q must match public address family %q", serviceRange, ip)
	}
	return nil
}

// endpointReconciler keeps this server's lease and the kubernetes
// endpoints.
type endpointReconciler struct {
	s             *Server
	ip            string
	port          int32
	ttl, interval time.Duration
	// leases keeps the leases in a store several servers share; nil: a
	// store no other server opens (bbolt), where this server's address,
	// while it runs, is the only one (own).
	leases store.Expirer
	own    bool
	// renew is cleared to stop the renewals, as of a server that was
	// killed; for tests.
	renew    atomic.Bool
	stopping atomic.Bool
	mu       sync.Mutex // one reconcile at a time
	cancel   context.CancelFunc
	done     chan struct{}
}

// startKubernetesEndpoints writes this server's lease and the endpoints
// once, then keeps them until stopKubernetesEndpoints.
func (s *Server) startKubernetesEndpoints(c Config) error {
	if c.EndpointReconciler == EndpointReconcilerNone || !c.AdvertiseAddress.IsValid() {
		return nil
	}
	if c.EndpointReconciler != "" && c.EndpointReconciler != EndpointReconcilerLease {
		return fmt.Errorf("apiserver config: endpoint reconciler %q is not one of %s, %s", c.EndpointReconciler, EndpointReconcilerLease, EndpointReconcilerNone)
	}
	if err := CheckAdvertiseAddress(c.AdvertiseAddress, c.ServiceClusterIPRange); err != nil {
		return err
	}
	r := &endpointReconciler{s: s, ip: c.AdvertiseAddress.Unmap().String(), port: int32(c.KubernetesServicePort),
		ttl: c.EndpointLeaseTTL, interval: c.EndpointReconcileInterval, done: make(chan struct{})}
	if r.port == 0 {
		r.port = 6443
	}
	if r.ttl <= 0 {
		r.ttl = DefaultEndpointLeaseTTL
	}
	if r.interval <= 0 {
		r.interval = DefaultEndpointReconcileInterval
	}
	r.leases, _ = c.Store.(store.Expirer)
	r.renew.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	// The first round, before the server serves: its ports replace those
	// an earlier server wrote, as kube-apiserver's start does.
	if err := r.sync(ctx, true); err != nil {
		s.log.Warn("the kubernetes endpoints are not written yet", "err", err)
	}
	go r.run(ctx)
	s.endpoints = r
	return nil
}

// stopKubernetesEndpoints gives up this server's lease and writes the
// endpoints without it, as a server that stops cleanly does, within
// twice the interval.
func (s *Server) stopKubernetesEndpoints() {
	r := s.endpoints
	if r == nil {
		return
	}
	s.endpoints = nil
	r.cancel()
	<-r.done
	r.stopping.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*r.interval)
	defer cancel()
	if err := r.removeLease(ctx); err != nil {
		s.log.Warn("could not remove this server's lease of the kubernetes endpoints", "err", err)
		return
	}
	if err := r.reconcile(ctx, true); err != nil {
		s.log.Warn("could not remove this server from the kubernetes endpoints", "err", err)
	}
}

// run renews the lease and reconciles every interval, and reconciles when
// a lease changes or expires, so that a server whose lease expired leaves
// the endpoints at once.
func (r *endpointReconciler) run(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	changed, stopWatch := r.watchLeases(ctx)
	defer func() { stopWatch() }()
	failures := 0
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	for {
		renew := false
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			renew = true
		case _, ok := <-changed:
			if !ok { // the watch ended: follow again after a while
				stopWatch()
				changed = nil
				retry.Reset(r.backoff(failures))
				failures++
				continue
			}
		case <-retry.C:
			renew = true
			if changed == nil {
				changed, stopWatch = r.watchLeases(ctx)
			}
		}
		var err error
		if renew {
			err = r.sync(ctx, false)
		} else {
			err = r.reconcile(ctx, false)
		}
		if err != nil && ctx.Err() == nil {
			r.s.log.Warn("reconcile the kubernetes endpoints", "err", err)
			retry.Reset(r.backoff(failures))
			failures++
		} else if err == nil && changed != nil {
			failures = 0
		}
	}
}

func (r *endpointReconciler) backoff(failures int) time.Duration {
	return min(100*time.Millisecond<<min(failures, 10), r.interval)
}

// watchLeases reports each change of the leases on changed, closed when
// the watch ends; without shared leases nothing changes.
func (r *endpointReconciler) watchLeases(ctx context.Context) (changed <-chan struct{}, stop func()) {
	if r.leases == nil {
		return nil, func() {}
	}
	w, err := r.s.cfg.Store.Watch(ctx, masterLeasesPrefix, 0)
	if err != nil {
		c := make(chan struct{})
		close(c)
		return c, func() {}
	}
	c := make(chan struct{}, 1)
	go func() {
		defer close(c)
		for ev := range w.ResultChan() {
			if ev.Type == store.Progress {
				continue
			}
			select {
			case c <- struct{}{}:
			default: // one reconcile reads every change so far
			}
		}
	}()
	return c, w.Stop
}

// sync is one round of kube-apiserver's kubernetes-service controller:
// the Service if it is missing, this server's lease, the endpoints.
func (r *endpointReconciler) sync(ctx context.Context, reconcilePorts bool) error {
	if err := r.s.ensureKubernetesService(ctx, int(r.port)); err != nil {
		return err
	}
	if r.renew.Load() {
		if err := r.updateLease(ctx); err != nil {
			return err
		}
	}
	return r.reconcile(ctx, reconcilePorts)
}

func (r *endpointReconciler) leaseKey() string { return masterLeasesPrefix + r.ip }

func (r *endpointReconciler) updateLease(ctx context.Context) error {
	if r.leases == nil {
		r.mu.Lock()
		r.own = true
		r.mu.Unlock()
		return nil
	}
	value, err := json.Marshal(&corev1.Endpoints{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: r.ip}}}}})
	if err != nil {
		return err
	}
	if _, err := r.leases.PutTTL(ctx, r.leaseKey(), value, r.ttl); err != nil {
		return fmt.Errorf("renew the lease of %s: %w", r.ip, err)
	}
	return nil
}

func (r *endpointReconciler) removeLease(ctx context.Context) error {
	if r.leases == nil {
		r.mu.Lock()
		r.own = false
		r.mu.Unlock()
		return nil
	}
	if _, _, err := r.s.cfg.Store.Delete(ctx, r.leaseKey(), 0); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("remove the lease of %s: %w", r.ip, err)
	}
	return nil
}

// listLeases returns the addresses of the API servers that hold a lease,
// sorted.
func (r *endpointReconciler) listLeases(ctx context.Context) ([]string, error) {
	if r.leases == nil {
		if r.own {
			return []string{r.ip}, nil
		}
		return nil, nil
	}
	page, err := r.s.cfg.Store.List(ctx, masterLeasesPrefix, store.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the API server leases: %w", err)
	}
	var ips []string
	for _, kv := range page.KVs {
		var ep corev1.Endpoints
		if json.Unmarshal(kv.Value, &ep) != nil || len(ep.Subsets) == 0 || len(ep.Subsets[0].Addresses) == 0 {
			continue
		}
		if ip := ep.Subsets[0].Addresses[0].IP; ip != "" && !slices.Contains(ips, ip) {
			ips = append(ips, ip)
		}
	}
	slices.Sort(ips)
	return ips, nil
}

// reconcile writes the Endpoints and the EndpointSlice when they differ
// from the leases: the addresses always, the ports only when
// reconcilePorts (at start and stop), so that servers of different ports
// do not rewrite them in turn.
func (r *endpointReconciler) reconcile(ctx context.Context, reconcilePorts bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var err error
	for range 3 { // another server may write between our read and write
		if err = r.reconcileOnce(ctx, reconcilePorts); !errors.Is(err, store.ErrConflict) && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return err
}

func (r *endpointReconciler) reconcileOnce(ctx context.Context, reconcilePorts bool) error {
	res, ok := r.s.registry().get(EndpointsGVR)
	if !ok {
		return nil
	}
	ips, err := r.listLeases(ctx)
	if err != nil {
		return err
	}
	if len(ips) == 0 && !r.stopping.Load() {
		return errors.New("no API server IP addresses were listed in storage, refusing to erase all endpoints for the kubernetes Service")
	}
	ports := []corev1.EndpointPort{{Name: "https", Port: r.port, Protocol: corev1.ProtocolTCP}}
	key := Key(EndpointsGVR, metav1.NamespaceDefault, kubernetesName)
	kv, err := r.s.cfg.Store.Get(ctx, key)
	var ep corev1.Endpoints
	switch {
	case errors.Is(err, store.ErrNotFound):
		if r.stopping.Load() {
			return nil
		}
		ep = corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: kubernetesName, Namespace: metav1.NamespaceDefault}}
	case err != nil:
		return fmt.Errorf("read the kubernetes endpoints: %w", err)
	default:
		if err := UnmarshalStored(kv.Value, &ep); err != nil {
			return fmt.Errorf("read the kubernetes endpoints: %w", err)
		}
	}
	want := wantedEndpoints(&ep, ips, ports, reconcilePorts)
	if want != nil {
		if kv.Key == "" {
			_, err = r.s.createStored(ctx, res, want)
		} else {
			err = r.s.replaceStored(ctx, res, kv, want)
		}
		if err != nil {
			return fmt.Errorf("write the kubernetes endpoints: %w", err)
		}
		r.s.log.Info("the kubernetes endpoints are now the API servers holding a lease", "addresses", strings.Join(ips, ","))
		ep = *want
	}
	return r.reconcileSlice(ctx, &ep)
}

// wantedEndpoints is ep as the leases want it, or nil when it needs no
// write: one subset of the leases' addresses and of this server's ports,
// and the label that keeps the mirroring controller away.
func wantedEndpoints(ep *corev1.Endpoints, ips []string, ports []corev1.EndpointPort, reconcilePorts bool) *corev1.Endpoints {
	labelled := ep.Labels[discoveryv1.LabelSkipMirror] == "true"
	format := len(ep.Subsets) == 1
	addrsOK, portsOK := false, true
	if format {
		sub := ep.Subsets[0]
		var have []string
		for _, a := range sub.Addresses {
			have = append(have, a.IP)
		}
		slices.Sort(have)
		addrsOK = slices.Equal(have, ips)
		if reconcilePorts {
			portsOK = slices.Equal(sub.Ports, ports)
		}
	}
	if labelled && format && addrsOK && portsOK {
		return nil
	}
	out := ep.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	out.Labels[discoveryv1.LabelSkipMirror] = "true"
	if !format {
		out.Subsets = []corev1.EndpointSubset{{Ports: ports}}
	}
	if !format || !addrsOK {
		out.Subsets[0].Addresses = nil
		out.Subsets[0].NotReadyAddresses = nil
		for _, ip := range ips {
			out.Subsets[0].Addresses = append(out.Subsets[0].Addresses, corev1.EndpointAddress{IP: ip})
		}
	}
	if !portsOK {
		out.Subsets[0].Ports = ports
	}
	if len(out.Subsets[0].Addresses) == 0 {
		out.Subsets = nil // an empty subset is dropped, as kube repacks them
	}
	return out
}

// reconcileSlice writes the EndpointSlice "kubernetes" made from ep when
// the stored one differs, as kube-apiserver's endpoints adapter does.
func (r *endpointReconciler) reconcileSlice(ctx context.Context, ep *corev1.Endpoints) error {
	res, ok := r.s.registry().get(EndpointSlicesGVR)
	if !ok {
		return nil // a server without EndpointSlices writes none
	}
	want := sliceFromEndpoints(ep)
	key := Key(EndpointSlicesGVR, metav1.NamespaceDefault, kubernetesName)
	kv, err := r.s.cfg.Store.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		if _, err := r.s.createStored(ctx, res, want); err != nil {
			return fmt.Errorf("create the kubernetes endpointslice: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the kubernetes endpointslice: %w", err)
	}
	var old discoveryv1.EndpointSlice
	if err := UnmarshalStored(kv.Value, &old); err != nil {
		return fmt.Errorf("read the kubernetes endpointslice: %w", err)
	}
	if old.AddressType != want.AddressType {
		// The address type never changes: the slice is made again.
		if _, _, err := r.s.cfg.Store.Delete(ctx, key, kv.ModRevision); err != nil {
			return fmt.Errorf("replace the kubernetes endpointslice: %w", err)
		}
		if _, err := r.s.createStored(ctx, res, want); err != nil {
			return fmt.Errorf("replace the kubernetes endpointslice: %w", err)
		}
		return nil
	}
	if apiequality.Semantic.DeepEqual(old.Endpoints, want.Endpoints) && apiequality.Semantic.DeepEqual(old.Ports, want.Ports) &&
		apiequality.Semantic.DeepEqual(old.Labels, want.Labels) {
		return nil
	}
	old.Labels, old.Endpoints, old.Ports = want.Labels, want.Endpoints, want.Ports
	if err := r.s.replaceStored(ctx, res, kv, &old); err != nil {
		return fmt.Errorf("write the kubernetes endpointslice: %w", err)
	}
	return nil
}

// sliceFromEndpoints is the EndpointSlice of the kubernetes Endpoints:
// named after it, labelled with its service name alone, of the family of
// its addresses (IPv4 when it has none), each address ready.
func sliceFromEndpoints(ep *corev1.Endpoints) *discoveryv1.EndpointSlice {
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: ep.Name, Namespace: ep.Namespace, Labels: map[string]string{discoveryv1.LabelServiceName: ep.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	if len(ep.Subsets) == 0 {
		return sl
	}
	sub := ep.Subsets[0]
	for _, p := range sub.Ports {
		sl.Ports = append(sl.Ports, discoveryv1.EndpointPort{Name: ptrTo(p.Name), Port: ptrTo(p.Port), Protocol: ptrTo(p.Protocol)})
	}
	all6 := len(sub.Addresses)+len(sub.NotReadyAddresses) > 0
	for _, a := range append(slices.Clone(sub.Addresses), sub.NotReadyAddresses...) {
		if ip, err := netip.ParseAddr(a.IP); err != nil || ip.Unmap().Is4() {
			all6 = false
		}
	}
	if all6 {
		sl.AddressType = discoveryv1.AddressTypeIPv6
	}
	add := func(addrs []corev1.EndpointAddress, ready bool) {
		for _, a := range addrs {
			ip, err := netip.ParseAddr(a.IP)
			if err != nil || ip.Unmap().Is6() != all6 {
				continue
			}
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{a.IP},
				Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(ready)}, TargetRef: a.TargetRef, NodeName: a.NodeName})
		}
	}
	add(sub.Addresses, true)
	add(sub.NotReadyAddresses, false)
	return sl
}

// replaceStored writes obj, read from kv and changed, in kv's place if no
// other write came between.
func (s *Server) replaceStored(ctx context.Context, res *Resource, kv store.KV, obj runtime.Object) error {
	data, err := s.encodeStored(res, obj)
	if err != nil {
		return err
	}
	_, err = s.cfg.Store.Update(ctx, kv.Key, data, kv.ModRevision)
	return err
}
