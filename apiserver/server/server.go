// Package server wires kubegate's API server: the REST API of package
// apiserver with its authenticators, RBAC, admission and auth APIs over a
// bbolt or etcd store, served over TLS (New, behind `kubegate apiserver`
// and `kubegate up`), and a transport that lets a gateway in the same
// process call it without a network hop (Server.InProcessTransport).
package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/kubegate/kubegate/internal/serving"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/admission"
	"github.com/kubegate/kubegate/apiserver/aggregator"
	"github.com/kubegate/kubegate/apiserver/customresource"
	"github.com/kubegate/kubegate/apiserver/rbacsource"
	"github.com/kubegate/kubegate/apiserver/registry"
	authnapi "github.com/kubegate/kubegate/apiserver/registry/authentication"
	authzapi "github.com/kubegate/kubegate/apiserver/registry/authorization"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/fileconfig"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/authz/bootstrap"
	"github.com/kubegate/kubegate/authz/rbac"
	"github.com/kubegate/kubegate/internal/filewatch"
	"github.com/kubegate/kubegate/store"
	"github.com/kubegate/kubegate/store/bolt"
	"github.com/kubegate/kubegate/store/etcd"
)

// Authorization modes.
const (
	ModeRBAC        = "RBAC"
	ModeAlwaysAllow = "AlwaysAllow"
)

// StateFile is the bbolt file in the data directory.
const StateFile = "state.db"

// Options are the API server's settings, named after
// kube-apiserver's flags.
type Options struct {
	BindAddress string // default 0.0.0.0
	// SecurePort is the HTTPS port; 0 picks a free one (see
	// Server.Listener).
	SecurePort  int // default 6443
	TLSCertFile string
	TLSKeyFile  string
	// TLS are the cipher suites and minimum TLS version served.
	TLS serving.TLSFlags

	// Flags are the authentication flags. SAKeyFiles empty means the
	// public half of SASigningKeyFile; the first of SAIssuers is the iss of
	// new tokens; SALookup checks that a legacy token's service account and
	// secret still exist (bound tokens are always checked); AnonymousAuth
	// defaults to true, as in kube-apiserver.
	fileconfig.Flags
	// SASigningKeyFile (sa.key) signs TokenRequest tokens; empty turns
	// serviceaccounts/token off.
	SASigningKeyFile string
	// SAMaxTokenExpiration caps TokenRequest lifetimes; 0 means no cap.
	SAMaxTokenExpiration time.Duration

	AuthorizationMode string // ModeRBAC (default) or ModeAlwaysAllow

	// ProxyClientCertFile and ProxyClientKeyFile are the client
	// certificate the server presents to the servers of APIServices with
	// a service (I.3), kubeadm's front-proxy-client; "" presents none.
	ProxyClientCertFile string
	ProxyClientKeyFile  string

	// DataDir holds the bbolt store (DataDir/state.db); exactly one of
	// DataDir and EtcdServers is required.
	DataDir      string
	EtcdServers  []string
	EtcdCAFile   string
	EtcdCertFile string
	EtcdKeyFile  string
	EtcdPrefix   string // default "" (keys start with /registry/)
	// EtcdCompactionInterval is how often etcd's history is compacted
	// (--etcd-compaction-interval); 0 turns compaction off. Defaults sets
	// kube-apiserver's 5 min.
	EtcdCompactionInterval time.Duration
	// EtcdHealthcheckTimeout and EtcdReadycheckTimeout bound the store
	// check of /healthz and /livez, and of /readyz; 0 means 2 s.
	EtcdHealthcheckTimeout, EtcdReadycheckTimeout time.Duration
	// RequestTimeout is the deadline of requests that are not long-running
	// (--request-timeout, J.4); 0 means none. Defaults sets kube's 60 s.
	RequestTimeout time.Duration

	// ExternalAddress is the host:port clients reach the server at, for
	// serverAddressByClientCIDRs and the kubernetes Service's target port;
	// "" reports the request's Host, and the Service targets SecurePort.
	ExternalAddress string
	// ServiceClusterIPRange is the CIDR of Services' cluster IPs, its
	// first address the kubernetes Service's; "" means
	// apiserver.DefaultServiceClusterIPRange (10.96.0.0/12).
	ServiceClusterIPRange string
	// ServiceNodePortRange is FIRST-LAST of node ports; "" means
	// 30000-32767.
	ServiceNodePortRange string
	// AdvertiseAddress is the IP the kubernetes Service's endpoints list
	// for this server (J.3); "" chooses it by kube-apiserver's rule: the
	// bind address when it is a specific non-loopback address, else the
	// address of the host's default-route interface.
	AdvertiseAddress string
	// EndpointReconcilerType is apiserver.EndpointReconcilerLease (the
	// default) or apiserver.EndpointReconcilerNone.
	EndpointReconcilerType string
	// EndpointLeaseTTL and EndpointReconcileInterval are the lease's TTL
	// and how often it is renewed; 0: kube-apiserver's 15 s and 10 s.
	EndpointLeaseTTL          time.Duration
	EndpointReconcileInterval time.Duration
	ReloadInterval            time.Duration // default 1 s
	// ServiceAccountsAtStartOnly: the server gives the namespaces there
	// are when it starts their "default" service account and leaves the
	// rest to a controller manager's serviceaccount controller, as
	// kubegate up does when it runs one. Without it (kubegate apiserver
	// on its own) the server does the controller's job itself, so that
	// pods can be admitted with no controller manager beside it
	// (docs/kubernetes-behaviour.md G.11).
	ServiceAccountsAtStartOnly bool
}

// Defaults returns the options' defaults.
func Defaults() Options {
	o := Options{
		BindAddress:       "0.0.0.0",
		SecurePort:        6443,
		Flags:             fileconfig.DefaultFlags(),
		AuthorizationMode: ModeRBAC,
		ReloadInterval:    filewatch.DefaultInterval,

		EndpointReconcilerType: apiserver.EndpointReconcilerLease,
		EtcdCompactionInterval: 5 * time.Minute,
		EtcdHealthcheckTimeout: apiserver.DefaultStoreCheckTimeout,
		EtcdReadycheckTimeout:  apiserver.DefaultStoreCheckTimeout,
		RequestTimeout:         apiserver.DefaultRequestTimeout,
	}
	o.AnonymousAuth = true
	return o
}

// Validate names the first option that is wrong, by its flag.
func (o *Options) Validate() error {
	switch {
	case o.TLSCertFile == "" || o.TLSKeyFile == "":
		return errors.New("--tls-cert-file and --tls-private-key-file are required")
	case o.SecurePort < 0 || o.SecurePort > 65535:
		return fmt.Errorf("--secure-port %d is not a port number", o.SecurePort)
	case o.AuthorizationMode != ModeRBAC && o.AuthorizationMode != ModeAlwaysAllow:
		return fmt.Errorf("--authorization-mode %q is not one of %s, %s", o.AuthorizationMode, ModeRBAC, ModeAlwaysAllow)
	case len(o.SAIssuers) == 0 && (len(o.SAKeyFiles) > 0 || o.SASigningKeyFile != ""):
		return errors.New("--service-account-issuer is required with service-account keys")
	case !o.Configured() && o.SASigningKeyFile == "":
		return errors.New("no authenticator configured: give --client-ca-file, --token-auth-file, --service-account-key-file or --requestheader-client-ca-file")
	case (o.ProxyClientCertFile == "") != (o.ProxyClientKeyFile == ""):
		return errors.New("--proxy-client-cert-file and --proxy-client-key-file go together")
	case o.SAMaxTokenExpiration < 0:
		return fmt.Errorf("--service-account-max-token-expiration %s is negative", o.SAMaxTokenExpiration)
	case o.RequestTimeout < 0:
		return fmt.Errorf("--request-timeout %s is negative", o.RequestTimeout)
	}
	if err := o.validateStorage(); err != nil {
		return err
	}
	if err := o.validateServices(); err != nil {
		return err
	}
	return o.TLS.Validate()
}

// validateStorage checks the store's flags.
func (o *Options) validateStorage() error {
	switch {
	case (o.DataDir == "") == (len(o.EtcdServers) == 0):
		return errors.New("give exactly one of --data-dir and --etcd-servers")
	case len(o.EtcdServers) == 0 && (o.EtcdCAFile != "" || o.EtcdCertFile != "" || o.EtcdKeyFile != ""):
		return errors.New("--etcd-cafile, --etcd-certfile and --etcd-keyfile need --etcd-servers")
	case (o.EtcdCertFile == "") != (o.EtcdKeyFile == ""):
		return errors.New("--etcd-certfile and --etcd-keyfile go together")
	case o.EtcdCompactionInterval < 0:
		return fmt.Errorf("--etcd-compaction-interval %s is negative", o.EtcdCompactionInterval)
	case o.EtcdHealthcheckTimeout < 0:
		return fmt.Errorf("--etcd-healthcheck-timeout %s is negative", o.EtcdHealthcheckTimeout)
	case o.EtcdReadycheckTimeout < 0:
		return fmt.Errorf("--etcd-readycheck-timeout %s is negative", o.EtcdReadycheckTimeout)
	}
	return nil
}

// validateServices checks the flags of Services and the kubernetes
// Service's endpoints.
func (o *Options) validateServices() error {
	if o.ServiceClusterIPRange != "" {
		if _, err := netip.ParsePrefix(o.ServiceClusterIPRange); err != nil {
			return fmt.Errorf("--service-cluster-ip-range %q is not a CIDR", o.ServiceClusterIPRange)
		}
	}
	if o.ServiceNodePortRange != "" {
		if _, err := apiserver.ParsePortRange(o.ServiceNodePortRange); err != nil {
			return fmt.Errorf("--service-node-port-range: %w", err)
		}
	}
	switch o.EndpointReconcilerType {
	case "", apiserver.EndpointReconcilerLease, apiserver.EndpointReconcilerNone:
	case "master-count":
		return errors.New(`--endpoint-reconciler-type "master-count" is not supported (kube-apiserver deprecates it); give lease or none`)
	default:
		return fmt.Errorf("--endpoint-reconciler-type %q is not one of %s, %s", o.EndpointReconcilerType, apiserver.EndpointReconcilerLease, apiserver.EndpointReconcilerNone)
	}
	if o.AdvertiseAddress != "" {
		if _, err := netip.ParseAddr(o.AdvertiseAddress); err != nil {
			return fmt.Errorf("--advertise-address %q is not an IP address", o.AdvertiseAddress)
		}
	}
	return nil
}

// advertise is the address the kubernetes endpoints list for this server
// (J.3): --advertise-address, or kube-apiserver's choice from the bind
// address; the zero Addr with --endpoint-reconciler-type=none. With the
// lease reconciler an address an endpoint may not hold is refused, as
// kube-apiserver refuses it at start.
func (o *Options) advertise() (netip.Addr, error) {
	if o.EndpointReconcilerType == apiserver.EndpointReconcilerNone {
		return netip.Addr{}, nil
	}
	addr, err := AdvertiseAddress(o.AdvertiseAddress, o.BindAddress)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("find the address to advertise: %v; give --advertise-address, or --endpoint-reconciler-type=none", err)
	}
	serviceRange := apiserver.DefaultServiceClusterIPRange
	if o.ServiceClusterIPRange != "" {
		serviceRange, _ = netip.ParsePrefix(o.ServiceClusterIPRange) // checked in Validate
	}
	if err := apiserver.CheckAdvertiseAddress(addr, serviceRange); err != nil {
		return netip.Addr{}, fmt.Errorf("%v; give --advertise-address an address clients reach the server at, or --endpoint-reconciler-type=none", err)
	}
	return addr, nil
}

// AdvertiseAddress is advertise if set, else kube-apiserver's choice of
// the address to advertise from the bind address: the bind address
// itself when it is a specific non-loopback address, else the address of
// the host's default-route interface.
func AdvertiseAddress(advertise, bind string) (netip.Addr, error) {
	if advertise != "" {
		a, err := netip.ParseAddr(advertise)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("%q is not an IP address", advertise)
		}
		if !a.IsUnspecified() {
			return a.Unmap(), nil
		}
	}
	ip, err := utilnet.ResolveBindAddress(net.ParseIP(bind))
	if err != nil {
		return netip.Addr{}, err
	}
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.Addr{}, fmt.Errorf("no address for bind address %q", bind)
	}
	return a.Unmap(), nil
}

// applyTo sets in cfg what the options say in the flags' own terms:
// no request deadline for --request-timeout 0, the kubernetes Service's
// port from --external-address, and the service ranges.
func (o *Options) applyTo(cfg *apiserver.Config) {
	if o.RequestTimeout == 0 {
		cfg.RequestTimeout = -1 // none
	}
	if _, port, err := net.SplitHostPort(o.ExternalAddress); err == nil {
		cfg.KubernetesServicePort, _ = strconv.Atoi(port)
	}
	if o.ServiceClusterIPRange != "" {
		cfg.ServiceClusterIPRange, _ = netip.ParsePrefix(o.ServiceClusterIPRange) // checked in Validate
	}
	if o.ServiceNodePortRange != "" {
		cfg.ServiceNodePortRange, _ = apiserver.ParsePortRange(o.ServiceNodePortRange)
	}
}

// Server is a configured API server ready to serve.
type Server struct {
	Server   *apiserver.Server
	HTTP     *http.Server
	Listener net.Listener
	Store    store.Store
	// RBAC is the store-backed rule source; nil with AlwaysAllow.
	RBAC   *rbacsource.Source
	logger *slog.Logger
	cancel context.CancelFunc // ends the controllers and file watches
	// stopAdmission ends the dynamic admission plugins' informers, whose
	// watches are in-process requests that shutdown would otherwise wait
	// for.
	stopAdmission context.CancelFunc
	local         *localRequests // requests served in process (InProcessTransport)
	// stopCRDControllers ends the apiextensions controllers, which call
	// the server in process, before it stops serving.
	stopCRDControllers func()
	// conversion reaches the conversion webhooks of custom resources.
	conversion conversionWebhooks
}

// URL returns the server's base URL on its listener.
func (s *Server) URL() string {
	return "https://" + s.Listener.Addr().String()
}

// New opens the store, writes the bootstrap objects that are
// missing (system namespaces, their default service accounts, the RBAC
// policy), starts following RBAC changes and listens on the secure port.
// Serve it with Serve; until then, or if New fails, the store is
// closed when ctx is done.
func New(ctx context.Context, o Options, logger *slog.Logger) (_ *Server, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	advertise, err := o.advertise()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	admissionCtx, stopAdmission := context.WithCancel(ctx)
	s := &Server{logger: logger, cancel: cancel, stopAdmission: stopAdmission, local: newLocalRequests()}
	defer func() {
		if err != nil {
			cancel()
			if s.Server != nil {
				s.Server.Close()
			}
			if s.Store != nil {
				s.Store.Close()
			}
		}
	}()
	if s.Store, err = openStore(ctx, &o, logger); err != nil {
		return nil, err
	}
	a, err := newAuthentication(ctx, &o, s.Store, logger)
	if err != nil {
		return nil, err
	}
	// kube-apiserver's dynamic admission (D.13) comes after every other
	// plugin; it is started once the server can answer its loopback
	// client, before New returns.
	dyn, err := admission.NewDynamic()
	if err != nil {
		return nil, err
	}
	// The aggregator finds services' endpoints as the conversion webhooks
	// do, once dynamic admission has started.
	agg, err := aggregator.New(aggregator.Options{ProxyClientCertFile: o.ProxyClientCertFile,
		ProxyClientKeyFile: o.ProxyClientKeyFile, Resolver: &s.conversion, Logger: logger})
	if err != nil {
		return nil, err
	}
	cfg := apiserver.Config{
		Store:           s.Store,
		Authenticator:   a.request,
		IdentityHeaders: a.identityHeaders,
		Impersonation:   true,
		Resources:       registry.Resources(),
		Admission:       admission.WithDynamic(admission.Chain(s.Store), dyn.Plugins()),
		Logger:          logger,
		ExternalAddress: o.ExternalAddress,
		// The kubernetes Service targets the port clients reach.
		KubernetesServicePort: o.SecurePort,
		Aggregator:            agg,
		// The kubernetes Service's endpoints (J.3).
		AdvertiseAddress:          advertise,
		EndpointReconciler:        o.EndpointReconcilerType,
		EndpointLeaseTTL:          o.EndpointLeaseTTL,
		EndpointReconcileInterval: o.EndpointReconcileInterval,
		RequestTimeout:            o.RequestTimeout,
		HealthcheckTimeout:        o.EtcdHealthcheckTimeout,
		ReadycheckTimeout:         o.EtcdReadycheckTimeout,
	}
	o.applyTo(&cfg)
	var reviews authzapi.Config
	switch o.AuthorizationMode {
	case ModeRBAC:
		if _, err := rbacsource.EnsurePolicy(ctx, s.Store, Policy(), nil); err != nil {
			return nil, fmt.Errorf("write the bootstrap RBAC policy: %w", err)
		}
		s.RBAC = rbacsource.New(s.Store, rbacsource.Options{Logger: logger})
		if err := s.RBAC.Start(ctx); err != nil {
			return nil, err
		}
		rules := rbac.New(s.RBAC)
		cfg.Authorizer = authz.Union(authz.PrivilegedGroups(authz.SystemMasters), rules)
		cfg.Escalation = rbacsource.Escalation{Guard: rbac.NewGuard(rules, cfg.Authorizer), Authorizer: cfg.Authorizer}
		reviews.Rules = rules
	case ModeAlwaysAllow:
		cfg.Authorizer = authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
			return authz.Allow, "", nil
		})
		reviews.Rules = allowAll{}
	}
	reviews.Authorizer = cfg.Authorizer
	cfg.Creators = authnapi.Creators(authnapi.Config{Tokens: a.tokens, APIAudiences: a.audiences, Issuer: a.issuer})
	maps.Copy(cfg.Creators, authzapi.Creators(reviews))
	// New creates the system namespaces; each then has its default
	// service account before the first request is served.
	if s.Server, err = apiserver.New(cfg); err != nil {
		return nil, err
	}
	// The custom resources of the established definitions are served
	// from the first request on, and follow the definitions after.
	converters, err := s.conversion.converters()
	if err != nil {
		return nil, fmt.Errorf("custom resource conversion: %w", err)
	}
	if _, err := customresource.Follow(ctx, s.Store, s.Server, converters, logger); err != nil {
		return nil, fmt.Errorf("follow custom resource definitions: %w", err)
	}
	sas := &admission.ServiceAccounts{Store: s.Store, Logger: logger, AtStartOnly: o.ServiceAccountsAtStartOnly}
	if err := sas.Start(ctx); err != nil {
		return nil, fmt.Errorf("create default service accounts: %w", err)
	}

	if err := s.listen(ctx, &o, logger); err != nil {
		return nil, err
	}
	// As in kube-apiserver, the controllers of CRDs run in the server's
	// process, on its loopback client.
	if s.stopCRDControllers, err = StartAPIExtensionsControllers(ctx, s.LoopbackConfig(), s.Server.OwnerOf); err != nil {
		s.Listener.Close()
		return nil, fmt.Errorf("start the apiextensions controllers: %w", err)
	}
	// The server admits writes once dynamic admission is ready; the
	// controllers that write start after it.
	if err := s.startDynamicAdmission(admissionCtx, dyn, cfg.Resources, cfg.Authorizer); err != nil {
		s.stopCRDControllers()
		s.Listener.Close()
		return nil, err
	}
	stopMore, err := s.startWritingControllers(ctx, agg, logger)
	if err != nil {
		s.stopCRDControllers()
		s.Listener.Close()
		return nil, err
	}
	stopCRD := s.stopCRDControllers
	s.stopCRDControllers = func() { stopMore(); stopCRD() }
	return s, nil
}

// startWritingControllers starts the controllers the server runs on its
// loopback client once dynamic admission is ready: the flowschema
// status, the APIService registration and the aggregator's availability
// controller. stop ends them; on an error none is left running.
func (s *Server) startWritingControllers(ctx context.Context, agg *aggregator.Aggregator, logger *slog.Logger) (stop func(), _ error) {
	stopFlowSchemaStatus, err := StartFlowSchemaStatus(ctx, s.LoopbackConfig(), logger)
	if err != nil {
		return nil, fmt.Errorf("start the flowschema status controller: %w", err)
	}
	stopAPIServices, err := StartAPIServiceRegistration(ctx, s.LoopbackConfig(), s.Server)
	if err != nil {
		stopFlowSchemaStatus()
		return nil, fmt.Errorf("start the apiservice registration: %w", err)
	}
	stopAggregator, err := agg.Start(ctx, s.LoopbackConfig())
	if err != nil {
		stopAPIServices()
		stopFlowSchemaStatus()
		return nil, fmt.Errorf("start the aggregator: %w", err)
	}
	return func() { stopAggregator(); stopAPIServices(); stopFlowSchemaStatus() }, nil
}

// listen makes the server's HTTPS server, serving its handler with the
// reloading serving certificate, and opens its listener.
func (s *Server) listen(ctx context.Context, o *Options, logger *slog.Logger) error {
	servingPair, err := serving.LoadKeyPair(o.TLSCertFile, o.TLSKeyFile)
	if err != nil {
		return err
	}
	if err := servingPair.Watch(ctx, o.ReloadInterval, logger); err != nil {
		return err
	}
	requestCerts := o.ClientCAFile != "" || o.RequestHeaderCAFile != ""
	tc := serving.ServerTLSConfig(servingPair, requestCerts, nil)
	if err := o.TLS.Apply(tc, logger); err != nil {
		return err
	}
	s.HTTP = serving.NewHTTPServer(s.Server.Handler(), tc, logger)
	addr := net.JoinHostPort(o.BindAddress, strconv.Itoa(o.SecurePort))
	if s.Listener, err = net.Listen("tcp", addr); err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return nil
}

// allowAll is the rules of AlwaysAllow: everything.
type allowAll struct{}

func (allowAll) RulesFor(authn.User, string) ([]rbacv1.PolicyRule, error) {
	return []rbacv1.PolicyRule{
		{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
		{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
	}, nil
}

func openStore(ctx context.Context, o *Options, logger *slog.Logger) (store.Store, error) {
	if len(o.EtcdServers) > 0 {
		compact := o.EtcdCompactionInterval
		if compact == 0 {
			compact = -1 // off, as the flag's 0 means
		}
		st, err := etcd.New(ctx, etcd.Config{Endpoints: o.EtcdServers, CAFile: o.EtcdCAFile,
			CertFile: o.EtcdCertFile, KeyFile: o.EtcdKeyFile, Prefix: o.EtcdPrefix,
			CompactInterval: compact, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("--etcd-servers: %w", err)
		}
		return st, nil
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	st, err := bolt.Open(filepath.Join(o.DataDir, StateFile), bolt.Options{})
	if err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	return st, nil
}

// Close releases an API server that will not be served: its listener, its
// store and its background work.
func (s *Server) Close() error {
	s.cancel()
	s.stopCRDControllers()
	return errors.Join(s.Listener.Close(), s.Server.Close(), s.Store.Close())
}

// Serve serves until ctx is done, then shuts down: requests in flight (on
// the network and in process) get a second to finish, then open watches
// are ended, and the store is closed once no handler can write to it any
// more.
func (s *Server) Serve(ctx context.Context) error {
	defer s.Store.Close()
	defer s.Server.Close()
	defer s.cancel()
	defer s.local.endStreams()
	s.HTTP.BaseContext = func(net.Listener) context.Context { return s.local.streams }
	errc := make(chan error, 1)
	go func() { errc <- s.HTTP.ServeTLS(s.Listener, "", "") }()
	select {
	case err := <-errc:
		s.stopAdmission()
		s.stopCRDControllers()
		s.local.close()
		s.local.endStreams()
		final, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.local.wait(final)
		return err
	case <-ctx.Done():
	}
	s.stopAdmission()
	s.stopCRDControllers()
	s.local.close()
	grace, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.HTTP.Shutdown(grace); err == nil && s.local.wait(grace) == nil {
		return nil
	}
	s.local.endStreams()
	final, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := errors.Join(s.HTTP.Shutdown(final), s.local.wait(final)); err != nil {
		s.HTTP.Close()
		return fmt.Errorf("shut down the API server: %w", err)
	}
	return nil
}

// InProcessTransport returns a transport that serves a gateway's requests
// with this server's handler, in process, presenting frontProxy's
// certificate chain as the TLS client certificate (see
// inProcessTransport). Upgrade requests go to fallback, a transport to the
// server's listener with the same certificate.
func (s *Server) InProcessTransport(frontProxy *serving.KeyPair, fallback http.RoundTripper) http.RoundTripper {
	return &inProcessTransport{handler: s.Server.Handler(), local: s.local, cert: frontProxy, fallback: fallback}
}

// authentication is the server's assembled authentication.
type authentication struct {
	request         authn.Request // the whole chain
	identityHeaders []authn.IdentityHeaders
	tokens          authn.Request // token authenticators only, for TokenReview
	audiences       []string
	issuer          *serviceaccount.Issuer
}

func newAuthentication(ctx context.Context, o *Options, st store.Store, logger *slog.Logger) (*authentication, error) {
	keyFiles := o.SAKeyFiles
	if len(keyFiles) == 0 && o.SASigningKeyFile != "" {
		keyFiles = []string{o.SASigningKeyFile}
	}
	fo := fileconfig.Options{Flags: o.Flags, SAGetter: authnapi.Getter{Store: st}, BootstrapGetter: authnapi.Getter{Store: st},
		ReloadInterval: o.ReloadInterval}
	fo.SAKeyFiles = keyFiles
	ac, err := fileconfig.Load(ctx, fo, logger)
	if err != nil {
		return nil, err
	}
	a := &authentication{audiences: fo.Audiences()}
	if o.SASigningKeyFile != "" {
		pemKey, err := os.ReadFile(o.SASigningKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
		}
		key, err := serviceaccount.ParsePrivateKeyPEM(pemKey)
		if err != nil {
			return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
		}
		if a.issuer, err = serviceaccount.NewIssuer(key, serviceaccount.IssuerOptions{Issuer: o.SAIssuers[0],
			APIAudiences: a.audiences, MaxExpiration: o.SAMaxTokenExpiration, ExtendExpiration: true}); err != nil {
			return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
		}
		// A new key (a rotation, H.6) signs the tokens issued after it.
		if err := filewatch.Watch(ctx, o.SASigningKeyFile, o.ReloadInterval, a.issuer.Load, logger); err != nil {
			return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
		}
	}
	a.request, a.identityHeaders = authn.New(ac), ac.IdentityHeaders()
	if len(ac.StaticTokens)+len(ac.Tokens) > 0 {
		a.tokens = authn.New(authn.Config{StaticTokens: ac.StaticTokens, Tokens: ac.Tokens, TokenCache: ac.TokenCache})
	}
	return a, nil
}

// GatewayLookupRole is the cluster role (and binding) that lets a kubegate
// gateway in front of this server look up the objects service-account
// tokens name and ask who may read its metrics, and the role (and
// binding) in kube-system that lets it watch the Secrets of bootstrap
// tokens, as bootstrap.GatewayUser (the gateway's LookupUser).
const GatewayLookupRole = "system:kubegate:gateway"

// Policy is the RBAC policy the API server writes at first start: the
// default policy of kube-apiserver and kubeadm, plus the gateway's lookup
// rights.
func Policy() rbac.Objects {
	p := bootstrap.Policy()
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: GatewayLookupRole, Labels: map[string]string{bootstrap.BootstrappingLabel: bootstrap.BootstrappingValue}}
	}
	p.ClusterRoles = append(p.ClusterRoles, &rbacv1.ClusterRole{ObjectMeta: meta(), Rules: []rbacv1.PolicyRule{{
		Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"serviceaccounts", "secrets", "pods", "nodes"},
	}, {
		// Who may read the gateway's /kubegate/metrics.
		Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"},
	}}})
	p.ClusterRoleBindings = append(p.ClusterRoleBindings, &rbacv1.ClusterRoleBinding{
		ObjectMeta: meta(),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: GatewayLookupRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: bootstrap.GatewayUser}},
	})
	// The gateway watches the Secrets of kube-system for bootstrap
	// tokens, as kube-apiserver does.
	nsMeta := meta()
	nsMeta.Namespace = metav1.NamespaceSystem
	p.Roles = append(p.Roles, &rbacv1.Role{ObjectMeta: nsMeta, Rules: []rbacv1.PolicyRule{{
		Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"secrets"},
	}}})
	p.RoleBindings = append(p.RoleBindings, &rbacv1.RoleBinding{
		ObjectMeta: nsMeta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: GatewayLookupRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: bootstrap.GatewayUser}},
	})
	return p
}
