package h1

import (
	"bufio"
	"context"
	"net"
	"sync"
)

// Upstream is the fast path's pool of connections to one upstream, which
// it writes and reads itself on the client connection's goroutine. A
// connection goes back to the pool only when its answer was read to the
// exact end of its framing (see Exchange.Forward).
type Upstream struct {
	// Epoch, when set, names what connections are dialled with now (the
	// client certificate): a pooled connection of an earlier epoch is
	// closed rather than used again, so that once the certificate is
	// replaced every later request presents the new one.
	Epoch func() any

	dial  func(ctx context.Context) (net.Conn, error)
	slots chan struct{} // one per request in flight

	mu   sync.Mutex
	idle []*upstreamConn
	max  int
}

type upstreamConn struct {
	conn  net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	epoch any
}

func newUpstreamConn(conn net.Conn, epoch any) *upstreamConn {
	return &upstreamConn{conn: conn, br: bufio.NewReaderSize(conn, 16<<10), bw: bufio.NewWriterSize(conn, 8<<10), epoch: epoch}
}

func (t *Upstream) epoch() any {
	if t.Epoch == nil {
		return nil
	}
	return t.Epoch()
}

// NewUpstream returns a pool that opens connections with dial (TCP, and
// TLS if the upstream wants it), keeps at most maxIdle of them idle and
// uses at most maxBusy at once: a request that finds none free waits for
// one, or until its context ends. The cap bounds what clients can make
// the gateway dial, for instance by opening HTTP/2 streams and resetting
// them at once.
func NewUpstream(dial func(ctx context.Context) (net.Conn, error), maxIdle, maxBusy int) *Upstream {
	return &Upstream{dial: dial, max: maxIdle, slots: make(chan struct{}, maxBusy)}
}

func (t *Upstream) acquire(ctx context.Context) error {
	select {
	case t.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *Upstream) release() { <-t.slots }

func (t *Upstream) get() *upstreamConn {
	now := t.epoch()
	t.mu.Lock()
	var stale []*upstreamConn
	var c *upstreamConn
	for n := len(t.idle); n > 0 && c == nil; n-- {
		c = t.idle[n-1]
		t.idle = t.idle[:n-1]
		if c.epoch != now {
			stale, c = append(stale, c), nil
		}
	}
	t.mu.Unlock()
	for _, s := range stale {
		s.conn.Close()
	}
	return c
}

func (t *Upstream) put(c *upstreamConn) {
	stale := c.epoch != t.epoch()
	t.mu.Lock()
	if !stale && len(t.idle) < t.max {
		t.idle = append(t.idle, c)
		c = nil
	}
	t.mu.Unlock()
	if c != nil {
		c.conn.Close()
	}
}

// CloseIdleConnections closes every pooled connection.
func (t *Upstream) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, c := range idle {
		c.conn.Close()
	}
}
