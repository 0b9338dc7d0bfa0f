package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	aggregatorclientset "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kubegate/kubegate/authn/requestheader"
)

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
	// BindAddress is where the server listens, on a free port; "" means
	// 127.0.0.1.
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
	addr := c.BindAddress
	if addr == "" {
		addr = "127.0.0.1"
	}
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
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
	if err := Register(ctx, c.Client, c.APIServices, int32(l.Addr().(*net.TCPAddr).Port), caBundle); err != nil {
		l.Close()
		return fmt.Errorf("metrics server: %w", err)
	}
	srv.log.Info("metrics server: serving metrics.k8s.io", "address", l.Addr().String())
	return srv.Serve(ctx, l, cert)
}
