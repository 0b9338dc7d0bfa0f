package gateway

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubegate/kubegate/internal/serving"
)

// UpstreamTransportOptions configure NewUpstreamTransport.
type UpstreamTransportOptions struct {
	// CAPEM verifies the upstream's serving certificate; nil means the
	// system roots.
	CAPEM []byte
	// CA, when set, verifies the upstream's serving certificate instead
	// of CAPEM, with the bundle as it is at each handshake: the upstream
	// may present a certificate of a new CA once the bundle holds it.
	CA *serving.CAPool
	// ClientCert is the gateway's client certificate to the upstream (the
	// front-proxy client in request-header mode); nil sends none.
	ClientCert *serving.KeyPair
	// MaxIdleConns is the idle pool size kept to the upstream; zero means
	// 1024, enough for every connection a busy gateway keeps open.
	MaxIdleConns int
	// MaxConns caps the upstream connections, idle, busy and being dialled,
	// that carry requests other than streams; a request that finds none
	// free waits for one, and leaves the queue if its client goes away.
	// Zero means DefaultMaxUpstreamConns.
	MaxConns int
	// MaxStreamConns caps the connections that carry streams: watches,
	// followed logs and upgrades (exec, attach, port-forward), each of
	// which holds its connection for as long as it runs. Zero means
	// DefaultMaxUpstreamStreamConns.
	MaxStreamConns int
	// DialContext opens TCP connections to the upstream; nil means a
	// net.Dialer with a 10 s timeout and 30 s keep-alives.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// defaultDialer opens the gateway's upstream TCP connections.
var defaultDialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}

// defaultMaxIdleConns is the idle pool kept to the upstream: enough for
// every connection a busy gateway keeps open.
const defaultMaxIdleConns = 1024

// upstreamTLSConfig returns the TLS client configuration o describes.
func upstreamTLSConfig(o UpstreamTransportOptions) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAPEM != nil && o.CA == nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(o.CAPEM) {
			return nil, fmt.Errorf("upstream CA: no PEM certificates found")
		}
		tc.RootCAs = pool
	}
	if o.ClientCert != nil {
		tc.GetClientCertificate = o.ClientCert.GetClientCertificate
	}
	return tc, nil
}

const (
	// DefaultMaxUpstreamConns is kube-apiserver's default in-flight
	// limit (400 reads and 200 writes): an API server so configured
	// answers 429 to more concurrent requests anyway.
	DefaultMaxUpstreamConns = 600
	// DefaultMaxUpstreamStreamConns bounds the watches and other streams
	// open through one gateway.
	DefaultMaxUpstreamStreamConns = 8192
)

// NewUpstreamTransport returns the HTTP/1.1 transport the gateway uses to
// reach its upstream. HTTP/1.1 is what lets SPDY and WebSocket upgrades
// (exec, attach, port-forward) pass through; the idle pool is sized so
// that keep-alive traffic never waits to open a new upstream connection.
//
// Requests go through net/http's Transport, which reads informational
// answers up to the final one, pools a connection only after its answer
// was read to the end, replays only requests that are safe to repeat,
// and keeps a dial that completes after its request was cancelled. The
// connection caps bound what a client can make the gateway dial, for
// instance by opening and at once resetting HTTP/2 streams.
func NewUpstreamTransport(o UpstreamTransportOptions) (http.RoundTripper, error) {
	tc, err := upstreamTLSConfig(o)
	if err != nil {
		return nil, err
	}
	o.MaxIdleConns = cmp.Or(o.MaxIdleConns, defaultMaxIdleConns)
	if o.DialContext == nil {
		o.DialContext = defaultDialer.DialContext
	}
	var dialTLS func(ctx context.Context, network, addr string) (net.Conn, error)
	if o.CA != nil {
		dialTLS = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialUpstreamTLS(ctx, o, tc, network, addr)
		}
	}
	newTransport := func(maxConns int) *http.Transport {
		return &http.Transport{
			DialTLSContext:        dialTLS,
			Proxy:                 nil, // never send cluster traffic through an environment proxy
			DialContext:           o.DialContext,
			TLSClientConfig:       tc,
			TLSHandshakeTimeout:   10 * time.Second,
			MaxIdleConns:          min(o.MaxIdleConns, maxConns),
			MaxIdleConnsPerHost:   min(o.MaxIdleConns, maxConns),
			MaxConnsPerHost:       maxConns,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
			ForceAttemptHTTP2:     false,
			// The answer reaches the client as the upstream encoded it:
			// the Transport neither asks for gzip nor decodes it.
			DisableCompression: true,
		}
	}
	t := &upstreamTransport{clientCert: o.ClientCert, newPools: func(cert *tls.Certificate) *upstreamPools {
		return &upstreamPools{
			cert:     cert,
			requests: newTransport(cmp.Or(o.MaxConns, DefaultMaxUpstreamConns)),
			streams:  newTransport(cmp.Or(o.MaxStreamConns, DefaultMaxUpstreamStreamConns)),
		}
	}}
	t.cur.Store(t.newPools(t.certificate()))
	return t, nil
}

// upstreamTransport sends streams and other requests over separate
// connection pools, so that long-running streams filling their cap never
// hold up ordinary requests.
//
// When the client certificate file is replaced (a renewal, or a CA
// rotation, docs/kubernetes-behaviour.md H.6), later requests go over new
// pools, so that each presents the new certificate: the upstream checks
// it on every request, and would refuse the old one once its CA is
// dropped. The old pools' connections finish what they carry and close
// when idle; until then the connection caps count both.
type upstreamTransport struct {
	clientCert *serving.KeyPair
	newPools   func(cert *tls.Certificate) *upstreamPools
	mu         sync.Mutex
	cur        atomic.Pointer[upstreamPools]
}

// upstreamPools are the connection pools of one client certificate.
type upstreamPools struct {
	cert              *tls.Certificate
	requests, streams *http.Transport
}

func (t *upstreamTransport) certificate() *tls.Certificate {
	if t.clientCert == nil {
		return nil
	}
	return t.clientCert.Certificate()
}

// pools returns the pools of the current client certificate.
func (t *upstreamTransport) pools() *upstreamPools {
	p, cert := t.cur.Load(), t.certificate()
	if p.cert == cert {
		return p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p = t.cur.Load(); p.cert != cert {
		old := p
		p = t.newPools(cert)
		t.cur.Store(p)
		old.requests.CloseIdleConnections()
		old.streams.CloseIdleConnections()
	}
	return p
}

func (t *upstreamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p := t.pools()
	if isStream(req) {
		return p.streams.RoundTrip(req)
	}
	return p.requests.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of both pools.
func (t *upstreamTransport) CloseIdleConnections() {
	p := t.cur.Load()
	p.requests.CloseIdleConnections()
	p.streams.CloseIdleConnections()
}

// isStream reports whether req may hold its connection for long: an
// upgrade, or a stream by its URL (isStreamURL).
func isStream(req *http.Request) bool {
	return req.Header.Get("Upgrade") != "" || isStreamURL(req.URL)
}

// isStreamURL reports whether u asks for a stream: a watch, by the legacy
// /watch/ path or the watch parameter, or a followed log. The decoded
// path and query decide, so that no spelling hides one, and a parameter
// is on unless its first value is "0" or "false", as the API server reads
// it.
func isStreamURL(u *url.URL) bool {
	if strings.Contains(u.Path, "/watch/") {
		return true
	}
	if u.RawQuery == "" {
		return false
	}
	q := u.Query()
	for _, k := range []string{"watch", "follow"} {
		if vs := q[k]; len(vs) > 0 && vs[0] != "0" && !strings.EqualFold(vs[0], "false") {
			return true
		}
	}
	return false
}

// dialUpstreamTLS opens a TLS connection to addr that trusts o.CA's
// bundle as it is now, for a transport whose CA bundle is reloaded.
func dialUpstreamTLS(ctx context.Context, o UpstreamTransportOptions, tc *tls.Config, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // the transports' TLSHandshakeTimeout
	defer cancel()
	c, err := o.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cfg := tc.Clone()
	cfg.RootCAs = o.CA.Pool()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			c.Close()
			return nil, err
		}
		cfg.ServerName = host
	}
	tlsConn := tls.Client(c, cfg)
	if err := tlsConn.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return tlsConn, nil
}
