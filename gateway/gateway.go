// Package gateway is kubegate's authenticating reverse proxy. It
// authenticates each request exactly as kube-apiserver would (see package
// authn), removes every credential and identity header the client sent, and
// forwards the request to an upstream API server with the verified identity:
// as request-header identity headers (X-Remote-User, X-Remote-Group, …)
// over the gateway's front-proxy client certificate, or as Impersonate-*
// headers for upstreams without request-header authentication.
//
// Streams pass through unbuffered: watches are flushed per event, and
// protocol upgrades (SPDY and WebSocket, for exec, attach and port-forward)
// are spliced in both directions.
//
// One request policy (policy.go) decides every request: its ID, who sent
// it, whether it goes on, and the exact header set that goes upstream.
// Gateway.ServeHTTP renders it with httputil.ReverseProxy; with a
// FastPath configured, Server.Serve renders it for plain HTTP/1.1
// requests with package gateway/internal/h1, which frames bytes only,
// and hands HTTP/2, upgrades, bodies and anything unusual to net/http.
// HTTP/2 is served by Go's HTTP/2 server unless FastPath.HTTP2 opts in
// to package gateway/internal/h2.
package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/console"
	"github.com/kubegate/kubegate/gateway/internal/h1"
)

// UpstreamIdentity says how the gateway tells the upstream who the user is.
type UpstreamIdentity string

const (
	// RequestHeaderIdentity sends X-Remote-User, X-Remote-Uid,
	// X-Remote-Group and X-Remote-Extra-* over the gateway's front-proxy
	// client certificate. The upstream must trust the front-proxy CA.
	RequestHeaderIdentity UpstreamIdentity = "requestheader"
	// ImpersonateIdentity sends Impersonate-* headers on the gateway's own
	// credential, which the upstream must allow to impersonate.
	ImpersonateIdentity UpstreamIdentity = "impersonate"
)

// DefaultMaxBodyBytes bounds request bodies that are not streams; it is
// kube-apiserver's limit for a single object request (3 MiB).
const DefaultMaxBodyBytes = 3 << 20

// DefaultBodyTimeout is how long a client may take to send a request
// body: kube-apiserver's default request timeout.
const DefaultBodyTimeout = time.Minute

// Config configures a Gateway.
type Config struct {
	// Upstream is the API server's base URL. Required unless Upstreams
	// is set.
	Upstream *url.URL
	// Upstreams are several API servers sharing one store, which the
	// gateway balances over (docs/kubernetes-behaviour.md, J.5): the
	// same scheme and path, reached with the same Transport. Nil means
	// Upstream alone; when set, Upstream must be nil or the first.
	Upstreams []*url.URL
	// HealthCheck says how upstreams are checked when there are several;
	// zero fields take the defaults. A single upstream is not checked.
	HealthCheck HealthCheck
	// Transport carries requests to the upstream; nil means
	// http.DefaultTransport (tests only: it has no client certificate and
	// a small idle pool). See NewUpstreamTransport.
	Transport http.RoundTripper
	// FastPath, when set, serves plain HTTP/1.1 requests on the fast path
	// under the same request policy (see FastPath); nil serves every
	// request with net/http and httputil.ReverseProxy.
	FastPath *FastPath
	// Authenticator decides who each request comes from. Required.
	Authenticator authn.Request
	// Identity is how the identity is forwarded; zero means
	// RequestHeaderIdentity.
	Identity UpstreamIdentity
	// IdentityHeaders name the headers removed from every client request
	// besides Authorization and X-Remote-*: the configured request-header
	// names, so that custom names cannot be spoofed either.
	IdentityHeaders []authn.IdentityHeaders
	// Impersonation authorizes a client's own Impersonate-* headers in
	// ImpersonateIdentity mode, one "impersonate" check at a time
	// (authz.Impersonate); nil refuses them with 403.
	Impersonation authz.Authorizer
	// MetricsAuthorization decides who may read /kubegate/metrics: those
	// who may get the non-resource path /metrics, as on kube-apiserver.
	// Nil refuses everyone with 403.
	MetricsAuthorization authz.Authorizer
	// Console serves the web console at /kubegate/ui/ and gets every
	// finished request in its feed (docs/architecture.md, "The web
	// console"); nil serves no console.
	Console *console.Console
	// Revoked lists refused client certificates; nil refuses none.
	Revoked *Revocation
	// Registry receives the gateway's metrics, served at
	// /kubegate/metrics; nil means a new registry of the gateway's own.
	Registry *prometheus.Registry
	// AuditLog receives one JSON line per request; nil means no audit log.
	AuditLog io.Writer
	// Logger logs errors and refusals; nil means slog.Default().
	Logger *slog.Logger
	// MaxBodyBytes bounds request bodies that are not upgrades; zero means
	// DefaultMaxBodyBytes, negative means no limit. A body within the
	// limit is read whole before the request goes upstream (readBody).
	MaxBodyBytes int64
	// BodyTimeout is how long a client may take to send a request body;
	// zero means DefaultBodyTimeout.
	BodyTimeout time.Duration

	// set is the upstream set NewServer built for the gateway's own
	// client before the Gateway; nil means New builds it.
	set *upstreamSet
}

// Gateway is an http.Handler that authenticates and forwards requests.
type Gateway struct {
	cfg     Config
	router  http.Handler
	proxy   *httputil.ReverseProxy
	scrub   scrubber
	metrics *metrics
	audit   *auditLog
	log     *slog.Logger
	ready   readiness
	ridBase string
	ridSeq  atomic.Uint64
	ups     *upstreamSet
	stop    func()        // stops the health checks
	feed    *console.Feed // the console's, or nil

	// metricsHandler serves the registry once authorized.
	metricsHandler http.Handler
}

var _ http.Handler = (*Gateway)(nil)

// New returns a Gateway for c.
func New(c Config) (*Gateway, error) {
	if len(c.Upstreams) == 0 {
		c.Upstreams = []*url.URL{c.Upstream}
	}
	if c.Upstream == nil {
		c.Upstream = c.Upstreams[0]
	}
	if c.Upstream == nil || c.Upstream.Scheme == "" || c.Upstream.Host == "" {
		return nil, errors.New("gateway: upstream URL must be absolute, like https://127.0.0.1:6443")
	}
	if c.Upstream != c.Upstreams[0] && *c.Upstream != *c.Upstreams[0] {
		return nil, errors.New("gateway: Upstream is not the first of Upstreams")
	}
	if c.Authenticator == nil {
		return nil, errors.New("gateway: no authenticator configured")
	}
	switch c.Identity {
	case "":
		c.Identity = RequestHeaderIdentity
	case RequestHeaderIdentity, ImpersonateIdentity:
	default:
		return nil, fmt.Errorf("gateway: upstream identity %q is not one of requestheader, impersonate", c.Identity)
	}
	if c.Transport == nil {
		c.Transport = http.DefaultTransport
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	var rid [6]byte
	_, _ = rand.Read(rid[:])
	g := &Gateway{
		cfg:     c,
		scrub:   scrubber{ids: c.IdentityHeaders},
		metrics: newMetrics(c.Registry),
		log:     c.Logger,
		ridBase: hex.EncodeToString(rid[:]) + "-",
	}
	if c.AuditLog != nil {
		g.audit = newAuditLog(c.AuditLog)
	}
	if c.Console != nil {
		g.feed = c.Console.Feed()
	}
	g.ups = c.set
	if g.ups == nil {
		var err error
		if g.ups, err = newUpstreamSet(c.Upstreams, c.Transport, c.FastPath, c.Identity, c.HealthCheck, c.Logger); err != nil {
			return nil, err
		}
	}
	g.ups.m.register(c.Registry)
	g.ready = readiness{url: c.Upstream.JoinPath("/readyz").String(), rt: c.Transport, set: g.ups}
	if c.Identity == RequestHeaderIdentity {
		// The upstream authenticates the probe as any other request: by
		// the front-proxy certificate and a user header.
		g.ready.asUser = LookupUser
	}
	g.proxy = &httputil.ReverseProxy{
		Rewrite:        g.rewrite,
		Transport:      &balancedTransport{set: g.ups, rt: c.Transport},
		ModifyResponse: g.upstreamResponded,
		ErrorHandler:   g.upstreamFailed,
		ErrorLog:       slog.NewLogLogger(c.Logger.Handler(), slog.LevelWarn),
		BufferPool:     bufferPool{},
	}

	// The gateway's own endpoints live under /kubegate/; /healthz,
	// /metrics and the like are the upstream's and are forwarded.
	g.metricsHandler = promhttp.HandlerFor(c.Registry, promhttp.HandlerOpts{})
	r := chi.NewRouter()
	r.Get("/kubegate/healthz", ok)
	r.Get("/kubegate/livez", ok)
	r.Get("/kubegate/readyz", g.serveReadyz)
	r.Get("/kubegate/metrics", g.authenticated(g.serveMetrics))
	r.Get("/kubegate/whoami", g.authenticated(g.serveWhoami))
	if c.Console != nil {
		g.routeConsole(r)
	}
	r.NotFound(g.authenticated(g.forward))
	r.MethodNotAllowed(g.authenticated(g.forward))
	g.router = r
	g.stop = g.ups.start()
	return g, nil
}

// Close stops checking the upstreams' health. The Gateway serves on,
// with the upstreams as they were last judged.
func (g *Gateway) Close() {
	g.stop()
	if g.feed != nil {
		g.feed.Close()
	}
}

// ServeHTTP routes r.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.router.ServeHTTP(w, r) }

// Flush writes out buffered audit lines. Call it periodically and on
// shutdown; Run does both.
func (g *Gateway) Flush() error {
	if g.audit == nil {
		return nil
	}
	return g.audit.flush()
}

// first returns the first value of the header key, which must be in
// canonical form.
func first(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func ok(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok")
}

// reqState follows one request through the gateway, for metrics and audit.
type reqState struct {
	id             string // the gateway's own request ID
	clientID       string // the client's X-Request-Id, for the audit line only
	start          time.Time
	resp           *authn.Response
	target         *authn.User // the identity forwarded upstream
	upstreamStatus int
	upstreamStart  time.Time
	err            error
	refusal        *refusal // set when the request is answered, not forwarded
	certSerial     string   // an x509 user's certificate serial, for the audit line only

	// For the console's feed only, set when there is one:
	query  string // the URL's raw query
	issuer string // a JWT's issuer
	reason string // why it was refused: a 401's authentication error, a 403's Status message
}

type stateKey struct{}

func stateFrom(ctx context.Context) *reqState {
	s, _ := ctx.Value(stateKey{}).(*reqState)
	return s
}

// authenticated wraps next with the request policy's admission (admit),
// the metrics and the audit line; a refused request gets its refusal.
func (g *Gateway) authenticated(next func(http.ResponseWriter, *http.Request, *reqState)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st := g.admit(r)
		rec := &statusRecorder{ResponseWriter: w, id: st.id}
		defer g.finish(rec, r, st)
		if st.refusal != nil {
			writeStatus(rec, st.refusal.code, st.refusal.body)
			return
		}
		next(rec, r, st)
	}
}

// authenticate runs the revocation check and the authenticator on a
// request that arrived at now.
func (g *Gateway) authenticate(r *http.Request, now time.Time) (*authn.Response, bool, error) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		leaf := r.TLS.PeerCertificates[0]
		g.metrics.certTimeLeft.Observe(leaf.NotAfter.Sub(now).Seconds())
		if err := g.cfg.Revoked.Check(leaf); err != nil {
			return nil, false, err
		}
	}
	resp, ok, err := g.cfg.Authenticator.AuthenticateRequest(r)
	if ok {
		if err := forwardable(&resp.User); err != nil {
			return nil, false, err
		}
	}
	return resp, ok, err
}

// clientRequestID returns the part of a client's X-Request-Id that the
// audit line records: at most 128 bytes.
func clientRequestID(v string) string {
	if len(v) > maxClientRequestID {
		v = v[:maxClientRequestID]
	}
	return v
}

const maxClientRequestID = 128

// newRequestID returns a request ID unique to this gateway process. It is
// the request's only ID: in the audit line, upstream and to the client.
// A client's own X-Request-Id is recorded beside it, never used as it,
// so that no request can pass for another in the audit log.
func (g *Gateway) newRequestID() string {
	var b [32]byte // ridBase is 13 bytes, a uint64 in base 36 at most 13
	return string(strconv.AppendUint(append(b[:0], g.ridBase...), g.ridSeq.Add(1), 36))
}

// finish records metrics and the audit line for a finished request.
func (g *Gateway) finish(rec *statusRecorder, r *http.Request, st *reqState) {
	g.record(rec.code, r.Method, r.URL.Path, st)
}

// record counts a finished request and writes its audit line; code 0
// means 200.
func (g *Gateway) record(code int, method, path string, st *reqState) {
	if code == 0 {
		code = http.StatusOK
	}
	g.metrics.countRequest(code, method, st.authenticator())
	g.auditRequest(code, method, path, st)
	if g.feed != nil {
		g.publish(code, method, path, st)
	}
}

// authenticator names the authenticator that matched, if any.
func (st *reqState) authenticator() string {
	if st.resp == nil {
		return ""
	}
	return st.resp.Authenticator
}

// auditRequest writes the audit line of a finished request.
func (g *Gateway) auditRequest(code int, method, path string, st *reqState) {
	if g.audit == nil {
		return
	}
	ev := &auditEvent{
		Time:           st.start.UTC(),
		RequestID:      st.id,
		Authenticator:  st.authenticator(),
		Method:         method,
		Path:           path,
		Status:         code,
		UpstreamStatus: st.upstreamStatus,
		LatencySeconds: time.Since(st.start).Seconds(),
	}
	ev.ClientRequestID = st.clientID
	if st.resp != nil {
		u := st.resp.User
		ev.User, ev.UID, ev.Groups = u.Name, u.UID, u.Groups
		if ids := u.Extra[authn.CredentialIDKey]; len(ids) > 0 {
			ev.CredentialID = ids[0]
		}
		ev.CertSerial = st.certSerial
	}
	if st.err != nil {
		ev.Error = st.err.Error()
	}
	g.audit.write(ev)
}

// forward sends an admitted request upstream.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, st *reqState) {
	// Upgrades (exec, attach, port-forward) carry no body before the
	// switch; one that does gets the same treatment, so that an Upgrade
	// header cannot lift the limit or the timeout.
	if r.ContentLength == 0 {
		// No body, announced or not: an HTTP/2 stream that ended with
		// its headers, or a declared length of 0, which both servers
		// hold the client to.
		r.Body = http.NoBody
	}
	if g.cfg.FastPath != nil && h1.TakesStream(r, skipFast) {
		g.forwardFast(w, r, st)
		return
	}
	if g.cfg.MaxBodyBytes > 0 && r.Body != nil && r.Body != http.NoBody {
		if !g.readBody(w, r, st) {
			return
		}
	}
	g.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), stateKey{}, st)))
}

// readBody reads r's whole body before anything goes upstream, so that a
// client sending its body slowly holds no upstream connection, nor one of
// the API server's in-flight seats, and a body over the limit is refused
// with 413 before a byte of it is forwarded, never cut short on the way.
// The body must arrive within BodyTimeout, or the answer is 408. It
// reports whether the request can go on.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request, st *reqState) bool {
	limit := g.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		st.err = fmt.Errorf("request body of %d bytes is larger than the limit of %d", r.ContentLength, limit)
		tooLarge(w, limit)
		return false
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(g.cfg.BodyTimeout))
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1))
	_ = rc.SetReadDeadline(time.Time{})
	switch {
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		st.err = fmt.Errorf("request body not received within %v", g.cfg.BodyTimeout)
		w.Header().Set("Connection", "close")
		writeStatus(w, http.StatusRequestTimeout, statusBody(http.StatusRequestTimeout, metav1.StatusReasonTimeout,
			fmt.Sprintf("request body not received within %v", g.cfg.BodyTimeout)))
		return false
	case err != nil:
		st.err = fmt.Errorf("reading the request body: %w", err)
		writeStatus(w, http.StatusBadRequest, statusBody(http.StatusBadRequest, metav1.StatusReasonBadRequest, "the request body could not be read"))
		return false
	case int64(buf.Len()) > limit:
		st.err = fmt.Errorf("request body larger than the limit of %d bytes", limit)
		tooLarge(w, limit)
		return false
	}
	body := buf.Bytes()
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	r.TransferEncoding = nil
	return true
}

// tooLarge answers 413 for a body over limit bytes, as kube-apiserver
// does, and closes the connection rather than read the rest of the body.
func tooLarge(w http.ResponseWriter, limit int64) {
	w.Header().Set("Connection", "close")
	writeStatus(w, http.StatusRequestEntityTooLarge, statusBody(http.StatusRequestEntityTooLarge, "RequestEntityTooLarge",
		fmt.Sprintf("request body larger than %d bytes", limit)))
}

// rewrite builds the upstream request: the upstream's URL, and the
// header set the request policy gives (outbound).
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(g.cfg.Upstream)
	st := stateFrom(pr.In.Context())
	pr.Out.Header = g.outbound(pr.In.Header, pr.In.RemoteAddr, st)
	st.upstreamStart = time.Now()
}

func (g *Gateway) upstreamResponded(resp *http.Response) error {
	if st := stateFrom(resp.Request.Context()); st != nil {
		st.upstreamStatus = resp.StatusCode
		g.metrics.observeUpstream(resp.StatusCode, time.Since(st.upstreamStart))
		if g.feed != nil {
			keepRefusal(resp, st)
		}
	}
	return nil
}

func (g *Gateway) upstreamFailed(w http.ResponseWriter, r *http.Request, err error) {
	st := stateFrom(r.Context())
	if st != nil {
		st.err = err
	}
	if errors.Is(err, context.Canceled) {
		// The client went away; there is nobody to answer.
		w.WriteHeader(499)
		return
	}
	id := ""
	if st != nil {
		id = st.id
	}
	g.log.Error("upstream request failed", "requestID", id, "method", r.Method, "path", r.URL.Path, "error", err)
	code, body := failureBody(err)
	writeStatus(w, code, body)
}

// whoami is what /kubegate/whoami returns.
type whoami struct {
	Authenticator string              `json:"authenticator"`
	Username      string              `json:"username"`
	UID           string              `json:"uid,omitempty"`
	Groups        []string            `json:"groups,omitempty"`
	Extra         map[string][]string `json:"extra,omitempty"`
	Forwarded     http.Header         `json:"forwardedHeaders"`
}

func (g *Gateway) serveWhoami(w http.ResponseWriter, _ *http.Request, st *reqState) {
	u := st.target
	fwd := http.Header{}
	if g.cfg.Identity == ImpersonateIdentity {
		setImpersonation(fwd, u)
	} else {
		setRemoteIdentity(fwd, u)
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(whoami{
		Authenticator: st.resp.Authenticator,
		Username:      u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra,
		Forwarded: fwd,
	})
}

// serveMetrics serves the gateway's metrics to those who may get /metrics.
func (g *Gateway) serveMetrics(w http.ResponseWriter, r *http.Request, st *reqState) {
	a := authz.Attributes{User: *st.target, Verb: "get", Path: "/metrics"}
	if g.cfg.MetricsAuthorization == nil {
		st.refuseWith(authz.Forbidden(a, ""), http.StatusForbidden)
		writeStatus(w, st.refusal.code, st.refusal.body)
		return
	}
	d, reason, err := g.cfg.MetricsAuthorization.Authorize(r.Context(), a)
	if err != nil {
		g.log.Error("metrics authorization failed", "requestID", st.id, "user", a.User.Name, "error", err)
		reason = "authorization check failed"
	}
	if err != nil || d != authz.Allow {
		st.refuseWith(authz.Forbidden(a, reason), http.StatusForbidden)
		writeStatus(w, st.refusal.code, st.refusal.body)
		return
	}
	g.metricsHandler.ServeHTTP(w, r)
}

// readiness checks the upstream's /readyz at most once a second, with
// the gateway's own credential. With several upstreams it reads their
// health instead: the gateway is ready while one is.
type readiness struct {
	url string
	rt  http.RoundTripper
	set *upstreamSet
	// asUser, when set, is sent as X-Remote-User (request-header mode).
	asUser string

	mu      sync.Mutex
	checked time.Time
	err     error
}

func (rd *readiness) check(ctx context.Context) error {
	if rd.set.balanced {
		if !rd.set.anyHealthy() {
			return errNoUpstream
		}
		return nil
	}
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if time.Since(rd.checked) < time.Second {
		return rd.err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rd.err = probeReadyz(ctx, rd.rt, rd.url, rd.asUser)
	rd.checked = time.Now()
	return rd.err
}

func (g *Gateway) serveReadyz(w http.ResponseWriter, r *http.Request) {
	if err := g.ready.check(r.Context()); err != nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "not ready: %v\n", err)
		return
	}
	ok(w, r)
}

// statusRecorder remembers the status code written. It unwraps, so that
// http.ResponseController (used by the reverse proxy for flushing and for
// upgrades) reaches the real writer.
type statusRecorder struct {
	http.ResponseWriter
	id   string // the request's ID
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		s.code = code
		s.head()
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
		s.head()
	}
	return s.ResponseWriter.Write(b)
}

// head completes the final answer's header, as the fast path writes it:
// the request ID after any the upstream sent, and no Content-Type that
// net/http's server would guess from the body. Informational answers
// carry neither.
func (s *statusRecorder) head() {
	h := s.ResponseWriter.Header()
	h["X-Request-Id"] = append(h["X-Request-Id"], s.id)
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil
	}
}

// Flush lets the reverse proxy flush watch events through the recorder.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// bufferPool reuses the reverse proxy's copy buffers.
type bufferPool struct{}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *copyBuffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { copyBuffers.Put(&b) }
