// Package up runs the local cluster of `kubegate up` in one process: the
// PKI if the directory has none, the API server (package
// apiserver/server) on loopback, the gateway in front of it, calling it in
// process, the controllers (controllers/manager: the garbage collector,
// the namespace controller, the node lifecycle taint pass, ...), and, unless
// --nodes is 0, the scheduler and simulated nodes.
package up

import (
	"context"
	"errors"
	"fmt"
	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/server"
	"github.com/kubegate/kubegate/internal/serving"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/controllers/serviceaccount"
	"github.com/kubegate/kubegate/gateway"
	"github.com/kubegate/kubegate/internal/filewatch"
	"github.com/kubegate/kubegate/kubeconfig"
)

// Options configure Run.
type Options struct {
	// Dir is the cluster directory: DIR/pki, DIR/*.conf, DIR/tokens.csv and
	// DIR/state.db. Required.
	Dir string
	// BindAddress and SecurePort are where the gateway listens.
	BindAddress string // default 127.0.0.1
	SecurePort  int    // default 6443
	// TLS are the cipher suites and minimum TLS version both the gateway
	// and the API server serve.
	TLS serving.TLSFlags
	// APIServerAddress is HOST:PORT where the API server behind the
	// gateway listens; "" means 127.0.0.1:0, a free loopback port.
	APIServerAddress string
	// Nodes is how many simulated nodes the cluster runs (nodesim), with
	// the scheduler; 0 means neither runs (the controllers always do).
	// The command line's default is DefaultNodes.
	Nodes int
	// PodRunTime is how long the simulated containers of pods with
	// restartPolicy Never or OnFailure run before they exit
	// (nodesim.Options.PodRunTime); 0 means until deleted.
	PodRunTime time.Duration
	// AnonymousAuth is the gateway's --anonymous-auth when
	// AnonymousAuthSet; unset, a request without credentials is anonymous
	// on the health and version paths only (A.5).
	AnonymousAuth, AnonymousAuthSet bool
	// NodeBootstrap makes the simulated nodes start as kubelets joining
	// with a bootstrap token do (H.5): up creates a bootstrap token each
	// run and writes DIR/bootstrap-kubelet.conf with it, and each node
	// gets its client certificate through the CSR API, auto-approved and
	// signed by the controllers, and renews it. Requires Nodes.
	NodeBootstrap bool
	// UsagePercent is what the simulated pods' containers use, as a
	// percentage of their requests, unless a pod's annotations say
	// otherwise (the metrics server, I.4); 0 means
	// metrics.DefaultUsagePercent.
	UsagePercent int
	// SigningDuration is the longest lifetime the CSR signer gives a
	// certificate, kube-controller-manager's --cluster-signing-duration;
	// zero means csrsigning.DefaultDuration.
	SigningDuration time.Duration
	// Controllers selects the controllers that run, with kube-controller-
	// manager's --controllers syntax ("*", "NAME", "-NAME"); nil means
	// all of them.
	Controllers []string
	// HPA are the horizontal pod autoscaler's settings, kube-controller-
	// manager's --horizontal-pod-autoscaler-* flags; the zero value is
	// kube's defaults.
	HPA controllers.HPASettings
	// EtcdServers, when set, replace the bbolt file with etcd, reached with
	// DIR/pki/etcd/ca.crt and DIR/pki/apiserver-etcd-client.crt.
	EtcdServers []string
	// AdvertiseAddress is the IP the kubernetes Service's endpoints list,
	// with the gateway's port (J.3); "" chooses it as kube-apiserver
	// does: BindAddress when it is a specific non-loopback address, else
	// the host's default-route address, and without one the Service gets
	// no endpoints.
	AdvertiseAddress string
	// RequestTimeout is the API server's --request-timeout, the deadline of
	// requests that are not long-running (J.4); 0 means none.
	RequestTimeout time.Duration
	// ServiceCIDR is the CIDR of Services' cluster IPs (the API server's
	// --service-cluster-ip-range); "" means 10.96.0.0/12, pki init's
	// default. InitPKI is told it too.
	ServiceCIDR string
	// AuthenticationConfigFile is an AuthenticationConfiguration file
	// (JWT issuers, anonymous paths) that both the gateway and the API
	// server take, as --authentication-config (A.8).
	AuthenticationConfigFile string
	// AuditLogPath is the gateway's --audit-log-path: one JSON line per
	// request; "-" is standard output, "" none.
	AuditLogPath string
	// InitPKI writes the PKI and kubeconfigs into dir, with server as the
	// kubeconfigs' API server URL, when DIR/pki does not exist. Required.
	InitPKI func(dir, server string) error
	// Status receives what a user should read: the addresses and the next
	// commands. Nil means io.Discard.
	Status io.Writer
	// Logger receives the components' logs; nil means slog.Default().
	Logger *slog.Logger
	// Progress, when not nil, is told each step of Start as it begins
	// ("starting the API server"), and "" once the cluster is up, before
	// Status is told so.
	Progress func(step string)
}

// step tells o.Progress, if any, that step begins.
func (o *Options) step(step string) {
	if o.Progress != nil {
		o.Progress(step)
	}
}

// Validate names the first option that is wrong.
func (o *Options) Validate() error {
	switch {
	case o.Dir == "":
		return errors.New("--dir is required")
	case o.SecurePort <= 0 || o.SecurePort > 65535:
		return fmt.Errorf("--secure-port %d is not a port number", o.SecurePort)
	case o.Nodes < 0:
		return fmt.Errorf("--nodes %d is negative", o.Nodes)
	case o.NodeBootstrap && o.Nodes == 0:
		return errors.New("--node-bootstrap needs simulated nodes (--nodes N)")
	case o.PodRunTime < 0:
		return fmt.Errorf("--pod-run-time %s is negative", o.PodRunTime)
	case o.UsagePercent < 0:
		return fmt.Errorf("--usage-percent %d is negative", o.UsagePercent)
	case o.RequestTimeout < 0:
		return fmt.Errorf("--request-timeout %s is negative", o.RequestTimeout)
	case o.SigningDuration < 0:
		return fmt.Errorf("--cluster-signing-duration %v is negative", o.SigningDuration)
	case o.InitPKI == nil:
		return errors.New("up: InitPKI is required")
	}
	if _, _, err := o.apiServerAddress(); err != nil {
		return err
	}
	if _, err := manager.Select(o.Controllers); err != nil {
		return err
	}
	if err := o.HPA.OrDefault().Validate(); err != nil {
		return err
	}
	return o.TLS.Validate()
}

// DefaultNodes is the command line's --nodes: the fewest nodes on which
// topology spreading, anti-affinity and a rolling update across nodes
// show, and on which a Deployment of 3 replicas puts one pod on each
// node.
const DefaultNodes = 3

// apiServerAddress splits APIServerAddress, naming the flag when it is
// wrong.
func (o *Options) apiServerAddress() (string, int, error) {
	if o.APIServerAddress == "" {
		return "127.0.0.1", 0, nil
	}
	host, p, err := net.SplitHostPort(o.APIServerAddress)
	if err != nil {
		return "", 0, fmt.Errorf("--apiserver-address %q is not HOST:PORT", o.APIServerAddress)
	}
	if net.ParseIP(host) == nil {
		return "", 0, fmt.Errorf("--apiserver-address %q: %q is not an IP address", o.APIServerAddress, host)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("--apiserver-address %q: %q is not a port number (0 for a free one)", o.APIServerAddress, p)
	}
	if port == o.SecurePort && overlap(host, o.BindAddress) {
		return "", 0, fmt.Errorf("--apiserver-address %q: the gateway listens there (--secure-port %d)", o.APIServerAddress, o.SecurePort)
	}
	return host, port, nil
}

// overlap reports whether listeners on hosts a and b ("" is every address)
// can take the same address.
func overlap(a, b string) bool {
	every := func(h string) bool { ip := net.ParseIP(h); return h == "" || (ip != nil && ip.IsUnspecified()) }
	if every(a) || every(b) {
		return true
	}
	return net.ParseIP(a).Equal(net.ParseIP(b))
}

// Cluster is a running local cluster.
type Cluster struct {
	Dir string
	// Server is the gateway's URL, the one in DIR/admin.conf.
	Server string
	// Nodes is Options.Nodes.
	Nodes int
	// NodeBootstrap and SigningDuration are Options'.
	NodeBootstrap   bool
	SigningDuration time.Duration
	// UsagePercent and PodRunTime are Options'.
	UsagePercent int
	PodRunTime   time.Duration
	// Controllers is Options.Controllers.
	Controllers []string
	APIServer   *server.Server
	Gateway     *gateway.Server
	logger      *slog.Logger

	// HPA is Options.HPA.
	HPA controllers.HPASettings
}

// Start brings the cluster up: the PKI if DIR/pki is missing, the API server
// on Options.APIServerAddress (a free loopback port by default) over
// DIR/state.db (or etcd), trusting the front-proxy CA for request-header identities (front-proxy-client only),
// the cluster CA for client certificates and sa.pub for service-account
// tokens, and the gateway on the secure port in front of it. Everything
// stops when ctx is done; Serve waits for that.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.BindAddress == "" {
		o.BindAddress = "127.0.0.1"
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Status == nil {
		o.Status = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	host := o.BindAddress
	if ip := net.ParseIP(host); host == "0.0.0.0" || host == "::" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	serverURL := "https://" + net.JoinHostPort(host, strconv.Itoa(o.SecurePort))
	pkiDir := filepath.Join(o.Dir, ca.PKIDir)
	if _, err := os.Stat(pkiDir); errors.Is(err, fs.ErrNotExist) {
		o.step("writing the PKI and kubeconfigs into " + o.Dir)
		if err := o.InitPKI(o.Dir, serverURL); err != nil {
			return nil, fmt.Errorf("pki init: %w", err)
		}
	} else if err != nil {
		return nil, err
	}
	if cfg, err := kubeconfig.Load(filepath.Join(o.Dir, "admin.conf")); err == nil {
		for _, c := range cfg.Clusters {
			if c.Server != serverURL {
				fmt.Fprintf(o.Status, "warning: %s points at %s, not at %s\n", filepath.Join(o.Dir, "admin.conf"), c.Server, serverURL)
			}
		}
	}
	pki := func(name string) string { return filepath.Join(pkiDir, name) }

	a := server.Defaults()
	a.BindAddress, a.SecurePort, _ = o.apiServerAddress() // checked in Validate
	a.TLSCertFile, a.TLSKeyFile = pki("apiserver.crt"), pki("apiserver.key")
	a.TLS = o.TLS
	a.ClientCAFile = pki("ca.crt")
	a.SAKeyFiles = []string{pki("sa.pub")}
	a.SASigningKeyFile = pki("sa.key")
	a.RequestHeaderCAFile = pki("front-proxy-ca.crt")
	a.RequestHeaderAllowedNames = []string{"front-proxy-client"}
	// The client certificate it presents to aggregated API servers, as
	// kubeadm gives kube-apiserver (I.3).
	a.ProxyClientCertFile, a.ProxyClientKeyFile = pki("front-proxy-client.crt"), pki("front-proxy-client.key")
	a.AnonymousAuth = false
	a.AuthenticationConfigFile = o.AuthenticationConfigFile
	a.EnableBootstrapTokenAuth = true // as kubeadm configures kube-apiserver
	a.ExternalAddress = net.JoinHostPort(host, strconv.Itoa(o.SecurePort))
	// The kubernetes Service's endpoints are the gateway, which clients
	// reach, at the address up advertises.
	advertise, err := advertiseAddress(o)
	if err != nil {
		return nil, err
	}
	a.AdvertiseAddress = advertise
	if a.AdvertiseAddress == "" {
		a.EndpointReconcilerType = apiserver.EndpointReconcilerNone
	}
	a.ServiceClusterIPRange = o.ServiceCIDR
	a.RequestTimeout = o.RequestTimeout
	// When the controller manager runs the serviceaccount controller, it
	// keeps the default service accounts once up has started.
	selected, _ := manager.Select(o.Controllers) // checked in Validate
	a.ServiceAccountsAtStartOnly = slices.ContainsFunc(selected, func(d controllers.Descriptor) bool { return d.Name == serviceaccount.Descriptor.Name })
	if len(o.EtcdServers) > 0 {
		a.EtcdServers = o.EtcdServers
		a.EtcdCAFile = pki("etcd/ca.crt")
		a.EtcdCertFile, a.EtcdKeyFile = pki("apiserver-etcd-client.crt"), pki("apiserver-etcd-client.key")
	} else {
		a.DataDir = o.Dir
	}
	o.step("starting the API server")
	api, err := server.New(ctx, a, o.Logger.With("component", "apiserver"))
	if err != nil {
		return nil, err
	}

	o.step("starting the gateway on " + serverURL)
	g := gateway.Defaults()
	g.HTTP1FastPath = false // the API server is called in process
	g.BindAddress, g.SecurePort = o.BindAddress, o.SecurePort
	g.TLSCertFile, g.TLSKeyFile = pki("apiserver.crt"), pki("apiserver.key")
	g.TLS = o.TLS
	g.ClientCAFile = pki("ca.crt")
	if tokens := filepath.Join(o.Dir, "tokens.csv"); fileExists(tokens) {
		g.TokenAuthFile = tokens
	}
	g.SAKeyFiles = []string{pki("sa.pub")}
	g.AuthenticationConfigFile = o.AuthenticationConfigFile
	g.AuditLogPath = o.AuditLogPath
	g.ConsolePKIDir = o.Dir // the console's PKI view shows the cluster's tree
	g.EnableBootstrapTokenAuth = true
	g.AnonymousAuth, g.AnonymousAuthSet = o.AnonymousAuth, o.AnonymousAuthSet
	g.Upstream = apiServerURL(api)
	if g.Transport, err = gatewayTransport(ctx, api, pki, o.Logger); err != nil {
		api.Close()
		return nil, err
	}
	gw, err := gateway.NewServer(ctx, g, o.Logger.With("component", "gateway"))
	if err != nil {
		api.Close()
		return nil, err
	}
	c := &Cluster{Dir: o.Dir, Server: serverURL, Nodes: o.Nodes, NodeBootstrap: o.NodeBootstrap, SigningDuration: o.SigningDuration, UsagePercent: o.UsagePercent, PodRunTime: o.PodRunTime, Controllers: o.Controllers, HPA: o.HPA, APIServer: api, Gateway: gw, logger: o.Logger}
	state := filepath.Join(o.Dir, server.StateFile)
	if len(o.EtcdServers) > 0 {
		state = "etcd at " + o.EtcdServers[0]
	}
	o.step("")
	fmt.Fprintf(o.Status, `kubegate is up: the API is at %s (gateway), served by the API server on %s, state in %s
next:
  export KUBECONFIG=%s
  kubectl get pods -A
  kubectl auth whoami
  kubectl create token default
Ctrl-C stops everything; the state is kept for the next kubegate up --dir %s
`, serverURL, api.Listener.Addr(), state, filepath.Join(o.Dir, "admin.conf"), o.Dir)
	return c, nil
}

// advertiseAddress is the address the kubernetes endpoints list: one
// given must be one an endpoint may hold; one chosen that may not (no
// default route) leaves the Service without endpoints, said once in the
// log.
func advertiseAddress(o Options) (string, error) {
	serviceRange := apiserver.DefaultServiceClusterIPRange
	if o.ServiceCIDR != "" {
		p, err := netip.ParsePrefix(o.ServiceCIDR)
		if err != nil {
			return "", fmt.Errorf("--service-cidr %q is not a CIDR", o.ServiceCIDR)
		}
		serviceRange = p
	}
	addr, err := server.AdvertiseAddress(o.AdvertiseAddress, o.BindAddress)
	if err == nil {
		err = apiserver.CheckAdvertiseAddress(addr, serviceRange)
	}
	switch {
	case err == nil:
		return addr.String(), nil
	case o.AdvertiseAddress != "":
		return "", fmt.Errorf("advertise address: %w", err)
	}
	o.Logger.Warn("the kubernetes Service gets no endpoints: no address to advertise for clients inside the cluster", "bind-address", o.BindAddress, "err", err)
	return "", nil
}

// Serve serves the API server, the gateway and the controllers (and, with
// Nodes, the scheduler and the simulated nodes) until ctx is done, then
// shuts them down and closes the store. It returns the first error of any.
func (c *Cluster) Serve(ctx context.Context) error {
	// The components stop first, so that their watches through the
	// gateway have ended when the servers shut down: a server stopping,
	// or a component failing, stops everything.
	componentsCtx, stopComponents := context.WithCancel(ctx)
	defer stopComponents()
	serversCtx, stopServers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServers()
	var wg sync.WaitGroup
	servers := []func(context.Context) error{c.APIServer.Serve, c.Gateway.Serve}
	errs := make([]error, len(servers)+1)
	for i, serve := range servers {
		wg.Go(func() {
			errs[i] = serve(serversCtx)
			stopComponents()
		})
	}
	errs[len(servers)] = c.runComponents(componentsCtx, c.logger)
	stopServers()
	wg.Wait()
	// A connection the gateway had to cut when its graceful shutdown ran
	// out (a client that opened one and never sent a request on it, a
	// watch still open) does not make stopping a failure.
	if gw := errs[1]; errors.Is(gw, context.DeadlineExceeded) {
		c.logger.Warn("the gateway closed connections that were still open when it stopped", "err", gw)
		errs[1] = nil
	}
	return errors.Join(errs...)
}

// Run starts the cluster and serves it until ctx is done.
func Run(ctx context.Context, o Options) error {
	c, err := Start(ctx, o)
	if err != nil {
		return err
	}
	return c.Serve(ctx)
}

// gatewayTransport is the gateway's way to the API server: in process,
// authenticated with the front-proxy client certificate as over TLS, and
// over TLS to its listener for upgrades (exec, attach, port-forward).
func gatewayTransport(ctx context.Context, api *server.Server, pki func(string) string, logger *slog.Logger) (http.RoundTripper, error) {
	frontProxy, err := serving.LoadKeyPair(pki("front-proxy-client.crt"), pki("front-proxy-client.key"))
	if err != nil {
		return nil, err
	}
	if err := frontProxy.Watch(ctx, filewatch.DefaultInterval, logger); err != nil {
		return nil, err
	}
	// The bundle is reloaded: after a CA rotation (H.6) the API server
	// serves a certificate of the new CA.
	caPool, err := serving.LoadCAPool(pki("ca.crt"))
	if err != nil {
		return nil, err
	}
	if err := caPool.Watch(ctx, filewatch.DefaultInterval, logger); err != nil {
		return nil, err
	}
	fallback, err := gateway.NewUpstreamTransport(gateway.UpstreamTransportOptions{CA: caPool, ClientCert: frontProxy})
	if err != nil {
		return nil, err
	}
	return api.InProcessTransport(frontProxy, fallback), nil
}

// apiServerURL is where the gateway reaches the API server: its
// listener's address, or loopback when it listens on every address.
func apiServerURL(api *server.Server) string {
	if a, ok := api.Listener.Addr().(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		return "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port))
	}
	return api.URL()
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
