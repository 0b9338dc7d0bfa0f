package gateway

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http/httpguts"
)

// The lean path serves ordinary HTTP/1.1 requests on TLS connections
// without net/http's server and without httputil.ReverseProxy: it reads
// the request head into one string, authenticates it, writes the scrubbed
// head with the identity headers straight into a pooled upstream
// connection and relays the answer, all on the connection's goroutine.
// On a keep-alive GET that is most of the gateway's CPU.
//
// It takes only requests whose meaning is plain: HTTP/1.1, origin-form
// target, no body, no upgrade, no Expect, a single Host, no hop-by-hop
// header named in Connection, a head that fits 4 KiB, and none of the
// gateway's own endpoints (/kubegate/…), watches or follows. At the
// first request that is anything else, the connection (with the bytes already read) goes to
// net/http for the rest of its life, so every unusual case keeps
// net/http's behaviour: its errors, header limits, HTTP/2, upgrades and
// streams that notice a client going away.

const (
	leanReadBuffer  = 4 << 10
	leanWriteBuffer = 4 << 10
)

// front accepts TLS connections and serves each on the lean path or hands
// it to the net/http server.
type front struct {
	g         *Gateway
	up        *inlineTransport
	upHost    string
	tlsConfig *tls.Config
	srv       *http.Server
	handoff   *chanListener

	headerTimeout, idleTimeout time.Duration
	maxHeaderBytes             int // as net/http's server counts them

	closing atomic.Bool
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// leanTransport returns g's upstream transport and whether g can serve on
// the lean path: the transport is the inline one and the upstream URL has
// no path or query of its own.
func leanTransport(g *Gateway) (*inlineTransport, bool) {
	t, ok := g.cfg.Transport.(*inlineTransport)
	u := g.cfg.Upstream
	return t, ok && (u.Path == "" || u.Path == "/") && u.RawQuery == ""
}

func newFront(g *Gateway, up *inlineTransport, srv *http.Server, addr net.Addr) *front {
	f := &front{
		g: g, up: up, upHost: g.cfg.Upstream.Host, tlsConfig: srv.TLSConfig, srv: srv,
		handoff:       newChanListener(addr),
		conns:         map[net.Conn]struct{}{},
		headerTimeout: cmp.Or(srv.ReadHeaderTimeout, srv.ReadTimeout, 10*time.Second),
	}
	f.idleTimeout = cmp.Or(srv.IdleTimeout, f.headerTimeout)
	// net/http allows 4096 bytes over MaxHeaderBytes.
	f.maxHeaderBytes = cmp.Or(srv.MaxHeaderBytes, http.DefaultMaxHeaderBytes) + 4096
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
	return f
}

type tlsStateKey struct{}

// serve accepts on ln until it is closed.
func (f *front) serve(ln net.Listener) error {
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if f.closing.Load() || errors.Is(err, net.ErrClosed) {
				return http.ErrServerClosed
			}
			// Out of file descriptors and the like: wait, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			f.g.log.Warn("accept failed; retrying", "error", err, "delay", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		c = rawIO(c)
		if !f.track(c, true) {
			c.Close()
			continue
		}
		f.wg.Add(1)
		go f.serveConn(c)
	}
}

func (f *front) track(c net.Conn, add bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !add {
		delete(f.conns, c)
		return true
	}
	if f.closing.Load() {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

// shutdown stops the lean connections: idle ones at once, busy ones after
// their current response. It waits until they are gone or ctx is done.
func (f *front) shutdown(ctx context.Context) error {
	f.closing.Store(true)
	f.mu.Lock()
	for c := range f.conns {
		_ = c.SetReadDeadline(time.Unix(1, 0))
	}
	f.mu.Unlock()
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		for c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		return ctx.Err()
	}
}

// leanConn is one client connection on the lean path.
type leanConn struct {
	f      *front
	raw    net.Conn
	tc     *tls.Conn
	state  *tls.ConnectionState
	remote string
	ip     string
	br     *bufio.Reader
	bw     *bufio.Writer
	req    h1Request
	resp   h1Response

	// Reused from request to request; see request.
	hreq   http.Request
	header http.Header
	values []string

	// The metrics of the last request, to skip the shared caches.
	counterKey       requestKey
	counter          prometheus.Counter
	upstreamCode     int
	upstreamObserver prometheus.Observer
}

func (f *front) serveConn(raw net.Conn) {
	defer f.wg.Done()
	handedOff := false
	defer func() {
		f.track(raw, false)
		if !handedOff {
			raw.Close()
		}
	}()
	tc := tls.Server(raw, f.tlsConfig)
	_ = raw.SetDeadline(time.Now().Add(f.headerTimeout))
	if err := tc.Handshake(); err != nil {
		return
	}
	_ = raw.SetDeadline(time.Time{})
	st := tc.ConnectionState()
	if st.NegotiatedProtocol != "" && st.NegotiatedProtocol != "http/1.1" {
		handedOff = f.handoff.give(tc)
		return
	}
	c := &leanConn{
		f: f, raw: raw, tc: tc, state: &st, remote: raw.RemoteAddr().String(),
		br: bufio.NewReaderSize(tc, leanReadBuffer),
		bw: bufio.NewWriterSize(tc, leanWriteBuffer),
	}
	c.ip, _, _ = net.SplitHostPort(c.remote)
	handedOff = c.serve()
}

// serve runs the request loop; it reports whether the connection went to
// net/http.
func (c *leanConn) serve() (handedOff bool) {
	// The first request's head must be whole within the header timeout
	// of the connection's start, as net/http's server requires. Later
	// requests may wait the idle timeout for their first byte, then have
	// the header timeout for the rest of their head. The idle deadline is
	// moved only when half of it has gone, which saves a timer update per
	// request: an idle connection closes after between half and all of
	// the idle timeout.
	first := true
	idleDeadline := time.Now().Add(c.f.headerTimeout)
	_ = c.raw.SetReadDeadline(idleDeadline)
	for ; ; first = false {
		if now := time.Now(); !first && idleDeadline.Sub(now) < c.f.idleTimeout/2 {
			idleDeadline = now.Add(c.f.idleTimeout)
			_ = c.raw.SetReadDeadline(idleDeadline)
		}
		if c.f.closing.Load() {
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
				_ = c.raw.SetReadDeadline(time.Now().Add(c.f.headerTimeout))
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
		if !c.f.g.serveLean(c) {
			return false
		}
	}
}

// handOff gives the connection, with whatever it has buffered, to
// net/http.
func (c *leanConn) handOff() bool {
	_ = c.raw.SetReadDeadline(time.Time{})
	return c.f.handoff.give(&handoffConn{Conn: c.tc, r: c.br, state: c.state})
}

// handOffLargeHead reads a head that outgrew the lean path's buffer to its
// end, under the header deadline already set, then gives the connection
// to net/http with the head read. net/http would otherwise start its own
// header timeout at the hand-off, giving a slow client up to twice the
// time. A head over net/http's limit is handed off at the limit, for
// net/http to refuse.
func (c *leanConn) handOffLargeHead() bool {
	var head []byte
	buf := make([]byte, leanReadBuffer)
	for len(head) <= c.f.maxHeaderBytes {
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
	return c.f.handoff.give(&handoffConn{Conn: c.tc, r: io.MultiReader(bytes.NewReader(head), c.br), state: c.state})
}

// plain reports whether the parsed request is one the lean path takes.
func (c *leanConn) plain() bool { return c.req.plain() }

// plain reports whether r is a request the lean path takes, and parses
// its target into r.url.
func (r *h1Request) plain() bool {
	if !idempotent(r.method) || parseTarget(r.target, &r.url) != nil || !plainQuery(r.url.RawQuery) {
		// Other methods go to net/http, whose Transport notices an
		// upstream closing an idle connection before a request is sent
		// on it, rather than after.
		return false
	}
	path, _, _ := strings.Cut(r.target, "?")
	if strings.HasPrefix(path, "/kubegate/") || isStreamURL(&r.url) {
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
func (r *h1Request) wantsClose() bool {
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

// serveLean renders the request policy for one request on the lean path,
// as authenticated and forward do on the net/http path. It reports
// whether the connection can serve another request.
func (g *Gateway) serveLean(c *leanConn) bool {
	r := c.request()
	st := g.admit(r)
	keep := !c.req.wantsClose()
	if st.refusal != nil {
		keep = c.writeStatus(st.refusal.code, st.refusal.body, st.id, keep)
		c.record(st.refusal.code, st)
		return keep
	}
	header := g.outbound(r.Header, c.remote, st)
	st.upstreamStart = time.Now()
	code, keep, err := g.relay(c, st, header, keep)
	if err != nil {
		st.err = err
		if code == 0 {
			g.log.Error("upstream request failed", "requestID", st.id, "method", c.req.method, "path", c.req.url.Path, "error", err)
			code = http.StatusBadGateway
			keep = c.writeStatus(code, badGatewayBody, st.id, keep)
		} else {
			keep = false
		}
	}
	c.record(code, st)
	return keep
}

// request fills the connection's http.Request for the authenticator from
// the parsed head. The request, its header map and its value slices are
// reused for the next request: the authenticators read them only while
// they run, and every string in them points into the head, which is
// never reused.
func (c *leanConn) request() *http.Request {
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

// first returns the first value of the header key, which must be in
// canonical form.
func first(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// record counts the finished request and writes its audit line, as
// Gateway.record does; the connection keeps the counter of its last
// request, which is the next one's too on a busy connection.
func (c *leanConn) record(code int, st *reqState) {
	g := c.f.g
	if code == 0 {
		code = http.StatusOK
	}
	k := requestKey{code, verbLabel(c.req.method), st.authenticator()}
	if c.counter == nil || k != c.counterKey {
		c.counterKey, c.counter = k, g.metrics.requestCounter(k)
	}
	c.counter.Inc()
	g.auditRequest(code, c.req.method, c.req.url.Path, st)
}

// relay sends the request upstream and the answer back. A zero code
// with an error means nothing reached the client; a non-zero code with an
// error means the answer broke off and the connection must close.
func (g *Gateway) relay(c *leanConn, st *reqState, header http.Header, keep bool) (code int, _ bool, err error) {
	t := c.f.up
	if err := validHeader(header); err != nil {
		return 0, keep, err
	}
	for {
		uc, reused := t.get(), true
		if uc == nil {
			conn, err := t.dial(context.Background())
			if err != nil {
				return 0, keep, err
			}
			uc, reused = newInlineConn(conn), false
		}
		writeUpstreamHead(uc.bw, &c.req, c.f.upHost, header)
		err = uc.bw.Flush()
		var n int
		if err == nil {
			n, err = peekHead(uc.br)
		}
		if err != nil {
			uc.conn.Close()
			// A pooled connection that the upstream had closed answers
			// nothing at all. The request is sent again, on the next
			// pooled connection or a new one, only if running it twice
			// does no harm, as net/http's Transport decides: the
			// upstream may have run it before closing. Each failed
			// connection is closed, so this ends at the latest on a new
			// connection.
			if reused && uc.br.Buffered() == 0 && idempotent(c.req.method) && !errors.Is(err, errHeadTooLarge) {
				continue
			}
			return 0, keep, err
		}
		head, _ := uc.br.Peek(n)
		if err := parseResponseHead(head, &c.resp); err != nil {
			uc.conn.Close()
			return 0, keep, err
		}
		resp := &c.resp
		st.upstreamStatus = resp.status
		if c.upstreamObserver == nil || resp.status != c.upstreamCode {
			c.upstreamCode, c.upstreamObserver = resp.status, g.metrics.upstreamObserver(resp.status)
		}
		c.upstreamObserver.Observe(time.Since(st.upstreamStart).Seconds())
		code, keep, err = c.relayResponse(uc, st, keep)
		// The connection goes back to the pool only when its answer was
		// read to the exact end of its framing and nothing followed it:
		// a byte left over would be taken for the start of the next
		// request's answer, which may be another user's.
		if err != nil || resp.close || uc.br.Buffered() != 0 {
			uc.conn.Close()
		} else {
			t.put(uc)
		}
		return code, keep, err
	}
}

// validHeader refuses a header set that net/http's Transport would not
// send, with its error.
func validHeader(h http.Header) error {
	for k, vs := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("net/http: invalid header field name %q", k)
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("net/http: invalid header field value for %q", k)
			}
		}
	}
	return nil
}

// writeUpstreamHead writes the request line for req, Host and header as
// net/http's Transport writes them: one User-Agent line at most, then
// every value but those of the headers the framing owns, trimmed.
// header must have passed validHeader.
func writeUpstreamHead(w *bufio.Writer, req *h1Request, host string, header http.Header) {
	w.WriteString(req.method)
	w.WriteByte(' ')
	w.WriteString(req.target)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	if ua := first(header, "User-Agent"); ua != "" {
		writeField(w, "User-Agent", textproto.TrimString(ua))
	}
	for k, vs := range header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		for _, v := range vs {
			writeField(w, k, textproto.TrimString(v))
		}
	}
	w.WriteString("\r\n")
}

// writeField writes one header line. Line breaks in a value become
// spaces, as net/http writes them, so no value can start a new header.
func writeField(w *bufio.Writer, name, value string) {
	w.WriteString(name)
	w.WriteString(": ")
	writeValue(w, value)
	w.WriteString("\r\n")
}

func writeValue(w *bufio.Writer, v string) {
	for {
		i := strings.IndexAny(v, "\r\n")
		if i < 0 {
			w.WriteString(v)
			return
		}
		w.WriteString(v[:i])
		w.WriteByte(' ')
		v = v[i+1:]
	}
}

// relayResponse copies the parsed upstream response head and its body to
// the client, flushing whenever it would otherwise wait for the upstream,
// so that streamed answers arrive as they are produced. It reports the
// status sent and whether the client connection can be reused.
func (c *leanConn) relayResponse(uc *inlineConn, st *reqState, keep bool) (int, bool, error) {
	resp := &c.resp
	for informational := 0; resp.status >= 100 && resp.status < 200; informational++ {
		if resp.status == http.StatusSwitchingProtocols {
			return 0, false, errors.New("upstream switched protocols without an upgrade request")
		}
		if informational == maxInformational {
			return 0, false, errors.New("upstream sent too many informational answers")
		}
		// An informational answer (103 Early Hints): pass it on and
		// read the final one.
		w := c.bw
		w.WriteString("HTTP/1.1 ")
		w.Write(resp.statusLine)
		w.WriteString("\r\n")
		for _, f := range resp.fields {
			writeFieldBytes(w, f[0], f[1])
		}
		w.WriteString("\r\n")
		_, _ = uc.br.Discard(len(resp.head))
		n, err := peekHeadFlushing(c.bw, uc.br)
		if err != nil {
			return resp.status, false, err
		}
		head, _ := uc.br.Peek(n)
		if err := parseResponseHead(head, resp); err != nil {
			return resp.status, false, err
		}
	}
	hasBody := !bodyless(c.req.method, resp.status)
	untilClose := hasBody && !resp.chunked && resp.contentLength < 0
	if untilClose {
		keep = false
		resp.close = true
	}
	w := c.bw
	w.WriteString("HTTP/1.1 ")
	w.Write(resp.statusLine)
	w.WriteString("\r\n")
	for _, f := range resp.fields {
		writeFieldBytes(w, f[0], f[1])
	}
	writeField(w, "X-Request-Id", st.id)
	switch {
	case resp.chunked && hasBody:
		w.WriteString("Transfer-Encoding: chunked\r\n")
	case !resp.chunked && resp.contentLength >= 0:
		w.WriteString("Content-Length: ")
		w.Write(strconv.AppendInt(w.AvailableBuffer(), resp.contentLength, 10))
		w.WriteString("\r\n")
	}
	if !keep {
		w.WriteString("Connection: close\r\n")
	}
	w.WriteString("\r\n")
	_, _ = uc.br.Discard(len(resp.head))
	status := resp.status
	var err error
	switch {
	case !hasBody:
	case resp.chunked:
		err = relayChunked(w, uc.br)
	case untilClose:
		err = relayN(w, uc.br, -1)
	default:
		err = relayN(w, uc.br, resp.contentLength)
	}
	if err == nil {
		err = w.Flush()
	}
	return status, keep, err
}

// maxInformational bounds the 1xx answers relayed before the final one,
// as net/http's Transport bounds them.
const maxInformational = 5

// idempotent reports whether a request with method may run twice with the
// effect of once, so that it can be sent again after a pooled connection
// failed.
func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

func writeFieldBytes(w *bufio.Writer, name, value []byte) {
	w.Write(name)
	w.WriteString(": ")
	w.Write(value)
	w.WriteString("\r\n")
}

// relayN copies n bytes (n < 0: until EOF) from src to dst, flushing dst
// before every read that would block.
func relayN(dst *bufio.Writer, src *bufio.Reader, n int64) error {
	for n != 0 {
		if src.Buffered() == 0 {
			if err := dst.Flush(); err != nil {
				return err
			}
			if _, err := src.Peek(1); err != nil {
				if n < 0 && errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
		k := src.Buffered()
		if n > 0 && int64(k) > n {
			k = int(n)
		}
		p, _ := src.Peek(k)
		if _, err := dst.Write(p); err != nil {
			return err
		}
		_, _ = src.Discard(k)
		if n > 0 {
			n -= int64(k)
		}
	}
	return nil
}

// relayChunked copies a chunked body, framing included, from src to dst,
// checking the framing so that the upstream connection stays in step.
func relayChunked(dst *bufio.Writer, src *bufio.Reader) error {
	for {
		line, err := readLineFlushing(dst, src)
		if err != nil {
			return err
		}
		sizeText, _, _ := bytes.Cut(line, []byte(";"))
		size, err := strconv.ParseInt(string(bytes.TrimSpace(sizeText)), 16, 64)
		if err != nil || size < 0 {
			return errors.New("upstream sent a malformed chunk size")
		}
		dst.Write(line)
		dst.WriteString("\r\n")
		if size == 0 {
			// Trailer fields, then the empty line.
			for {
				line, err := readLineFlushing(dst, src)
				if err != nil {
					return err
				}
				dst.Write(line)
				dst.WriteString("\r\n")
				if len(line) == 0 {
					return nil
				}
			}
		}
		if err := relayN(dst, src, size); err != nil {
			return err
		}
		if line, err := readLineFlushing(dst, src); err != nil || len(line) != 0 {
			return errors.New("upstream sent a malformed chunk")
		}
		dst.WriteString("\r\n")
	}
}

// readLineFlushing reads one CRLF-terminated line (without the CRLF),
// flushing dst first if the line has not fully arrived. The line is valid
// until src is read again.
func readLineFlushing(dst *bufio.Writer, src *bufio.Reader) ([]byte, error) {
	if p, _ := src.Peek(src.Buffered()); bytes.IndexByte(p, '\n') < 0 {
		if err := dst.Flush(); err != nil {
			return nil, err
		}
	}
	line, err := src.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, errors.New("upstream sent a line without CRLF")
	}
	return line[:len(line)-2], nil
}

// peekHeadFlushing is peekHead, flushing dst before it waits.
func peekHeadFlushing(dst *bufio.Writer, src *bufio.Reader) (int, error) {
	if p, _ := src.Peek(src.Buffered()); !bytes.Contains(p, []byte("\r\n\r\n")) {
		if err := dst.Flush(); err != nil {
			return 0, err
		}
	}
	return peekHead(src)
}

// writeStatus answers with a ready-made Status body.
func (c *leanConn) writeStatus(code int, body []byte, id string, keep bool) bool {
	w := c.bw
	w.WriteString("HTTP/1.1 ")
	w.WriteString(strconv.Itoa(code))
	w.WriteByte(' ')
	w.WriteString(http.StatusText(code))
	w.WriteString("\r\nCache-Control: no-cache, private\r\nContent-Type: application/json\r\n")
	writeField(w, "X-Request-Id", id)
	writeField(w, "Date", time.Now().UTC().Format(http.TimeFormat))
	writeField(w, "Content-Length", strconv.Itoa(len(body)))
	if !keep {
		w.WriteString("Connection: close\r\n")
	}
	w.WriteString("\r\n")
	w.Write(body)
	return w.Flush() == nil && keep
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
