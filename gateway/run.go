package gateway

import (
	"context"
	"errors"
	"fmt"
	"github.com/kubegate/kubegate/internal/serving"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/fileconfig"
	"github.com/kubegate/kubegate/console"
	"github.com/kubegate/kubegate/internal/filewatch"
)

// Options are the gateway's command-line settings, named after
// kube-apiserver's flags where one exists. Every file is reloaded when it
// changes.
type Options struct {
	BindAddress string // default 0.0.0.0
	SecurePort  int    // default 6443
	TLSCertFile string // required
	TLSKeyFile  string // required
	TLSCurves   []string
	// TLS are the cipher suites and minimum TLS version served.
	TLS serving.TLSFlags
	// Flags are the authentication flags; SALookup checks tokens'
	// objects through the upstream, and bootstrap tokens are checked
	// against Secrets read from it.
	fileconfig.Flags
	// Upstream is the API server to forward to; Upstreams, when set,
	// are several sharing one store (docs/kubernetes-behaviour.md, J.5),
	// and Upstream must then be empty. One of them is required.
	Upstream  string
	Upstreams []string
	// HealthCheck says how several upstreams are checked.
	HealthCheck      HealthCheck
	UpstreamCAFile   string
	ProxyCertFile    string
	ProxyKeyFile     string
	UpstreamIdentity UpstreamIdentity
	RevokedCertsFile string
	AuditLogPath     string // "-" is standard output; empty is none
	MaxBodyBytes     int64
	ReloadInterval   time.Duration // default 1 s
	// Transport carries requests to Upstream; nil means one built from
	// the upstream options (NewUpstreamTransport).
	Transport http.RoundTripper
	// HTTP1FastPath serves plain HTTP/1.1 requests on the fast path
	// (FastPath); it needs Transport nil and an upstream URL without a
	// path or query.
	HTTP1FastPath bool
	// HTTP2FastPath serves HTTP/2 connections with the fast path's own
	// HTTP/2 server (FastPath.HTTP2) instead of Go's; it needs
	// HTTP1FastPath. Off by default: Go's HTTP/2 server is the one that
	// gets Go's HTTP/2 fixes, so the gateway's own is opt-in.
	HTTP2FastPath bool
	// Console serves the web console at /kubegate/ui/ (package
	// console); default true.
	Console bool
	// ConsolePKIDir is the cluster directory the console's PKI view
	// shows, in kubeadm's layout; "" shows none.
	ConsolePKIDir string
}

// Defaults returns the options' defaults.
func Defaults() Options {
	return Options{
		BindAddress:      "0.0.0.0",
		SecurePort:       6443,
		Flags:            fileconfig.DefaultFlags(),
		UpstreamIdentity: RequestHeaderIdentity,
		MaxBodyBytes:     DefaultMaxBodyBytes,
		ReloadInterval:   filewatch.DefaultInterval,
		HTTP1FastPath:    true,
		Console:          true,
		HealthCheck: HealthCheck{
			Interval: DefaultHealthCheckInterval,
			Timeout:  DefaultHealthCheckTimeout,
			Rise:     DefaultHealthCheckRise,
			Fall:     DefaultHealthCheckFall,
		},
	}
}

// upstreams returns the upstream URLs as given, Upstream or Upstreams.
func (o *Options) upstreams() []string {
	if len(o.Upstreams) > 0 {
		return o.Upstreams
	}
	if o.Upstream == "" {
		return nil
	}
	return []string{o.Upstream}
}

// upstreamURLs parses and checks the upstream URLs, naming the first
// that is wrong.
func (o *Options) upstreamURLs() ([]*url.URL, error) {
	var ups []*url.URL
	for _, raw := range o.upstreams() {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("--upstream %q is not an http(s) URL", raw)
		}
		if err := checkUpstreamURL(u); err != nil {
			return nil, fmt.Errorf("--upstream %q %w", u.Redacted(), err)
		}
		if o.HTTP1FastPath && ((u.Path != "" && u.Path != "/") || u.RawQuery != "") {
			return nil, fmt.Errorf("--upstream %q has a path or query, which the HTTP/1.1 fast path cannot forward to; give --http1-fast-path=false", raw)
		}
		ups = append(ups, u)
	}
	if err := checkUpstreams(ups); err != nil {
		return nil, fmt.Errorf("--%w", err)
	}
	return ups, nil
}

// Validate names the first option that is wrong.
func (o *Options) Validate() error {
	switch {
	case o.TLSCertFile == "" || o.TLSKeyFile == "":
		return errors.New("--tls-cert-file and --tls-private-key-file are required")
	case len(o.upstreams()) == 0:
		return errors.New("--upstream is required")
	case o.Upstream != "" && len(o.Upstreams) > 0:
		return errors.New("give the upstreams as Upstreams or as Upstream, not both")
	case o.SecurePort <= 0 || o.SecurePort > 65535:
		return fmt.Errorf("--secure-port %d is not a port number", o.SecurePort)
	case !o.Configured():
		return errors.New("no authenticator configured: give --client-ca-file, --token-auth-file, --service-account-key-file or --requestheader-client-ca-file")
	case (o.ProxyCertFile == "") != (o.ProxyKeyFile == ""):
		return errors.New("--proxy-client-cert-file and --proxy-client-key-file go together")
	}
	if _, err := o.upstreamURLs(); err != nil {
		return err
	}
	if err := o.HealthCheck.validate(); err != nil {
		return err
	}
	if o.HTTP1FastPath && o.Transport != nil {
		return errors.New("the HTTP/1.1 fast path needs the gateway's own upstream transport")
	}
	if o.HTTP2FastPath && !o.HTTP1FastPath {
		return errors.New("--http2-fast-path needs --http1-fast-path")
	}
	if o.ConsolePKIDir != "" {
		if !o.Console {
			return errors.New("--console-pki-dir needs --console")
		}
		if fi, err := os.Stat(o.ConsolePKIDir); err != nil || !fi.IsDir() {
			return fmt.Errorf("--console-pki-dir %q is not a directory", o.ConsolePKIDir)
		}
	}
	if o.UpstreamIdentity != RequestHeaderIdentity && o.UpstreamIdentity != ImpersonateIdentity {
		return fmt.Errorf("--upstream-identity %q is not one of requestheader, impersonate", o.UpstreamIdentity)
	}
	if _, err := serving.ParseCurves(o.TLSCurves); err != nil {
		return fmt.Errorf("--tls-curve-preferences: %w", err)
	}
	if err := o.TLS.Validate(); err != nil {
		return err
	}
	return nil
}

// Server is a configured gateway ready to serve.
type Server struct {
	Gateway  *Gateway
	HTTP     *http.Server
	Listener net.Listener
	closers  []io.Closer
}

// NewServer loads every file named in o, starts reloading them until ctx
// is done, and listens on the secure port. Serve it with Serve.
func NewServer(ctx context.Context, o Options, logger *slog.Logger) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	s := &Server{}
	ups, _ := o.upstreamURLs()
	up := ups[0]
	servingPair, err := serving.LoadKeyPair(o.TLSCertFile, o.TLSKeyFile)
	if err != nil {
		return nil, err
	}
	if err := servingPair.Watch(ctx, o.ReloadInterval, logger); err != nil {
		return nil, err
	}
	rt := o.Transport
	var fast *FastPath
	if rt == nil {
		tro := UpstreamTransportOptions{}
		if o.UpstreamCAFile != "" {
			if tro.CA, err = serving.LoadCAPool(o.UpstreamCAFile); err != nil {
				return nil, fmt.Errorf("--upstream-ca-file: %w", err)
			}
			if err := tro.CA.Watch(ctx, o.ReloadInterval, logger); err != nil {
				return nil, fmt.Errorf("--upstream-ca-file: %w", err)
			}
		}
		if o.ProxyCertFile != "" {
			if tro.ClientCert, err = serving.LoadKeyPair(o.ProxyCertFile, o.ProxyKeyFile); err != nil {
				return nil, err
			}
			if err := tro.ClientCert.Watch(ctx, o.ReloadInterval, logger); err != nil {
				return nil, err
			}
		}
		if rt, err = NewUpstreamTransport(tro); err != nil {
			return nil, err
		}
		if o.HTTP1FastPath {
			if fast, err = NewFastPaths(ups, tro); err != nil {
				return nil, err
			}
			fast.HTTP2 = o.HTTP2FastPath
		}
	}

	// The gateway's own requests to the upstream (lookups, reviews and
	// the bootstrap token watch) go through one clientset on the
	// transport of client requests, balanced over the upstreams as they
	// are.
	set, err := newUpstreamSet(ups, rt, fast, o.UpstreamIdentity, o.HealthCheck, logger)
	if err != nil {
		return nil, err
	}
	client, err := NewUpstreamClient(up, &balancedTransport{set: set, rt: rt}, o.UpstreamIdentity)
	if err != nil {
		return nil, fmt.Errorf("--upstream: %w", err)
	}
	fo := fileconfig.Options{Flags: o.Flags, ReloadInterval: o.ReloadInterval}
	if o.SALookup {
		fo.SAGetter = &UpstreamGetter{Client: client}
	}
	if o.EnableBootstrapTokenAuth {
		fo.BootstrapGetter = NewBootstrapSecrets(ctx, client)
	}
	ac, err := fileconfig.Load(ctx, fo, logger)
	if err != nil {
		return nil, err
	}
	watch := func(path string, load filewatch.LoadFunc) error {
		return filewatch.Watch(ctx, path, o.ReloadInterval, load, logger)
	}
	var revoked *Revocation
	if o.RevokedCertsFile != "" {
		revoked = &Revocation{}
		if err := watch(o.RevokedCertsFile, revoked.Load); err != nil {
			return nil, fmt.Errorf("--revoked-certs: %w", err)
		}
	}
	var audit io.Writer
	switch o.AuditLogPath {
	case "":
	case "-":
		audit = os.Stdout
	default:
		f, err := os.OpenFile(o.AuditLogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("--audit-log-path: %w", err)
		}
		audit = f
		s.closers = append(s.closers, f)
	}
	cfg := Config{
		Upstreams:     ups,
		HealthCheck:   o.HealthCheck,
		set:           set,
		Transport:     rt,
		FastPath:      fast,
		Authenticator: authn.New(ac),
		Identity:      o.UpstreamIdentity,
		IdentityHeaders: append(ac.IdentityHeaders(), authn.IdentityHeaderNames(
			slices.Concat(o.RequestHeaderUsernameHeaders, o.RequestHeaderUIDHeaders, o.RequestHeaderGroupHeaders),
			o.RequestHeaderExtraPrefixes)),
		Revoked:      revoked,
		AuditLog:     audit,
		Logger:       logger,
		MaxBodyBytes: o.MaxBodyBytes,
	}
	sar := &SubjectAccessReviewer{Client: client}
	cfg.MetricsAuthorization = sar
	if o.UpstreamIdentity == ImpersonateIdentity {
		cfg.Impersonation = sar
	}
	if o.Console {
		// The console's views are decided by the same reviews as
		// /kubegate/metrics (docs/architecture.md, "The web console").
		if cfg.Console, err = console.New(console.Config{
			Authorizer: sar, PKIDir: o.ConsolePKIDir, Feed: console.NewFeed(0), Logger: logger,
		}); err != nil {
			return nil, err
		}
	}
	if s.Gateway, err = New(cfg); err != nil {
		return nil, err
	}
	curves, _ := serving.ParseCurves(o.TLSCurves)
	requestCerts := o.ClientCAFile != "" || o.RequestHeaderCAFile != ""
	tc := serving.ServerTLSConfig(servingPair, requestCerts, curves)
	if err := o.TLS.Apply(tc, logger); err != nil {
		return nil, err
	}
	s.HTTP = serving.NewHTTPServer(s.Gateway, tc, logger)
	addr := net.JoinHostPort(o.BindAddress, fmt.Sprint(o.SecurePort))
	if s.Listener, err = net.Listen("tcp", addr); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return s, nil
}

// Serve serves until ctx is done, then shuts down gracefully, flushing
// the audit log.
func (s *Server) Serve(ctx context.Context) error {
	errc, shutdown := serve(s.Gateway, s.HTTP, s.Listener)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	defer func() {
		s.Gateway.Close()
		_ = s.Gateway.Flush()
		for _, c := range s.closers {
			_ = c.Close()
		}
	}()
	for {
		select {
		case err := <-errc:
			return err
		case <-tick.C:
			_ = s.Gateway.Flush()
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return shutdown(sctx)
		}
	}
}

// validate names the health check setting that is wrong.
func (h HealthCheck) validate() error {
	switch {
	case h.Interval <= 0:
		return fmt.Errorf("--upstream-health-check-interval %v is not a positive duration", h.Interval)
	case h.Timeout <= 0:
		return fmt.Errorf("--upstream-health-check-timeout %v is not a positive duration", h.Timeout)
	case h.Rise <= 0:
		return fmt.Errorf("--upstream-health-check-rise %d is not a positive count", h.Rise)
	case h.Fall <= 0:
		return fmt.Errorf("--upstream-health-check-fall %d is not a positive count", h.Fall)
	}
	return nil
}
