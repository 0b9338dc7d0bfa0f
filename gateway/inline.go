package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
)

// inlineTransport holds the lean path's pooled upstream connections
// (lean.go), which the lean path writes and reads itself on the client
// connection's goroutine. Every other request (bodies, HTTP/2 streams,
// upgrades, the gateway's own calls) goes through RoundTrip to next, an
// http.Transport for the same upstream: it reads informational answers
// up to the final one, reuses a connection only when the previous answer
// was read to its end, and replays a request only when that is safe.
type inlineTransport struct {
	dial func(ctx context.Context) (net.Conn, error)
	next http.RoundTripper

	mu   sync.Mutex
	idle []*inlineConn
	max  int
}

type inlineConn struct {
	conn net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
}

func newInlineConn(conn net.Conn) *inlineConn {
	return &inlineConn{conn: conn, br: bufio.NewReaderSize(conn, 16<<10), bw: bufio.NewWriterSize(conn, 8<<10)}
}

func newInlineTransport(addr string, dialTCP func(ctx context.Context, network, addr string) (net.Conn, error), tlsConfig *tls.Config, maxIdle int, next http.RoundTripper) *inlineTransport {
	if tlsConfig != nil {
		tlsConfig = tlsClientConfig(tlsConfig, addr)
	}
	dial := func(ctx context.Context) (net.Conn, error) {
		c, err := dialTCP(ctx, "tcp", addr)
		if err != nil || tlsConfig == nil {
			return rawIO(c), err
		}
		tc := tls.Client(rawIO(c), tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return tc, nil
	}
	return &inlineTransport{dial: dial, next: next, max: maxIdle}
}

func (t *inlineTransport) get() *inlineConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.idle); n > 0 {
		c := t.idle[n-1]
		t.idle = t.idle[:n-1]
		return c
	}
	return nil
}

func (t *inlineTransport) put(c *inlineConn) {
	t.mu.Lock()
	if len(t.idle) < t.max {
		t.idle = append(t.idle, c)
		c = nil
	}
	t.mu.Unlock()
	if c != nil {
		c.conn.Close()
	}
}

// CloseIdleConnections closes every pooled connection.
func (t *inlineTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, c := range idle {
		c.conn.Close()
	}
	if ci, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// RoundTrip sends req through the http.Transport.
func (t *inlineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.next.RoundTrip(req)
}

// tlsClientConfig returns c with ServerName set to addr's host when it is
// empty, as tls.Dialer does.
func tlsClientConfig(c *tls.Config, addr string) *tls.Config {
	if c.ServerName != "" {
		return c
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	c = c.Clone()
	c.ServerName = host
	return c
}
