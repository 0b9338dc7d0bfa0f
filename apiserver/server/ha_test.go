package server

//lint:file-ignore SA1019 v1 Endpoints are read as kube-apiserver writes them (J.3)

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/store/etcd/etcdtest"
)

// haCluster is one in-process etcd that API servers share under a key
// prefix of their own.
type haCluster struct {
	etcd              *etcdtest.Server
	certFile, keyFile string
	caFile            string
	prefixes          atomic.Int64
}

func newHACluster(t *testing.T) *haCluster {
	t.Helper()
	e, err := etcdtest.Start(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	c := &haCluster{etcd: e}
	c.certFile, c.keyFile = ca.Issue(t, testpki.Options{CN: "apiserver", IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
		EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}).WriteFiles(t, dir, "apiserver")
	c.caFile, _ = ca.WriteFiles(t, dir, "ca")
	return c
}

// options are a server's on prefix, advertising advertise.
func (c *haCluster) options(prefix, advertise string) Options {
	o := Defaults()
	o.BindAddress, o.SecurePort = "127.0.0.1", 0
	o.TLSCertFile, o.TLSKeyFile, o.ClientCAFile = c.certFile, c.keyFile, c.caFile
	o.EtcdServers, o.EtcdPrefix = []string{c.etcd.PlainURL}, prefix
	o.AdvertiseAddress = advertise
	o.EndpointLeaseTTL, o.EndpointReconcileInterval = 3*time.Second, time.Second
	return o
}

// haServer is a server that serves until stop or the test's end.
type haServer struct {
	*Server
	cs     kubernetes.Interface
	stop   func() error
	prefix string
}

func (c *haCluster) serve(t *testing.T, s *Server) *haServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	cs, cerr := kubernetes.NewForConfig(s.LoopbackConfig())
	if cerr != nil {
		t.Fatal(cerr)
	}
	return &haServer{Server: s, cs: cs, stop: stop}
}

// startTogether starts one server per address at the same moment on one
// prefix.
func (c *haCluster) startTogether(t *testing.T, addrs ...string) []*haServer {
	t.Helper()
	prefix := fmt.Sprintf("/ha%d/", c.prefixes.Add(1))
	servers := make([]*Server, len(addrs))
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, addr := range addrs {
		wg.Go(func() {
			<-start
			servers[i], errs[i] = New(context.Background(), c.options(prefix, addr), nil)
		})
	}
	close(start)
	wg.Wait()
	var out []*haServer
	for i, s := range servers {
		if errs[i] != nil {
			t.Errorf("server %d of %d did not start: %v", i+1, len(addrs), errs[i])
			continue
		}
		hs := c.serve(t, s)
		hs.prefix = prefix
		out = append(out, hs)
	}
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// kubernetesEndpoints is what the Endpoints and the EndpointSlice list,
// each sorted.
func kubernetesEndpoints(cs kubernetes.Interface) (eps, slice []string, err error) {
	ctx := context.Background()
	ep, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	for _, sub := range ep.Subsets {
		for _, a := range sub.Addresses {
			eps = append(eps, a.IP)
		}
	}
	sl, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	for _, e := range sl.Endpoints {
		slice = append(slice, e.Addresses...)
	}
	slices.Sort(eps)
	slices.Sort(slice)
	return eps, slice, nil
}

// waitEndpoints waits until both list exactly want, and returns how long
// that took.
func waitEndpoints(t *testing.T, cs kubernetes.Interface, within time.Duration, want ...string) time.Duration {
	t.Helper()
	slices.Sort(want)
	start := time.Now()
	testwait.For(t, within, fmt.Sprintf("the kubernetes endpoints listing %v", want), func() (bool, string) {
		eps, slice, err := kubernetesEndpoints(cs)
		return err == nil && slices.Equal(eps, want) && slices.Equal(slice, want), fmt.Sprintf("endpoints %v, slice %v, err %v", eps, slice, err)
	})
	return time.Since(start)
}

// TestServersStartTogether_J2: API servers started at the same moment on
// one fresh store all start, and the objects each writes at start are
// there once: the kubernetes Service on the range's first address, its
// IPAddress, the default ServiceCIDR made Ready, and endpoints listing
// every server.
func TestServersStartTogether_J2(t *testing.T) {
	if testing.Short() {
		t.Skip("starts API servers on etcd")
	}
	c := newHACluster(t)
	addrs := []string{"198.18.0.1", "198.18.0.2", "198.18.0.3"}
	for round := range 3 {
		t.Run(fmt.Sprint("round ", round+1), func(t *testing.T) {
			servers := c.startTogether(t, addrs...)
			ctx := context.Background()
			for i, s := range servers {
				svc, err := s.cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
				if err != nil || svc.Spec.ClusterIP != "10.96.0.1" {
					t.Fatalf("server %d: kubernetes service %v, err %v; want cluster IP 10.96.0.1", i+1, svc, err)
				}
			}
			cs := servers[0].cs
			ips, err := cs.NetworkingV1().IPAddresses().List(ctx, metav1.ListOptions{})
			if err != nil || len(ips.Items) != 1 || ips.Items[0].Name != "10.96.0.1" || ips.Items[0].Spec.ParentRef.Name != "kubernetes" {
				t.Fatalf("IPAddresses: %+v, err %v; want 10.96.0.1 of the kubernetes Service alone", ips, err)
			}
			testwait.For(t, 30*time.Second, "the default ServiceCIDR Ready", func() (bool, string) {
				sc, err := cs.NetworkingV1().ServiceCIDRs().Get(ctx, "kubernetes", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				for _, cond := range sc.Status.Conditions {
					if cond.Type == "Ready" && cond.Status == metav1.ConditionTrue {
						return true, ""
					}
				}
				return false, fmt.Sprintf("conditions %+v", sc.Status.Conditions)
			})
			waitEndpoints(t, cs, 30*time.Second, addrs...)
		})
	}
}

// TestServiceAllocationAcrossServers_J2: Services created at once on two
// servers sharing a store never share a cluster IP or a node port, and
// every create refused for an address or port taken is a 422.
func TestServiceAllocationAcrossServers_J2(t *testing.T) {
	if testing.Short() {
		t.Skip("starts API servers on etcd")
	}
	c := newHACluster(t)
	servers := c.startTogether(t, "198.18.0.1", "198.18.0.2")
	ctx := context.Background()
	type result struct {
		svc *corev1.Service
		err error
	}
	var mu sync.Mutex
	var results []result
	var wg sync.WaitGroup
	create := func(cs kubernetes.Interface, svc *corev1.Service) {
		wg.Go(func() {
			got, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
			mu.Lock()
			results = append(results, result{got, err})
			mu.Unlock()
		})
	}
	port := corev1.ServicePort{Name: "p", Port: 80, Protocol: corev1.ProtocolTCP}
	for i := range 10 {
		for j, s := range servers {
			// Both servers ask for the same fixed address and node port.
			fixed := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fixed-%d-%d", i, j)},
				Spec: corev1.ServiceSpec{ClusterIP: fmt.Sprintf("10.96.0.%d", 20+i), Ports: []corev1.ServicePort{port}}}
			create(s.cs, fixed)
			nodePort := port
			nodePort.NodePort = int32(30100 + i)
			fixedPort := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("nodeport-%d-%d", i, j)},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{nodePort}}}
			create(s.cs, fixedPort)
			for k := range 3 {
				random := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("random-%d-%d-%d", i, j, k)},
					Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{port}}}
				create(s.cs, random)
			}
		}
	}
	wg.Wait()
	ipOwner, portOwner := map[string]string{}, map[int32]string{}
	created := 0
	for _, r := range results {
		if r.err != nil {
			if !apierrors.IsInvalid(r.err) {
				t.Errorf("a refused create: got %v, want a 422", r.err)
			}
			continue
		}
		created++
		if prev, ok := ipOwner[r.svc.Spec.ClusterIP]; ok {
			t.Errorf("cluster IP %s given to %s and %s", r.svc.Spec.ClusterIP, prev, r.svc.Name)
		}
		ipOwner[r.svc.Spec.ClusterIP] = r.svc.Name
		for _, p := range r.svc.Spec.Ports {
			if prev, ok := portOwner[p.NodePort]; ok && p.NodePort != 0 {
				t.Errorf("node port %d given to %s and %s", p.NodePort, prev, r.svc.Name)
			}
			portOwner[p.NodePort] = r.svc.Name
		}
	}
	// Of each pair asking for one address or port, exactly one wins; the
	// random ones all do.
	if want := 10 + 10 + 10*2*3; created != want {
		t.Errorf("created %d Services, want %d", created, want)
	}
}

// TestKubernetesEndpointsLease_J3: the kubernetes endpoints list every
// server holding a lease; one that stops cleanly is gone as soon as it
// has stopped, and one whose lease is not renewed (its store connection
// lost, as when it is killed) drops out once its lease expires.
func TestKubernetesEndpointsLease_J3(t *testing.T) {
	if testing.Short() {
		t.Skip("starts API servers on etcd")
	}
	c := newHACluster(t)
	servers := c.startTogether(t, "198.18.0.1", "198.18.0.2")
	a, b := servers[0], servers[1]
	waitEndpoints(t, a.cs, 30*time.Second, "198.18.0.1", "198.18.0.2")
	eps, err := a.cs.CoreV1().Endpoints("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A server on a port picked at start (0) advertises 6443, the
	// kubernetes Service's default target.
	if eps.Labels[discoveryv1.LabelSkipMirror] != "true" || len(eps.Subsets) != 1 ||
		!slices.Equal(eps.Subsets[0].Ports, []corev1.EndpointPort{{Name: "https", Port: 6443, Protocol: corev1.ProtocolTCP}}) {
		t.Errorf("endpoints: got %+v, want the skip-mirror label and one subset with port https 6443", eps)
	}
	slice, err := a.cs.DiscoveryV1().EndpointSlices("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slice.AddressType != discoveryv1.AddressTypeIPv4 || slice.Labels[discoveryv1.LabelServiceName] != "kubernetes" || len(slice.Labels) != 1 {
		t.Errorf("endpointslice: got type %s labels %v, want IPv4 and the service name alone", slice.AddressType, slice.Labels)
	}
	before, err := a.cs.CoreV1().Endpoints("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// A clean stop: gone once Serve has returned.
	if err := b.stop(); err != nil {
		t.Fatalf("stop B: %v", err)
	}
	if eps, slice, err := kubernetesEndpoints(a.cs); err != nil || !slices.Equal(eps, []string{"198.18.0.1"}) || !slices.Equal(slice, []string{"198.18.0.1"}) {
		t.Fatalf("after B stopped: endpoints %v, slice %v, err %v; want A's address alone", eps, slice, err)
	}
	after, _ := a.cs.CoreV1().Endpoints("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if after.ResourceVersion == before.ResourceVersion {
		t.Errorf("the endpoints were not rewritten when B stopped")
	}

	// A third server, then its renewals end as its store goes away.
	opts := c.options(a.prefix, "198.18.0.3")
	s3, err := New(context.Background(), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	third := c.serve(t, s3)
	waitEndpoints(t, a.cs, 30*time.Second, "198.18.0.1", "198.18.0.3")
	// Settled: A's periodic rounds write nothing while nothing changes.
	settled, _ := a.cs.CoreV1().Endpoints("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	third.Store.Close()
	took := waitEndpoints(t, a.cs, 30*time.Second, "198.18.0.1")
	if limit := opts.EndpointLeaseTTL + 5*time.Second; took > limit {
		t.Errorf("the unrenewed server dropped out after %v, want within its TTL (%v) and a margin", took, opts.EndpointLeaseTTL)
	}
	final, _ := a.cs.CoreV1().Endpoints("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if final.ResourceVersion == settled.ResourceVersion {
		t.Errorf("the endpoints were not rewritten when the third server's lease expired")
	}
}
