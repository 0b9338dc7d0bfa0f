package gateway

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/kubegate/kubegate/gateway/internal/h1"
	"github.com/kubegate/kubegate/gateway/internal/h2"
)

// FastPath is the fast path's pool of upstream connections. A Gateway
// configured with one (Config.FastPath) serves plain HTTP/1.1 requests
// with package gateway/internal/h1, which frames bytes and nothing else,
// instead of net/http's server and httputil.ReverseProxy; and it sends
// plain requests that arrive on HTTP/2 streams (framed by Go's HTTP/2
// server) over the same pool instead of through ReverseProxy and
// net/http's Transport. The same request policy (admit, outbound)
// decides every request, on every path. Bodies, upgrades, streams and
// anything unusual stay on ReverseProxy. The fast path needs an upstream URL with no path or
// query of its own and a network connection to it: kubegate up, which
// calls its API server in process, does without.
type FastPath struct {
	up    *h1.Upstream // the first upstream's pool
	host  string
	pools map[string]*h1.Upstream // by upstream host
	// HTTP2 serves HTTP/2 connections with package gateway/internal/h2,
	// which frames with golang.org/x/net/http2 and lets each stream's
	// handler write its own answer, instead of with Go's HTTP/2 server.
	// Every stream still goes through the gateway's handler. False (Go's
	// server) unless asked for: kubegate gateway sets it only with
	// --http2-fast-path, since Go's server is the one that gets Go's
	// HTTP/2 fixes.
	HTTP2 bool
}

// NewFastPath returns the fast path's pool for upstream, opening
// connections as o says (its TLS settings, client certificate and dialer)
// and keeping at most o.MaxIdleConns idle.
func NewFastPath(upstream *url.URL, o UpstreamTransportOptions) (*FastPath, error) {
	return NewFastPaths([]*url.URL{upstream}, o)
}

// NewFastPaths returns the fast path's pools for several upstreams (see
// Config.Upstreams), one each, as NewFastPath makes one.
func NewFastPaths(upstreams []*url.URL, o UpstreamTransportOptions) (*FastPath, error) {
	if len(upstreams) == 0 {
		return nil, errors.New("gateway: the HTTP/1.1 fast path needs an upstream")
	}
	f := &FastPath{pools: map[string]*h1.Upstream{}}
	for i, u := range upstreams {
		up, err := newFastPool(u, o)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			f.up, f.host = up, u.Host
		}
		f.pools[u.Host] = up
	}
	return f, nil
}

func newFastPool(upstream *url.URL, o UpstreamTransportOptions) (*h1.Upstream, error) {
	if upstream == nil || (upstream.Path != "" && upstream.Path != "/") || upstream.RawQuery != "" {
		return nil, errors.New("gateway: the HTTP/1.1 fast path needs an upstream URL without a path or query")
	}
	tc, err := upstreamTLSConfig(o)
	if err != nil {
		return nil, err
	}
	addr := upstream.Host
	if upstream.Port() == "" {
		addr = net.JoinHostPort(upstream.Hostname(), map[string]string{"https": "443", "http": "80"}[upstream.Scheme])
	}
	dialTCP := o.DialContext
	if dialTCP == nil {
		dialTCP = defaultDialer.DialContext
	}
	if upstream.Scheme == "https" {
		tc.NextProtos = []string{"http/1.1"}
		if tc.ServerName == "" {
			tc.ServerName = upstream.Hostname()
		}
	} else {
		tc = nil
	}
	dial := func(ctx context.Context) (net.Conn, error) {
		c, err := dialTCP(ctx, "tcp", addr)
		if err != nil || tc == nil {
			return c, err
		}
		cfg := tc
		if o.CA != nil {
			cfg = tc.Clone()
			cfg.RootCAs = o.CA.Pool() // the bundle as it is now
		}
		tlsConn := tls.Client(c, cfg)
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return tlsConn, nil
	}
	up := h1.NewUpstream(dial, cmp.Or(o.MaxIdleConns, defaultMaxIdleConns), cmp.Or(o.MaxConns, DefaultMaxUpstreamConns))
	if o.ClientCert != nil {
		// A replaced client certificate is presented from the next
		// request on (see upstreamTransport).
		up.Epoch = func() any { return o.ClientCert.Certificate() }
	}
	return up, nil
}

// CloseIdleConnections closes the pools' idle connections.
func (f *FastPath) CloseIdleConnections() {
	for _, p := range f.pools {
		p.CloseIdleConnections()
	}
}

// skipFast reports whether a request for u stays on net/http: the
// gateway's own endpoints, routed there, and streams, which net/http
// notices a client leaving.
func skipFast(u *url.URL) bool {
	return strings.HasPrefix(u.Path, "/kubegate/") || isStreamURL(u)
}

// serveFast renders the request policy for one request on the fast path,
// as authenticated and forward do on the net/http path.
func (g *Gateway) serveFast(x *h1.Exchange) {
	r := x.Request
	st := g.admit(r)
	if st.refusal != nil {
		x.Answer(st.refusal.code, st.id, st.refusal.body)
		g.record(st.refusal.code, r.Method, r.URL.Path, st)
		return
	}
	st.upstreamStart = time.Now()
	header := g.outbound(r.Header, r.RemoteAddr, st)
	res := g.forwardFastTo(r.Method, func(u *member) h1.Result {
		return x.ForwardTo(u.fast, u.url.Host, header, st.id)
	})
	if res.UpstreamStatus != 0 {
		st.upstreamStatus = res.UpstreamStatus
		g.metrics.observeUpstream(res.UpstreamStatus, res.UpstreamWait)
	}
	if res.Refusal != nil {
		st.reason = statusMessage(res.Refusal)
	}
	code := res.Status
	if res.Err != nil {
		st.err = res.Err
		if code == 0 {
			g.log.Error("upstream request failed", "requestID", st.id, "method", r.Method, "path", r.URL.Path, "error", res.Err)
			var body []byte
			code, body = failureBody(res.Err)
			x.Answer(code, st.id, body)
		}
	}
	g.record(code, r.Method, r.URL.Path, st)
}

// forwardFast sends an admitted HTTP/2 request that the fast path takes
// (h1.TakesStream) over the fast path's pool, as forward does through
// httputil.ReverseProxy.
func (g *Gateway) forwardFast(w http.ResponseWriter, r *http.Request, st *reqState) {
	st.upstreamStart = time.Now()
	header := g.outbound(r.Header, r.RemoteAddr, st)
	res := g.forwardFastTo(r.Method, func(u *member) h1.Result {
		return u.fast.ForwardStream(w, r, u.url.Host, header)
	})
	if res.UpstreamStatus != 0 {
		st.upstreamStatus = res.UpstreamStatus
		g.metrics.observeUpstream(res.UpstreamStatus, res.UpstreamWait)
	}
	if res.Refusal != nil {
		st.reason = statusMessage(res.Refusal)
	}
	switch {
	case res.Err == nil:
	case res.Status == 0:
		g.upstreamFailed(w, r, res.Err)
	default:
		// The answer broke off after its head: the stream is reset, as
		// httputil.ReverseProxy resets it, so that the client cannot
		// take a part for the whole.
		st.err = res.Err
		panic(http.ErrAbortHandler)
	}
}

// serve starts serving g on ln with srv's TLS configuration and limits.
// With a fast path configured, plain HTTP/1.1 requests take it and srv
// serves HTTP/2 (unless the fast path's HTTP2 gives it to
// gateway/internal/h2) and everything else; otherwise srv serves
// everything. The
// returned channel reports a server that stopped; shutdown stops both
// gracefully.
func serve(g *Gateway, srv *http.Server, ln net.Listener) (<-chan error, func(context.Context) error) {
	errc := make(chan error, 2)
	if g.cfg.FastPath == nil {
		go func() { errc <- srv.ServeTLS(ln, "", "") }()
		return errc, srv.Shutdown
	}
	o := h1.Options{
		Handler: g.serveFast, Upstream: g.cfg.FastPath.up, UpstreamHost: g.cfg.FastPath.host,
		HTTP: srv, Skip: skipFast, Logger: g.log,
	}
	var h2s *h2.Server
	if g.cfg.FastPath.HTTP2 {
		h2s = &h2.Server{HTTP: srv, Logger: g.log}
		o.HTTP2 = h2s.ServeConn
	}
	fs := h1.NewServer(o, ln.Addr())
	go func() { errc <- srv.Serve(fs.Handoff()) }()
	go func() { errc <- fs.Serve(ln) }()
	return errc, func(ctx context.Context) error {
		_ = ln.Close()
		var err error
		if h2s != nil {
			err = h2s.Shutdown(ctx)
		}
		return errors.Join(err, fs.Shutdown(ctx), srv.Shutdown(ctx))
	}
}
