package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/gateway/internal/h1"
)

// The gateway forwards to one upstream API server or to several that
// share a store (docs/kubernetes-behaviour.md, J.5). With several, each
// request goes to the next healthy one in turn; an upstream whose
// connection fails is ejected at once, and only its /readyz brings it
// back (HealthCheck). A request that failed on one upstream goes to
// another only when that cannot run it twice: always when nothing was
// sent, and after it was sent only for a GET, HEAD or OPTIONS without a
// body. A watch or an upgrade stays on the upstream it started on, and
// ends with it.

// HealthCheck says how the gateway checks its upstreams, when it has
// several: a GET of /readyz every Interval, as the gateway's own
// credential, which passes on a 200 within Timeout. Fall failures in a
// row eject an upstream, Rise passes in a row readmit it. Zero fields take
// the defaults.
type HealthCheck struct {
	Interval time.Duration // DefaultHealthCheckInterval
	Timeout  time.Duration // DefaultHealthCheckTimeout
	Rise     int           // DefaultHealthCheckRise
	Fall     int           // DefaultHealthCheckFall
}

// The health check's defaults, HAProxy's inter, rise and fall. An
// upstream that refuses connections is ejected by the first request that
// fails on it, without waiting for Fall checks; a draining API server
// (its /readyz failing while it still serves) leaves within
// Fall×Interval, and one that came back is readmitted within
// Rise×Interval.
const (
	DefaultHealthCheckInterval = 2 * time.Second
	DefaultHealthCheckTimeout  = time.Second
	DefaultHealthCheckRise     = 2
	DefaultHealthCheckFall     = 3
)

func (h HealthCheck) withDefaults() HealthCheck {
	if h.Interval <= 0 {
		h.Interval = DefaultHealthCheckInterval
	}
	if h.Timeout <= 0 {
		h.Timeout = DefaultHealthCheckTimeout
	}
	if h.Rise <= 0 {
		h.Rise = DefaultHealthCheckRise
	}
	if h.Fall <= 0 {
		h.Fall = DefaultHealthCheckFall
	}
	return h
}

// checkUpstreams refuses a list of upstream URLs the gateway cannot
// balance over: one that is not absolute, carries credentials or a
// query, a scheme or a path other than the first's, or comes twice.
// Every upstream gets the same request URL but for its host, and the
// same TLS settings and client certificate.
func checkUpstreams(ups []*url.URL) error {
	seen := map[string]bool{}
	for i, u := range ups {
		if u == nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("upstream %q is not an absolute http(s) URL, like https://127.0.0.1:6443", redacted(u))
		}
		if err := checkUpstreamURL(u); err != nil {
			return fmt.Errorf("upstream %q %w", u.Redacted(), err)
		}
		if i > 0 {
			if u.Scheme != ups[0].Scheme {
				return fmt.Errorf("upstream %q has another scheme than %q: every upstream is reached the same way", u.Redacted(), ups[0].Redacted())
			}
			if strings.TrimSuffix(u.EscapedPath(), "/") != strings.TrimSuffix(ups[0].EscapedPath(), "/") {
				return fmt.Errorf("upstream %q has another path than %q: every upstream must serve the API at the same path", u.Redacted(), ups[0].Redacted())
			}
		}
		if seen[u.Host] {
			return fmt.Errorf("upstream %q is given twice", u.Redacted())
		}
		seen[u.Host] = true
	}
	return nil
}

func redacted(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Redacted()
}

// member is one API server the gateway forwards to.
type member struct {
	url  *url.URL
	name string       // its host and port, the metrics label
	fast *h1.Upstream // its fast path pool; nil without a fast path

	healthy atomic.Bool
	mu      sync.Mutex
	passes  int // health checks passed in a row
	fails   int // health checks failed in a row
}

// upstreamSet is the gateway's upstreams and their health.
type upstreamSet struct {
	list []*member
	// balanced is true with several upstreams: only then are they
	// checked and ejected. A single upstream always gets every request,
	// so that it serves again from the first request after it returns.
	balanced bool
	turn     atomic.Uint32
	check    HealthCheck
	// probe GETs an upstream's /readyz as the gateway.
	probe func(ctx context.Context, u *member) error
	log   *slog.Logger
	m     *upstreamMetrics
}

// newUpstreamSet returns the set of ups, every one healthy, reached over
// rt (the health checks) and fast's pools, if any.
func newUpstreamSet(ups []*url.URL, rt http.RoundTripper, fast *FastPath, identity UpstreamIdentity, check HealthCheck, log *slog.Logger) (*upstreamSet, error) {
	if err := checkUpstreams(ups); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	s := &upstreamSet{balanced: len(ups) > 1, check: check.withDefaults(), log: log, m: newUpstreamMetrics()}
	for _, u := range ups {
		up := &member{url: u, name: u.Host}
		if fast != nil {
			if up.fast = fast.pools[u.Host]; up.fast == nil {
				return nil, fmt.Errorf("gateway: the fast path has no pool for upstream %q", u.Redacted())
			}
		}
		up.healthy.Store(true)
		s.m.healthy.WithLabelValues(up.name).Set(1)
		s.list = append(s.list, up)
	}
	asUser := ""
	if identity != ImpersonateIdentity {
		asUser = LookupUser
	}
	s.probe = func(ctx context.Context, u *member) error {
		return probeReadyz(ctx, rt, u.url.JoinPath("/readyz").String(), asUser)
	}
	return s, nil
}

// probeReadyz GETs url over rt as the gateway (asUser, when set, as
// X-Remote-User over the front-proxy certificate) and wants a 200.
func probeReadyz(ctx context.Context, rt http.RoundTripper, url, asUser string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if asUser != "" {
		req.Header.Set(authn.RemoteUserHeader, asUser)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("upstream unreachable: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("upstream /readyz answered %d", resp.StatusCode)
	}
	return nil
}

// pick returns the next healthy upstream not in tried, in turn; when every
// upstream not tried is out of rotation, the next of them, as one ejected
// for a failed connection may serve again before its health check says so
// (J.5); nil when all were tried.
func (s *upstreamSet) pick(tried []*member) *member {
	if !s.balanced {
		if len(tried) > 0 {
			return nil
		}
		return s.list[0]
	}
	n := uint32(len(s.list))
	start := s.turn.Add(1)
	var fallback *member
	for i := range n {
		u := s.list[(start+i)%n]
		if contains(tried, u) {
			continue
		}
		if u.healthy.Load() {
			return u
		}
		if fallback == nil {
			fallback = u
		}
	}
	return fallback
}

func contains(l []*member, u *member) bool {
	for _, x := range l {
		if x == u {
			return true
		}
	}
	return false
}

// anyHealthy reports whether some upstream may take requests.
func (s *upstreamSet) anyHealthy() bool {
	for _, u := range s.list {
		if u.healthy.Load() {
			return true
		}
	}
	return false
}

// Reasons an upstream is ejected, the metrics' reason label.
const (
	ejectConnection  = "connection"
	ejectHealthCheck = "health_check"
)

// eject takes u out of rotation until the health check readmits it.
func (s *upstreamSet) eject(u *member, reason string, err error) {
	if !s.balanced {
		return
	}
	u.mu.Lock()
	u.passes = 0
	u.mu.Unlock()
	if u.healthy.Swap(false) {
		s.m.healthy.WithLabelValues(u.name).Set(0)
		s.m.ejections.WithLabelValues(u.name, reason).Inc()
		s.log.Warn("upstream ejected", "upstream", u.name, "reason", reason, "error", err)
	}
}

// observe counts a health check of u, ejecting or readmitting it.
func (s *upstreamSet) observe(u *member, err error) {
	u.mu.Lock()
	if err != nil {
		u.passes, u.fails = 0, u.fails+1
	} else {
		u.passes, u.fails = u.passes+1, 0
	}
	passes, fails := u.passes, u.fails
	u.mu.Unlock()
	switch {
	case err != nil && fails >= s.check.Fall:
		s.eject(u, ejectHealthCheck, err)
	case err == nil && passes >= s.check.Rise && !u.healthy.Load():
		if !u.healthy.Swap(true) {
			s.m.healthy.WithLabelValues(u.name).Set(1)
			s.log.Info("upstream readmitted", "upstream", u.name, "checks", passes)
		}
	}
}

// start checks every upstream until stop is called, if the set is
// balanced.
func (s *upstreamSet) start() (stop func()) {
	if !s.balanced {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, u := range s.list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.checkLoop(ctx, u)
		}()
	}
	return func() { cancel(); wg.Wait() }
}

func (s *upstreamSet) checkLoop(ctx context.Context, u *member) {
	tick := time.NewTicker(s.check.Interval)
	defer tick.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, s.check.Timeout)
		err := s.probe(cctx, u)
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.observe(u, err)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// retryable reports whether a request that failed on an upstream may go
// to another: always when nothing was sent; after it was sent only for
// GET, HEAD and OPTIONS without a body or an upgrade, which cannot have
// changed anything.
func retryable(method string, sent, hasBody, upgrade bool) bool {
	if !sent {
		return true
	}
	if hasBody || upgrade {
		return false
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

// errNoUpstream is the error of a request no upstream was healthy for.
var errNoUpstream = errors.New("no upstream API server is healthy")

// forwardError is the error of a request that no upstream answered.
type forwardError struct {
	// sent says whether some upstream may have received the request.
	sent bool
	err  error // the last attempt's, or errNoUpstream
	// last is the upstream of the last failed attempt, and lastSent
	// whether it may have received the request.
	last     *member
	lastSent bool
}

func (e *forwardError) Error() string { return e.err.Error() }
func (e *forwardError) Unwrap() error { return e.err }

// failureBody returns the code and Status body of a request no upstream
// answered: 503 when none can have received it, 502 when one may have.
func failureBody(err error) (int, []byte) {
	var fe *forwardError
	if errors.As(err, &fe) && !fe.sent {
		return http.StatusServiceUnavailable, notSentBody
	}
	return http.StatusBadGateway, badGatewayBody
}

// balancedTransport sends each request to an upstream of set over rt,
// and again to another when the first failed and retryable allows it. A
// request with a body goes again only with a GetBody (readBody sets it)
// that gives the same bytes. Its errors are *forwardError.
type balancedTransport struct {
	set *upstreamSet
	rt  http.RoundTripper
}

func (t *balancedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	hasBody := r.Body != nil && r.Body != http.NoBody
	upgrade := r.Header.Get("Upgrade") != ""
	var tried []*member
	var fe forwardError
	for {
		u := t.set.next(tried, &fe)
		if u == nil {
			return nil, &fe
		}
		if len(tried) > 0 && hasBody {
			body, err := r.GetBody()
			if err != nil {
				return nil, &fe
			}
			r.Body = body
		}
		tried = append(tried, u)
		var asked, connected atomic.Bool
		out := r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
			GetConn: func(string) { asked.Store(true) },
			GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
		}))
		out.URL = cloneURL(r.URL)
		out.URL.Scheme, out.URL.Host = u.url.Scheme, u.url.Host
		resp, err := t.rt.RoundTrip(out)
		if err == nil {
			return resp, nil
		}
		if r.Context().Err() != nil || !asked.Load() {
			// The client left, or the transport refused the request
			// before it looked for a connection: not the upstream's
			// fault.
			return nil, err
		}
		t.set.failed(u, &fe, connected.Load(), err)
		if !retryable(r.Method, fe.lastSent, hasBody, upgrade) || (hasBody && r.GetBody == nil) {
			return nil, &fe
		}
	}
}

// next picks the upstream for a request's next attempt, counting a retry
// away from the one fe last failed on; nil when none is left.
func (s *upstreamSet) next(tried []*member, fe *forwardError) *member {
	u := s.pick(tried)
	switch {
	case u == nil && fe.err == nil:
		fe.err = errNoUpstream
	case u != nil && fe.last != nil:
		s.m.retries.WithLabelValues(fe.last.name, retryReason(fe.lastSent)).Inc()
	}
	return u
}

// failed records in fe an attempt that failed on u's connection, and
// ejects u.
func (s *upstreamSet) failed(u *member, fe *forwardError, sent bool, err error) {
	fe.sent = fe.sent || sent
	fe.last, fe.lastSent, fe.err = u, sent, err
	s.eject(u, ejectConnection, err)
}

func retryReason(sent bool) string {
	if sent {
		return "sent"
	}
	return "connection"
}

func cloneURL(u *url.URL) *url.URL {
	c := *u
	if u.User != nil {
		uu := *u.User
		c.User = &uu
	}
	return &c
}

// forwardFastTo forwards a fast path request (one that forward, a GET,
// HEAD or OPTIONS without a body, may send again) with send, to the
// upstreams in turn until one answers, an attempt fails in a way that
// forbids another, or none is left. It returns the last attempt's result;
// its Err is a *forwardError when no upstream answered.
func (g *Gateway) forwardFastTo(method string, send func(u *member) h1.Result) h1.Result {
	var tried []*member
	fe := &forwardError{}
	for {
		u := g.ups.next(tried, fe)
		if u == nil {
			return h1.Result{Err: fe}
		}
		tried = append(tried, u)
		res := send(u)
		var ue *h1.UpstreamError
		if res.Err == nil || res.Status != 0 || !errors.As(res.Err, &ue) {
			return res
		}
		g.ups.failed(u, fe, ue.Sent, ue.Err)
		if !retryable(method, ue.Sent, false, false) {
			res.Err = fe
			return res
		}
	}
}
