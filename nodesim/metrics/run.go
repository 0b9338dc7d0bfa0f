package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	aggregatorclientset "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kubegate/kubegate/authn/requestheader"
)

// registerRetry is how long Run waits to register again after a failure.
const registerRetry = time.Second

// Config is what Run needs.
type Config struct {
	// Client reads pods and nodes and writes the Service and
	// EndpointSlice; APIServices writes the APIService. Required.
	Client      kubernetes.Interface
	APIServices aggregatorclientset.Interface
	// FrontProxyCAFile verifies the aggregator's client certificate
	// (front-proxy-ca.crt); AllowedNames are the CNs accepted, all that
	// it verifies when empty. Required.
	FrontProxyCAFile string
	AllowedNames     []string
	// BindAddress is where the server listens, on a free port, and the
	// address its EndpointSlice names: not loopback, which no
	// EndpointSlice may name. "" means the first address of the machine's
	// interfaces that is neither loopback nor link-local.
	BindAddress string
	Options
}

// Run serves the metrics API until ctx is done: it follows pods and
// nodes, listens, makes its serving certificate and registers itself
// (Register) with its port and CA.
func Run(ctx context.Context, c Config) error {
	if c.Client == nil || c.APIServices == nil || c.FrontProxyCAFile == "" {
		return errors.New("metrics server: the clients and the front-proxy CA are required")
	}
	caPEM, err := os.ReadFile(c.FrontProxyCAFile)
	if err != nil {
		return fmt.Errorf("metrics server: %w", err)
	}
	ro := requestheader.Default()
	ro.AllowedNames = c.AllowedNames
	auth, err := requestheader.New(caPEM, ro)
	if err != nil {
		return fmt.Errorf("metrics server: %w", err)
	}
	factory := informers.NewSharedInformerFactory(c.Client, 0)
	pods, nodes := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	srv, err := New(pods.Lister(), nodes.Lister(), auth, c.Options)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced, nodes.Informer().HasSynced) {
		return ctx.Err()
	}
	addr, err := bindAddress(c.BindAddress)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
	if err != nil {
		return fmt.Errorf("metrics server: %w", err)
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	cert, caBundle, err := ServingCert(now())
	if err != nil {
		l.Close()
		return fmt.Errorf("metrics server: serving certificate: %w", err)
	}
	// A write refused for a while (admission not ready, a conflict) is
	// tried again each second.
	listening := netip.AddrPortFrom(addr, uint16(l.Addr().(*net.TCPAddr).Port))
	if err := wait.PollUntilContextCancel(ctx, registerRetry, true, func(ctx context.Context) (bool, error) {
		err := Register(ctx, c.Client, c.APIServices, listening, caBundle)
		if err != nil && ctx.Err() == nil {
			srv.log.Warn("metrics server: registering failed; trying again", "err", err)
		}
		return err == nil, nil
	}); err != nil {
		l.Close()
		return nil
	}
	srv.log.Info("metrics server: serving metrics.k8s.io", "address", l.Addr().String())
	return srv.Serve(ctx, l, cert)
}

// bindAddress is the address to listen on: given, or the machine's
// first that an EndpointSlice may name.
func bindAddress(given string) (netip.Addr, error) {
	if given != "" {
		a, err := netip.ParseAddr(given)
		if err != nil || !endpointAddress(a) {
			return netip.Addr{}, fmt.Errorf("metrics server: bind address %q is not an IP address an EndpointSlice may name", given)
		}
		return a, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("metrics server: %w", err)
	}
	var v6 netip.Addr
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok || !endpointAddress(ip.Unmap()) {
			continue
		}
		if ip.Unmap().Is4() {
			return ip.Unmap(), nil
		}
		if !v6.IsValid() {
			v6 = ip
		}
	}
	if v6.IsValid() {
		return v6, nil
	}
	return netip.Addr{}, errors.New("metrics server: the machine has no address but loopback or link-local, which an EndpointSlice may not name")
}

// endpointAddress reports whether an EndpointSlice may name a: the API
// server refuses an unspecified, loopback or link-local one
// (apiserver.NonSpecialIP, which a test holds this to).
func endpointAddress(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsValid() && !a.IsUnspecified() && !a.IsLoopback() && !a.IsLinkLocalUnicast() && !a.IsLinkLocalMulticast()
}
