package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Exchange is one request on the fast path, from its parsed head to the
// end of its answer. The handler calls Answer or Forward once.
type Exchange struct {
	// Request is the request as parsed: Method, URL, Proto, Header (with
	// canonical keys, Host included), Host, RemoteAddr, RequestURI and
	// TLS; its Body is empty. It and everything in it are reused for the
	// connection's next request: a handler must not keep them.
	Request *http.Request

	c    *conn
	keep bool // the client connection can serve another request
}

// Result is how a forwarded request ended.
type Result struct {
	// Status is the status of the answer the client got, or 0 when
	// nothing was written to it: Err then says why, and the handler
	// answers.
	Status int
	// UpstreamStatus is the status of the upstream's final answer, and
	// UpstreamWait the time from Forward's call to its head; 0 when the
	// upstream gave none.
	UpstreamStatus int
	UpstreamWait   time.Duration
	// Refusal is a copy of the body of an upstream's 403 answer framed
	// by a Content-Length of at most MaxRefusalBody bytes, for the
	// handler to report why; nil otherwise.
	Refusal []byte
	// Err is why the exchange failed, if it did. When Status is not 0,
	// the answer broke off and the connection closes.
	Err error
}

// exchange runs the handler on the request just parsed. It reports
// whether the connection can serve another request.
func (c *conn) exchange() bool {
	c.x = Exchange{Request: c.request(), c: c, keep: !c.req.wantsClose()}
	c.s.o.Handler(&c.x)
	return c.x.keep
}

// Forward sends the request over the server's own pool (Options.Upstream)
// with header, which must hold every header line to send but Host (the
// framing's own: Content-Length, Transfer-Encoding and Trailer are not
// sent), and relays the answer to the client, adding X-Request-Id: id. It
// writes the header as net/http's Transport does, and refuses one the
// Transport would refuse.
func (x *Exchange) Forward(header http.Header, id string) Result {
	return x.ForwardTo(x.c.s.o.Upstream, x.c.s.o.UpstreamHost, header, id)
}

// ForwardTo is Forward over the pool t, with Host: host. A Result with an
// UpstreamError and a zero Status leaves the exchange as it was: the
// handler may forward it again, over another pool.
func (x *Exchange) ForwardTo(t *Upstream, host string, header http.Header, id string) Result {
	start := time.Now()
	if err := validHeader(header); err != nil {
		return Result{Err: err}
	}
	code, upstream, err := x.c.relay(t, host, header, id, start)
	res := Result{Status: code, Err: err}
	if upstream != nil {
		res.UpstreamStatus, res.UpstreamWait, res.Refusal = upstream.status, upstream.wait, upstream.refusal
	}
	if err != nil && code != 0 {
		x.keep = false
	}
	return res
}

// relay sends the request upstream and the answer back. A zero code
// with an error means nothing reached the client; a non-zero code with an
// error means the answer broke off and the connection must close. The
// upstream's final answer, once it came, is described by the second
// result.
func (c *conn) relay(t *Upstream, host string, header http.Header, id string, start time.Time) (int, *upstreamAnswer, error) {
	req := upstreamRequest{method: c.req.method, target: c.req.target, host: host, header: header}
	var ans *upstreamAnswer
	code, err := t.roundTrip(context.Background(), &req, &c.resp, func(uc *upstreamConn) (int, error) {
		ans = &upstreamAnswer{wait: time.Since(start)}
		return c.relayResponse(uc, id, ans)
	})
	return code, ans, err
}

// upstreamRequest is what goes upstream: the request line's method and
// target, the Host, and every other header line.
type upstreamRequest struct {
	method, target, host string
	header               http.Header
}

// roundTrip sends req over a pooled connection or a new one, reads the
// head of the answer into resp, and calls relay to move the answer, from
// that head on, to the client. It returns relay's results, or a zero
// code with the error that kept any answer from coming: an
// *UpstreamError when the connection failed (see UpstreamError). When ctx
// ends, the upstream connection is closed, which ends the exchange.
func (t *Upstream) roundTrip(ctx context.Context, req *upstreamRequest, resp *response, relay func(*upstreamConn) (int, error)) (int, error) {
	if err := t.acquire(ctx); err != nil {
		return 0, err
	}
	defer t.release()
	sent := false
	for {
		uc, reused := t.get(), true
		if uc == nil {
			epoch := t.epoch() // before the handshake picks the certificate
			conn, err := t.dial(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return 0, ctx.Err()
				}
				return 0, &UpstreamError{Sent: sent, Err: err}
			}
			uc, reused = newUpstreamConn(conn, epoch), false
		}
		stop := noStop
		if ctx.Done() != nil {
			stop = context.AfterFunc(ctx, func() { uc.conn.Close() })
		}
		writeUpstreamHead(uc.bw, req)
		sent = true
		err := uc.bw.Flush()
		var n int
		if err == nil {
			n, err = peekHead(uc.br)
		}
		if err != nil {
			stop()
			uc.conn.Close()
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			// A pooled connection that the upstream had closed answers
			// nothing at all. The request is sent again, on the next
			// pooled connection or a new one, only if running it twice
			// does no harm, as net/http's Transport decides: the
			// upstream may have run it before closing. Each failed
			// connection is closed, so this ends at the latest on a new
			// connection.
			if reused && uc.br.Buffered() == 0 && idempotent(req.method) && !errors.Is(err, errHeadTooLarge) {
				continue
			}
			if errors.Is(err, errHeadTooLarge) {
				return 0, err // an answer, not a failed connection
			}
			return 0, &UpstreamError{Sent: true, Err: err}
		}
		head, _ := uc.br.Peek(n)
		if err := parseResponseHead(head, resp); err != nil {
			stop()
			uc.conn.Close()
			return 0, err
		}
		code, err := relay(uc)
		// The connection goes back to the pool only when its answer was
		// read to the exact end of its framing and nothing followed it:
		// a byte left over would be taken for the start of the next
		// request's answer, which may be another user's.
		if !stop() || err != nil || resp.close || uc.br.Buffered() != 0 {
			uc.conn.Close()
			if err == nil && ctx.Err() != nil {
				err = ctx.Err()
			}
		} else {
			t.put(uc)
		}
		return code, err
	}
}

// UpstreamError is the error of an exchange whose upstream connection
// failed before any answer came: the dial or the TLS handshake failed,
// or the connection broke or was closed before the head of an answer.
// Nothing reached the client.
type UpstreamError struct {
	// Sent says whether the request's head had been written to a
	// connection: false means the upstream cannot have seen the request.
	Sent bool
	Err  error
}

func (e *UpstreamError) Error() string { return e.Err.Error() }
func (e *UpstreamError) Unwrap() error { return e.Err }

// noStop stands for the AfterFunc of a context that never ends.
func noStop() bool { return true }

// upstreamAnswer describes the upstream's final answer.
type upstreamAnswer struct {
	status  int
	wait    time.Duration // until its first head
	refusal []byte        // a 403's body (Result.Refusal)
}

// MaxRefusalBody bounds the 403 bodies Result.Refusal copies: a
// Status is a few hundred bytes.
const MaxRefusalBody = 4 << 10

// keepRefusal copies the body of a 403 answer whose head resp holds and
// has been consumed from br, without consuming the body, which is
// relayed as it is. Other answers cost nothing. It must not be called
// for an answer without a body (to HEAD, say), whose Content-Length
// announces bytes that never come.
func keepRefusal(resp *response, br *bufio.Reader, ans *upstreamAnswer) {
	if resp.status != http.StatusForbidden || resp.chunked || resp.contentLength <= 0 || resp.contentLength > MaxRefusalBody {
		return
	}
	if b, err := br.Peek(int(resp.contentLength)); err == nil {
		ans.refusal = bytes.Clone(b)
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

// writeUpstreamHead writes the request line, Host and header of req as
// net/http's Transport writes them: one User-Agent line at most, then
// every value but those of the headers the framing owns, trimmed.
// req.header must have passed validHeader.
func writeUpstreamHead(w *bufio.Writer, req *upstreamRequest) {
	header := req.header
	w.WriteString(req.method)
	w.WriteByte(' ')
	w.WriteString(req.target)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(req.host)
	w.WriteString("\r\n")
	if ua := header.Get("User-Agent"); ua != "" {
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
// status sent, and marks the exchange not to keep the client connection
// when the answer's framing ends only with the upstream connection.
func (c *conn) relayResponse(uc *upstreamConn, id string, ans *upstreamAnswer) (int, error) {
	resp := &c.resp
	for informational := 0; resp.status >= 100 && resp.status < 200; informational++ {
		if resp.status == http.StatusSwitchingProtocols {
			return 0, errors.New("upstream switched protocols without an upgrade request")
		}
		if informational == maxInformational {
			return 0, errors.New("upstream sent too many informational answers")
		}
		// An informational answer (103 Early Hints): pass it on and
		// read the final one.
		w := c.bw
		writeStatusLine(w, resp.status)
		for _, f := range resp.fields {
			writeFieldBytes(w, f[0], f[1])
		}
		w.WriteString("\r\n")
		_, _ = uc.br.Discard(len(resp.head))
		n, err := peekHeadFlushing(c.bw, uc.br)
		if err != nil {
			return resp.status, err
		}
		head, _ := uc.br.Peek(n)
		if err := parseResponseHead(head, resp); err != nil {
			return resp.status, err
		}
	}
	ans.status = resp.status
	hasBody := !bodyless(c.req.method, resp.status)
	// A body that ends only when the upstream closes is sent chunked, as
	// net/http's server sends it: the client connection stays open.
	untilClose := hasBody && !resp.chunked && resp.contentLength < 0
	if untilClose {
		resp.close = true
	}
	w := c.bw
	writeStatusLine(w, resp.status)
	for _, f := range resp.fields {
		writeFieldBytes(w, f[0], f[1])
	}
	if !resp.date {
		writeField(w, "Date", time.Now().UTC().Format(http.TimeFormat))
	}
	writeField(w, "X-Request-Id", id)
	switch {
	case (resp.chunked || untilClose) && hasBody:
		w.WriteString("Transfer-Encoding: chunked\r\n")
	case !resp.chunked && resp.contentLength >= 0:
		w.WriteString("Content-Length: ")
		w.Write(strconv.AppendInt(w.AvailableBuffer(), resp.contentLength, 10))
		w.WriteString("\r\n")
	}
	if !c.x.keep {
		w.WriteString("Connection: close\r\n")
	}
	w.WriteString("\r\n")
	_, _ = uc.br.Discard(len(resp.head))
	if hasBody {
		keepRefusal(resp, uc.br, ans)
	}
	status := resp.status
	var err error
	switch {
	case !hasBody:
	case resp.chunked:
		err = relayChunked(w, uc.br)
	case untilClose:
		err = relayAsChunks(w, uc.br)
	default:
		err = relayN(w, uc.br, resp.contentLength)
	}
	if err == nil {
		err = w.Flush()
	}
	return status, err
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
	return copyN(dst, dst.Flush, src, n)
}

// copyN copies n bytes (n < 0: until src ends) from src to dst, calling
// flush before every read that would block.
func copyN(dst io.Writer, flush func() error, src *bufio.Reader, n int64) error {
	for n != 0 {
		if src.Buffered() == 0 {
			if err := flush(); err != nil {
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

// relayAsChunks copies src to dst as chunks until src ends, then ends
// the chunked body, flushing dst before every read that would block.
func relayAsChunks(dst *bufio.Writer, src *bufio.Reader) error {
	for {
		if src.Buffered() == 0 {
			if err := dst.Flush(); err != nil {
				return err
			}
			if _, err := src.Peek(1); err != nil {
				if errors.Is(err, io.EOF) {
					_, err = dst.WriteString("0\r\n\r\n")
					return err
				}
				return err
			}
		}
		p, _ := src.Peek(src.Buffered())
		dst.Write(strconv.AppendUint(dst.AvailableBuffer(), uint64(len(p)), 16))
		dst.WriteString("\r\n")
		dst.Write(p)
		if _, err := dst.WriteString("\r\n"); err != nil {
			return err
		}
		_, _ = src.Discard(len(p))
	}
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

// Answer answers the request without going upstream: code, a JSON
// body, and X-Request-Id: id, as the gateway's net/http path writes its
// own answers.
func (x *Exchange) Answer(code int, id string, body []byte) {
	w := x.c.bw
	writeStatusLine(w, code)
	w.WriteString("Cache-Control: no-cache, private\r\nContent-Type: application/json\r\n")
	writeField(w, "X-Request-Id", id)
	writeField(w, "Date", time.Now().UTC().Format(http.TimeFormat))
	writeField(w, "Content-Length", strconv.Itoa(len(body)))
	if !x.keep {
		w.WriteString("Connection: close\r\n")
	}
	w.WriteString("\r\n")
	if x.c.req.method != http.MethodHead {
		w.Write(body)
	}
	x.keep = w.Flush() == nil && x.keep
}

// writeStatusLine writes the status line as net/http's server does: the
// standard reason phrase, whatever the upstream's was.
func writeStatusLine(w *bufio.Writer, code int) {
	w.WriteString("HTTP/1.1 ")
	w.Write(strconv.AppendInt(w.AvailableBuffer(), int64(code), 10))
	w.WriteByte(' ')
	if text := http.StatusText(code); text != "" {
		w.WriteString(text)
	} else {
		w.WriteString("status code ")
		w.Write(strconv.AppendInt(w.AvailableBuffer(), int64(code), 10))
	}
	w.WriteString("\r\n")
}
