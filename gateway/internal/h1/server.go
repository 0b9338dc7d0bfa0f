// Package h1 is the gateway's HTTP/1.1 fast path: a server loop for TLS
// client connections and a client for pooled upstream connections that
// frame bytes and nothing else. It knows nothing of identities. For each
// request it takes, a Handler (the gateway's request policy) decides:
// it answers the request itself (Exchange.Answer), or gives the exact
// header set to send upstream (Exchange.Forward), and the fast path
// relays the upstream's answer.
//
// It takes only requests whose meaning is plain: HTTP/1.1, an
// origin-form target whose query a reverse proxy forwards unchanged, a
// method that is safe to send again (GET, HEAD, OPTIONS, TRACE), no
// body, no upgrade, no Expect, a single valid Host, no hop-by-hop header
// named in Connection, a head that fits 4 KiB, and no URL the Skip
// option refuses. At the first request that is anything else, the
// connection, with the bytes already read, goes to a net/http server for
// the rest of its life, so every unusual case keeps net/http's
// behaviour: its errors, header limits, HTTP/2, upgrades and streams.
// HTTP/2 connections go there at once.
//
// Served on this path or by net/http with httputil.ReverseProxy, a
// request must reach the upstream as the same request and its answer the
// client as the same answer; the gateway's differential tests hold the
// two to that.
package h1

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	readBuffer  = 4 << 10
	writeBuffer = 4 << 10
)

// Options configure a Server.
type Options struct {
	// Handler decides every request the fast path takes. Required.
	Handler func(*Exchange)
	// Upstream is the pool Exchange.Forward sends requests over, and
	// UpstreamHost the Host they carry; Exchange.ForwardTo names another.
	Upstream     *Upstream
	UpstreamHost string
	// HTTP serves every connection and request the fast path does not
	// take. Its TLSConfig, ReadHeaderTimeout (or ReadTimeout),
	// IdleTimeout and MaxHeaderBytes apply to the fast path too; its
	// handler sees the TLS state of connections handed over. Required.
	HTTP *http.Server
	// Skip, when set, refuses requests by their URL: they go to HTTP.
	Skip func(*url.URL) bool
	// Logger logs accept failures; nil means slog.Default().
	Logger *slog.Logger
	// HTTP2, when set, serves the connections whose TLS handshake chose
	// HTTP/2, instead of the net/http server; it returns when the
	// connection is done. Shutdown leaves those connections to it, and
	// waits for them.
	HTTP2 func(c net.Conn, state *tls.ConnectionState)
}

// Server accepts TLS connections and serves each on the fast path or
// hands it to the net/http server.
type Server struct {
	o       Options
	log     *slog.Logger
	handoff *chanListener

	headerTimeout, idleTimeout time.Duration
	maxHeaderBytes             int // as net/http's server counts them

	closing atomic.Bool
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// NewServer returns a Server for o, listening at addr. It wraps
// o.HTTP's ConnContext and Handler, so that requests on connections
// handed over still carry their TLS state.
func NewServer(o Options, addr net.Addr) *Server {
	srv := o.HTTP
	s := &Server{
		o: o, log: cmp.Or(o.Logger, slog.Default()),
		handoff:       newChanListener(addr),
		conns:         map[net.Conn]struct{}{},
		headerTimeout: cmp.Or(srv.ReadHeaderTimeout, srv.ReadTimeout, 10*time.Second),
	}
	s.idleTimeout = cmp.Or(srv.IdleTimeout, s.headerTimeout)
	// net/http allows 4096 bytes over MaxHeaderBytes.
	s.maxHeaderBytes = cmp.Or(srv.MaxHeaderBytes, http.DefaultMaxHeaderBytes) + 4096
	// Connections handed over after a TLS handshake are not *tls.Conn any
	// more; their TLS state travels in the connection's context.
	prev := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if prev != nil {
			ctx = prev(ctx, c)
		}
		if hc, ok := c.(*handoffConn); ok {
			ctx = context.WithValue(ctx, tlsStateKey{}, hc.state)
		}
		return ctx
	}
	h := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			r.TLS, _ = r.Context().Value(tlsStateKey{}).(*tls.ConnectionState)
		}
		h.ServeHTTP(w, r)
	})
	return s
}

type tlsStateKey struct{}

// Handoff is the listener the net/http server serves: connections arrive
// on it from Serve, through the TLS handshake.
func (s *Server) Handoff() net.Listener { return s.handoff }

// Serve accepts on ln until it is closed.
func (s *Server) Serve(ln net.Listener) error {
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.closing.Load() || errors.Is(err, net.ErrClosed) {
				return http.ErrServerClosed
			}
			// Out of file descriptors and the like: wait, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed; retrying", "error", err, "delay", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if !s.track(c, true) {
			c.Close()
			continue
		}
		s.wg.Add(1)
		go s.serveConn(c)
	}
}

func (s *Server) track(c net.Conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.conns, c)
		return true
	}
	if s.closing.Load() {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

// Shutdown stops the fast path's connections: idle ones at once, busy
// ones after their current answer. It waits until they are gone or ctx is
// done. The caller closes the listener and shuts the net/http server down.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.mu.Lock()
	for c := range s.conns {
		_ = c.SetReadDeadline(time.Unix(1, 0))
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

// conn is one client connection on the fast path.
type conn struct {
	s      *Server
	raw    net.Conn // the network connection, whose deadlines are set
	rw     net.Conn // the TLS connection over it
	state  *tls.ConnectionState
	remote string
	br     *bufio.Reader
	bw     *bufio.Writer
	req    request
	resp   response
	x      Exchange

	// Reused from request to request; see request.
	hreq   http.Request
	header http.Header
	values []string
}

func (s *Server) serveConn(raw net.Conn) {
	defer s.wg.Done()
	handedOff := false
	defer func() {
		s.track(raw, false)
		if !handedOff {
			raw.Close()
		}
	}()
	tc := tls.Server(raw, s.o.HTTP.TLSConfig)
	_ = raw.SetDeadline(time.Now().Add(s.headerTimeout))
	if err := tc.Handshake(); err != nil {
		return
	}
	_ = raw.SetDeadline(time.Time{})
	st := tc.ConnectionState()
	if st.NegotiatedProtocol == "h2" && s.o.HTTP2 != nil {
		s.track(raw, false)
		s.o.HTTP2(tc, &st)
		return
	}
	if st.NegotiatedProtocol != "" && st.NegotiatedProtocol != "http/1.1" {
		handedOff = s.handoff.give(tc)
		return
	}
	handedOff = s.ServeConn(raw, tc, &st)
}

// ServeConn serves one client connection whose TLS handshake is done:
// rw is the connection to read and write, raw the network connection
// under it, whose deadlines are set, and state rw's TLS state. It
// returns when the connection is done, or handed to the net/http server,
// which it reports. Serve calls it for every HTTP/1.1 connection;
// benchmarks call it with connections in memory.
func (s *Server) ServeConn(raw, rw net.Conn, state *tls.ConnectionState) (handedOff bool) {
	c := &conn{
		s: s, raw: raw, rw: rw, state: state, remote: raw.RemoteAddr().String(),
		br: bufio.NewReaderSize(rw, readBuffer),
		bw: bufio.NewWriterSize(rw, writeBuffer),
	}
	return c.serve()
}

// serve runs the request loop; it reports whether the connection went to
// net/http.
func (c *conn) serve() (handedOff bool) {
	// The first request's head must be whole within the header timeout
	// of the connection's start, as net/http's server requires. Later
	// requests may wait the idle timeout for their first byte, then have
	// the header timeout for the rest of their head. The idle deadline is
	// moved only when half of it has gone, which saves a timer update per
	// request: an idle connection closes after between half and all of
	// the idle timeout.
	first := true
	idleDeadline := time.Now().Add(c.s.headerTimeout)
	_ = c.raw.SetReadDeadline(idleDeadline)
	for ; ; first = false {
		if now := time.Now(); !first && idleDeadline.Sub(now) < c.s.idleTimeout/2 {
			idleDeadline = now.Add(c.s.idleTimeout)
			_ = c.raw.SetReadDeadline(idleDeadline)
		}
		if c.s.closing.Load() {
			return false
		}
		if _, err := c.br.Peek(1); err != nil {
			return false
		}
		p, _ := c.br.Peek(c.br.Buffered())
		n := bytes.Index(p, []byte("\r\n\r\n")) + 4
		if n < 4 {
			// The head is still arriving: it has the header timeout.
			if !first {
				_ = c.raw.SetReadDeadline(time.Now().Add(c.s.headerTimeout))
			}
			idleDeadline = time.Time{}
			var err error
			n, err = peekHead(c.br)
			switch {
			case errors.Is(err, errHeadTooLarge):
				return c.handOffLargeHead()
			case err != nil:
				return false
			}
		}
		p, _ = c.br.Peek(n)
		if parseRequestHead(string(p), &c.req) != nil || !c.plain() {
			return c.handOff()
		}
		_, _ = c.br.Discard(n)
		if !c.exchange() {
			return false
		}
	}
}

// handOff gives the connection, with whatever it has buffered, to
// net/http.
func (c *conn) handOff() bool {
	_ = c.raw.SetReadDeadline(time.Time{})
	return c.s.handoff.give(&handoffConn{Conn: c.rw, r: c.br, state: c.state})
}

// handOffLargeHead reads a head that outgrew the lean path's buffer to its
// end, under the header deadline already set, then gives the connection
// to net/http with the head read. net/http would otherwise start its own
// header timeout at the hand-off, giving a slow client up to twice the
// time. A head over net/http's limit is handed off at the limit, for
// net/http to refuse.
func (c *conn) handOffLargeHead() bool {
	var head []byte
	buf := make([]byte, readBuffer)
	for len(head) <= c.s.maxHeaderBytes {
		n, err := c.br.Read(buf)
		if err != nil {
			return false // the header timeout, or the client left
		}
		from := max(0, len(head)-3)
		head = append(head, buf[:n]...)
		if bytes.Contains(head[from:], []byte("\r\n\r\n")) {
			break
		}
	}
	_ = c.raw.SetReadDeadline(time.Time{})
	return c.s.handoff.give(&handoffConn{Conn: c.rw, r: io.MultiReader(bytes.NewReader(head), c.br), state: c.state})
}

// plain reports whether the parsed request is one the fast path takes,
// and parses its target into c.req.url.
func (c *conn) plain() bool { return c.req.plain(c.s.o.Skip) }

// plain reports whether r is a request the fast path takes, and parses
// its target into r.url; skip, when set, refuses URLs besides.
func (r *request) plain(skip func(*url.URL) bool) bool {
	if !idempotent(r.method) || parseTarget(r.target, &r.url) != nil || !plainQuery(r.url.RawQuery) {
		// Other methods go to net/http, whose Transport notices an
		// upstream closing an idle connection before a request is sent
		// on it, rather than after.
		return false
	}
	if skip != nil && skip(&r.url) {
		return false
	}
	hosts := 0
	for _, f := range r.fields {
		n := f.name
		switch {
		case strings.EqualFold(n, "Host"):
			if !validHost(f.value) {
				return false // net/http answers 400
			}
			hosts++
		case strings.EqualFold(n, "Content-Length"), strings.EqualFold(n, "Transfer-Encoding"),
			strings.EqualFold(n, "Upgrade"), strings.EqualFold(n, "Expect"):
			return false
		case strings.EqualFold(n, "Connection"):
			for tok := range strings.SplitSeq(f.value, ",") {
				tok = trimOWS(tok)
				if tok != "" && !strings.EqualFold(tok, "close") && !strings.EqualFold(tok, "keep-alive") {
					return false
				}
			}
		}
	}
	return hosts == 1
}

// plainQuery reports whether httputil.ReverseProxy forwards the query q
// as it is: it re-encodes one with a ';', a '%' not followed by two hex
// digits, or more than 10,000 parameters, dropping what it cannot parse.
func plainQuery(q string) bool {
	if strings.Count(q, "&") >= 10000 {
		return false
	}
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case ';':
			return false
		case '%':
			if i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2]) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// validHost reports whether h holds only the bytes net/http's server
// accepts in a Host header.
func validHost(h string) bool { return alnumOr(h, "!$%&'()*+,-.:;=[]_~") }

// wantsClose reports whether the client asked to close after this request.
func (r *request) wantsClose() bool {
	for _, f := range r.fields {
		if strings.EqualFold(f.name, "Connection") {
			for tok := range strings.SplitSeq(f.value, ",") {
				if strings.EqualFold(trimOWS(tok), "close") {
					return true
				}
			}
		}
	}
	return false
}

// request fills the connection's http.Request for the authenticator from
// the parsed head. The request, its header map and its value slices are
// reused for the next request: the authenticators read them only while
// they run, and every string in them points into the head, which is
// never reused.
func (c *conn) request() *http.Request {
	req := &c.req
	h := c.header
	if h == nil {
		h = make(http.Header, len(req.fields))
		c.header = h
	}
	clear(h)
	if cap(c.values) < len(req.fields) {
		c.values = make([]string, len(req.fields))
	}
	values := c.values[:len(req.fields)]
	host := ""
	for i, f := range req.fields {
		k := textproto.CanonicalMIMEHeaderKey(f.name)
		values[i] = f.value
		if old, ok := h[k]; ok {
			h[k] = append(old, f.value) // cap(old) is 1: a new array
		} else {
			h[k] = values[i : i+1 : i+1]
		}
		if k == "Host" {
			host = f.value
		}
	}
	c.hreq = http.Request{
		Method: req.method, URL: &req.url, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: http.NoBody, Host: host, RemoteAddr: c.remote, RequestURI: req.target, TLS: c.state,
	}
	return &c.hreq
}

// handoffConn is a TLS connection given to net/http after some of its
// bytes were read into r.
type handoffConn struct {
	net.Conn
	r     io.Reader
	state *tls.ConnectionState
}

func (c *handoffConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// chanListener is the net/http server's listener: connections arrive
// from the front, already through the TLS handshake.
type chanListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// give hands c to the net/http server; false if it has stopped.
func (l *chanListener) give(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }
