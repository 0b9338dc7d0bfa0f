package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// inlineTransport is an HTTP/1.1 round tripper for one upstream that does
// the whole exchange on the calling goroutine: it writes the request with
// net/http's Request.Write and reads the answer with http.ReadResponse on
// a pooled keep-alive connection. http.Transport hands every request to a
// writer and a reader goroutine per connection; on a proxy's hot path
// those hand-offs cost more CPU than the proxying itself. Requests that
// upgrade the connection (exec, attach, port-forward) go to fallback,
// which must be an http.Transport for the same upstream.
type inlineTransport struct {
	dial     func(ctx context.Context) (net.Conn, error)
	fallback http.RoundTripper

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

func newInlineTransport(addr string, tlsConfig *tls.Config, maxIdle int, fallback http.RoundTripper) *inlineTransport {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if tlsConfig != nil {
		tlsConfig = tlsClientConfig(tlsConfig, addr)
	}
	dial := func(ctx context.Context) (net.Conn, error) {
		c, err := d.DialContext(ctx, "tcp", addr)
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
	return &inlineTransport{dial: dial, fallback: fallback, max: maxIdle}
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
	if ci, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// RoundTrip sends req. A pooled connection that turns out to have been
// closed by the upstream is retried once on a new one when nothing of the
// answer was read and the request can be replayed.
func (t *inlineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Upgrade") != "" {
		return t.fallback.RoundTrip(req)
	}
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	for attempt := 0; ; attempt++ {
		c, reused := t.get(), true
		if c == nil {
			conn, err := t.dial(req.Context())
			if err != nil {
				return nil, err
			}
			c, reused = newInlineConn(conn), false
		}
		resp, err := t.exchange(c, req)
		if err == nil {
			return resp, nil
		}
		c.conn.Close()
		if !reused || attempt > 0 || !replayable || req.Context().Err() != nil {
			return nil, err
		}
		if req.GetBody != nil {
			if req.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
	}
}

func (t *inlineTransport) exchange(c *inlineConn, req *http.Request) (*http.Response, error) {
	// Cancelling the request interrupts a blocked read or write.
	stop := context.AfterFunc(req.Context(), func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	if err := req.Write(c.bw); err != nil {
		stop()
		return nil, err
	}
	if err := c.bw.Flush(); err != nil {
		stop()
		return nil, err
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		stop()
		return nil, err
	}
	resp.Body = &inlineBody{ReadCloser: resp.Body, t: t, c: c, stop: stop, reuse: !resp.Close && !req.Close}
	return resp, nil
}

// inlineBody returns its connection to the pool once the body has been
// read to the end, and closes it if the body is abandoned early.
type inlineBody struct {
	io.ReadCloser
	t     *inlineTransport
	c     *inlineConn
	stop  func() bool
	reuse bool
	done  bool
}

func (b *inlineBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.release(b.reuse)
	}
	return n, err
}

func (b *inlineBody) Close() error {
	if !b.done {
		b.release(false)
	}
	return nil
}

func (b *inlineBody) release(reuse bool) {
	b.done = true
	if !b.stop() || !reuse {
		// The deadline was (or may be) set by a cancellation, or the
		// answer asked to close: the connection cannot be reused.
		b.c.conn.Close()
		return
	}
	b.t.put(b.c)
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
