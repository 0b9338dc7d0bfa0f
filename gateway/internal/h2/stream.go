package h2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// stream is one request and its answer.
type stream struct {
	c      *conn
	id     uint32
	ctx    context.Context
	cancel context.CancelFunc
	body   *requestBody

	// Under c.mu.
	sendWindow    int64
	recvWindow    int32
	recvUnsent    int32
	halfClosed    bool // the client sent END_STREAM
	closed        bool // forgotten: reset, or answered and half closed
	writeDeadline *time.Timer
	closeErr      error       // why writes fail once closed
	reset         atomic.Bool // closed: no frame may be written for it

	// The read goroutine's own.
	gotTrailers bool
	trailer     http.Header // request trailers, filled at the end
	reqTrailer  http.Header // the request's Trailer map, announced keys only
}

// remoteClosed reports whether the client may send no more on st.
func (st *stream) remoteClosed() bool {
	st.c.mu.Lock()
	defer st.c.mu.Unlock()
	return st.halfClosed || st.closed
}

func (c *conn) processHeaders(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	if id%2 != 1 {
		return connError(http2.ErrCodeProtocol)
	}
	c.mu.Lock()
	st := c.streams[id]
	c.mu.Unlock()
	if st != nil {
		if st.remoteClosed() {
			return streamError{id, http2.ErrCodeStreamClosed}
		}
		return c.processTrailers(st, f)
	}
	if id <= c.maxStreamID.Load() {
		return connError(http2.ErrCodeProtocol)
	}
	c.mu.Lock()
	if c.goingAway {
		// A GOAWAY has named the last stream taken: this one is not.
		c.mu.Unlock()
		return nil
	}
	c.maxStreamID.Store(id)
	c.mu.Unlock()
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	c.mu.Lock()
	open := len(c.streams)
	c.mu.Unlock()
	if open+1 > maxStreams {
		if c.unackedSettings == 0 {
			return streamError{id, http2.ErrCodeProtocol}
		}
		return streamError{id, http2.ErrCodeRefusedStream}
	}
	if f.HasPriority() && f.Priority.StreamDep == id {
		return streamError{id, http2.ErrCodeProtocol}
	}
	req, wantsContinue, err := c.newRequest(f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(c.ctx)
	st = &stream{c: c, id: id, ctx: ctx, cancel: cancel, recvWindow: streamRecvWindow, reqTrailer: req.Trailer}
	st.body = &requestBody{st: st, declared: req.ContentLength}
	st.body.cond.L = &st.body.mu
	if f.StreamEnded() {
		st.halfClosed = true
		st.body.err = io.EOF
		req.Body = http.NoBody
	} else {
		req.Body = st.body
	}
	if req.Trailer != nil {
		st.trailer = http.Header{}
	}
	c.mu.Lock()
	st.sendWindow = c.initialSendWindow
	c.streams[id] = st
	if d := c.s.HTTP.WriteTimeout; d > 0 {
		st.writeDeadline = time.AfterFunc(d, func() { c.resetStreamFor(st, http2.ErrCodeInternal, os.ErrDeadlineExceeded) })
	}
	c.mu.Unlock()
	if d := c.s.HTTP.ReadTimeout; d > 0 && !f.StreamEnded() {
		st.body.mu.Lock()
		st.body.deadline = time.AfterFunc(d, func() { st.body.closeWithError(fmt.Errorf("h2: request body: %w", os.ErrDeadlineExceeded)) })
		st.body.mu.Unlock()
	}
	st.body.needsContinue = wantsContinue

	handler := c.s.HTTP.Handler
	if f.Truncated {
		handler = http.HandlerFunc(headerListTooLong)
	} else if err := checkRequestHeaders(req.Header); err != nil {
		handler = badRequest(err)
	} else if req.RequestURI == "*" && req.Method == "OPTIONS" {
		handler = http.HandlerFunc(optionsStar)
	}
	return c.startHandler(pendingHandler{st, handler, req.WithContext(ctx)})
}

// pendingHandler is a stream's handler, waiting for a turn to run.
type pendingHandler struct {
	st      *stream
	handler http.Handler
	req     *http.Request
}

// startHandler runs p's handler, or queues it while as many handlers run
// as streams may be open: a client that resets streams as fast as it
// opens them (CVE-2023-44487) gets no more handlers running at once.
// Past four times as many waiting, the connection ends, as Go's server
// ends it.
func (c *conn) startHandler(p pendingHandler) error {
	c.mu.Lock()
	if c.handlers < maxStreams {
		c.handlers++
		c.mu.Unlock()
		go c.runHandler(p.st, p.handler, p.req)
		return nil
	}
	defer c.mu.Unlock()
	if len(c.queued) > 4*maxStreams {
		return connError(http2.ErrCodeEnhanceYourCalm)
	}
	c.queued = append(c.queued, p)
	return nil
}

// handlerDone notes that a handler returned, and starts queued handlers
// whose streams are still open.
func (c *conn) handlerDone() {
	var start, dropped []pendingHandler
	c.mu.Lock()
	c.handlers--
	i := 0
	for ; i < len(c.queued); i++ {
		p := c.queued[i]
		if c.streams[p.st.id] != p.st {
			// Reset while it waited: closeStream ended it, and the
			// window its body holds goes back.
			dropped = append(dropped, p)
			continue
		}
		if c.handlers >= maxStreams {
			break
		}
		c.handlers++
		start = append(start, p)
	}
	c.queued = c.queued[i:]
	if len(c.queued) == 0 {
		c.queued = nil
	}
	c.mu.Unlock()
	for _, p := range dropped {
		p.st.body.Close()
	}
	for _, p := range start {
		go c.runHandler(p.st, p.handler, p.req)
	}
}

// newRequest makes the request a HEADERS frame opens, and reports
// whether it waits for "100 Continue"; or it gives the stream error Go's
// server answers a malformed one with.
func (c *conn) newRequest(f *http2.MetaHeadersFrame) (*http.Request, bool, error) {
	id := f.StreamID
	method, scheme := f.PseudoValue("method"), f.PseudoValue("scheme")
	authority, path := f.PseudoValue("authority"), f.PseudoValue("path")
	protocol := f.PseudoValue("protocol")
	bad := streamError{id, http2.ErrCodeProtocol}
	if protocol != "" {
		// Extended CONNECT (RFC 8441) is not offered, as net/http's
		// server does not offer it.
		return nil, false, bad
	}
	if method == "CONNECT" {
		if protocol == "" && (path != "" || scheme != "" || authority == "") {
			return nil, false, bad
		}
	} else if method == "" || path == "" || (scheme != "https" && scheme != "http") {
		return nil, false, bad
	}
	header := make(http.Header, len(f.Fields))
	for _, hf := range f.RegularFields() {
		k := textproto.CanonicalMIMEHeaderKey(hf.Name)
		header[k] = append(header[k], hf.Value)
	}
	if authority == "" {
		authority = header.Get("Host")
	}
	if protocol != "" {
		header.Set(":protocol", protocol)
	}
	wantsContinue := httpguts.HeaderValuesContainsToken(header["Expect"], "100-continue")
	if wantsContinue {
		delete(header, "Expect")
	}
	if cookies := header["Cookie"]; len(cookies) > 1 {
		header["Cookie"] = []string{strings.Join(cookies, "; ")}
	}
	var trailer http.Header
	for _, v := range header["Trailer"] {
		for key := range strings.SplitSeq(v, ",") {
			switch key = textproto.CanonicalMIMEHeaderKey(textproto.TrimString(key)); key {
			case "Transfer-Encoding", "Trailer", "Content-Length":
			default:
				if trailer == nil {
					trailer = http.Header{}
				}
				trailer[key] = nil
			}
		}
	}
	delete(header, "Trailer")
	if strings.IndexByte(authority, '@') >= 0 && (scheme == "http" || scheme == "https") {
		return nil, false, bad
	}
	var u *url.URL
	requestURI := path
	if method == "CONNECT" && protocol == "" {
		u, requestURI = &url.URL{Host: authority}, authority
	} else {
		if path[0] != '/' && path != "*" {
			return nil, false, bad
		}
		var err error
		if u, err = url.ParseRequestURI(path); err != nil {
			return nil, false, bad
		}
	}
	req := &http.Request{
		Method: method, URL: u, Proto: "HTTP/2.0", ProtoMajor: 2, Header: header,
		Host: authority, RemoteAddr: c.remote, RequestURI: requestURI, TLS: c.state,
		Trailer: trailer,
	}
	bodyOpen := !f.StreamEnded()
	if cls, ok := header["Content-Length"]; ok {
		if n, err := strconv.ParseUint(cls[0], 10, 63); err == nil {
			req.ContentLength = int64(n)
		}
		if !bodyOpen && req.ContentLength != 0 {
			return nil, false, bad
		}
		for _, v := range cls[1:] {
			if v != cls[0] {
				return nil, false, bad
			}
		}
		header["Content-Length"] = cls[:1]
	} else if bodyOpen {
		req.ContentLength = -1
	}
	return req, wantsContinue && bodyOpen, nil
}

// processTrailers takes the request's trailers, which end the stream.
func (c *conn) processTrailers(st *stream, f *http2.MetaHeadersFrame) error {
	if st.gotTrailers {
		return connError(http2.ErrCodeProtocol)
	}
	st.gotTrailers = true
	if !f.StreamEnded() || len(f.PseudoFields()) > 0 || f.Truncated {
		return streamError{st.id, http2.ErrCodeProtocol}
	}
	if st.trailer != nil {
		for _, hf := range f.RegularFields() {
			k := textproto.CanonicalMIMEHeaderKey(hf.Name)
			if !httpguts.ValidTrailerHeader(k) {
				return streamError{st.id, http2.ErrCodeProtocol}
			}
			st.trailer[k] = append(st.trailer[k], hf.Value)
		}
	}
	c.endRemote(st)
	return nil
}

// connectionHeaders are HTTP/1.1's connection-specific headers, which
// HTTP/2 forbids.
var connectionHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade"}

// checkRequestHeaders refuses the HTTP/1.1 connection headers HTTP/2
// forbids, as Go's server does, with a 400.
func checkRequestHeaders(h http.Header) error {
	for _, k := range connectionHeaders {
		if _, ok := h[k]; ok {
			return fmt.Errorf("request header %q is not valid in HTTP/2", k)
		}
	}
	if te := h["Te"]; len(te) > 1 || len(te) == 1 && te[0] != "trailers" && te[0] != "" {
		return errors.New(`request header "TE" may only be "trailers" in HTTP/2`)
	}
	return nil
}

func badRequest(err error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintln(w, err.Error())
	})
}

func headerListTooLong(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusRequestHeaderFieldsTooLarge)
	io.WriteString(w, "<h1>HTTP Error 431</h1><p>Request Header Field(s) Too Large</p>")
}

// optionsStar answers "OPTIONS *" as net/http's server does.
func optionsStar(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "0")
	if r.ContentLength != 0 {
		io.Copy(io.Discard, io.LimitReader(r.Body, 256<<10))
	}
}

// runHandler runs handler for st's request, then ends the answer: whole
// if the handler returned, reset if it panicked.
func (c *conn) runHandler(st *stream, handler http.Handler, req *http.Request) {
	w := &responseWriter{st: st, req: req, header: http.Header{}, contentLength: -1}
	defer c.handlerDone()
	defer func() {
		st.cancel()
		st.body.Close()
		if e := recover(); e != nil {
			if e != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				c.log.Error("http2: panic serving", "remote", c.remote, "panic", fmt.Sprint(e), "stack", string(buf))
			}
			c.resetStream(st.id, http2.ErrCodeInternal)
			return
		}
		w.finish()
	}()
	handler.ServeHTTP(w, req)
}

// requestBody is a request's body: the DATA frames' bytes, buffered
// within the stream's window until the handler reads them.
type requestBody struct {
	st       *stream
	declared int64 // Content-Length; -1 when none
	received int64 // the read goroutine's own

	mu            sync.Mutex
	cond          sync.Cond
	buf           []byte
	err           error // after buf: io.EOF, or why the body broke off
	closed        bool  // the handler closed it
	deadline      *time.Timer
	needsContinue bool // send "100 Continue" at the first Read
}

// write adds p to the body; false if the handler has closed it.
func (b *requestBody) write(p []byte) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.err != nil {
		return false
	}
	b.buf = append(b.buf, p...)
	b.cond.Signal()
	return true
}

// closeWithError ends the body after what it holds, with err.
func (b *requestBody) closeWithError(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
		if err == io.EOF && b.st.trailer != nil {
			// The request's trailers are readable once the body ends.
			for k := range b.st.reqTrailer {
				b.st.reqTrailer[k] = b.st.trailer[k]
			}
		}
	}
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *requestBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.needsContinue {
		b.needsContinue = false
		b.mu.Unlock()
		c := b.st.c
		c.write(func() error {
			if b.st.reset.Load() {
				return nil
			}
			c.hbuf.Reset()
			c.henc.WriteField(hpack.HeaderField{Name: ":status", Value: "100"})
			return c.writeHeaderBlock(b.st.id, false)
		})
		b.mu.Lock()
	}
	for len(b.buf) == 0 && b.err == nil && !b.closed {
		b.cond.Wait()
	}
	if b.closed {
		b.mu.Unlock()
		return 0, errBodyClosed
	}
	if len(b.buf) == 0 {
		err := b.err
		b.mu.Unlock()
		return 0, err
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	if len(b.buf) == 0 {
		b.buf = nil
	}
	b.mu.Unlock()
	b.st.c.returnWindow(b.st, int32(n))
	return n, nil
}

// Close drops what the body holds and returns its window.
func (b *requestBody) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	unread := len(b.buf)
	b.buf = nil
	b.cond.Broadcast()
	b.mu.Unlock()
	b.st.c.returnWindow(nil, int32(unread))
	return nil
}

// responseWriter is a stream's http.ResponseWriter. Like Go's server's,
// it buffers up to 4 KiB of body, so that a small answer goes out as one
// HEADERS and one DATA frame, written and flushed together.
type responseWriter struct {
	st  *stream
	req *http.Request

	header        http.Header // the handler's
	snapHeader    http.Header // the header as it was at WriteHeader
	status        int         // the status written; 0 before
	sentHeader    bool        // the HEADERS frame has gone
	buf           []byte
	written       int64 // body bytes the handler wrote
	contentLength int64 // announced, -1 if none
	trailers      []string
	ended         bool // END_STREAM has gone
	err           error
}

func (w *responseWriter) Header() http.Header { return w.header }

// SetReadDeadline ends the request body with os.ErrDeadlineExceeded at
// t, as http.ResponseController expects; the zero time cancels it.
func (w *responseWriter) SetReadDeadline(t time.Time) error {
	b := w.st.body
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.deadline != nil {
		b.deadline.Stop()
		b.deadline = nil
	}
	if t.IsZero() {
		return nil
	}
	expire := func() { b.closeWithError(fmt.Errorf("h2: request body: %w", os.ErrDeadlineExceeded)) }
	if d := time.Until(t); d > 0 {
		b.deadline = time.AfterFunc(d, expire)
	} else {
		go expire()
	}
	return nil
}

// SetWriteDeadline resets the stream if its answer is not written by t;
// the zero time cancels it.
func (w *responseWriter) SetWriteDeadline(t time.Time) error {
	st := w.st
	st.c.mu.Lock()
	defer st.c.mu.Unlock()
	if st.writeDeadline != nil {
		st.writeDeadline.Stop()
		st.writeDeadline = nil
	}
	if t.IsZero() {
		return nil
	}
	st.writeDeadline = time.AfterFunc(max(0, time.Until(t)), func() { st.c.resetStreamFor(st, http2.ErrCodeInternal, os.ErrDeadlineExceeded) })
	return nil
}

// EnableFullDuplex has nothing to do: an HTTP/2 handler may always read
// the body while it writes.
func (w *responseWriter) EnableFullDuplex() error { return nil }

func (w *responseWriter) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if w.status != 0 {
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		// An informational answer goes out at once, with the header as
		// it is now; the final answer follows.
		_ = w.writeHeaders(code, w.header, false, "", "", nil, false)
		return
	}
	w.status = code
	w.snapHeader = w.header.Clone()
	for _, v := range w.snapHeader["Trailer"] {
		for k := range strings.SplitSeq(v, ",") {
			if k = textproto.TrimString(k); k != "" {
				w.declareTrailer(k)
			}
		}
	}
	if cl := w.snapHeader.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseUint(cl, 10, 63); err == nil {
			w.contentLength = int64(n)
		}
	}
}

func (w *responseWriter) declareTrailer(k string) {
	k = http.CanonicalHeaderKey(k)
	if !httpguts.ValidTrailerHeader(k) {
		return
	}
	for _, t := range w.trailers {
		if t == k {
			return
		}
	}
	w.trailers = append(w.trailers, k)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.err != nil {
		return 0, w.err
	}
	w.written += int64(len(p))
	if w.sentHeader && w.contentLength >= 0 && w.written > w.contentLength {
		return 0, errors.New("h2: handler wrote more than declared Content-Length")
	}
	if len(w.buf)+len(p) <= answerBuffer {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	if err := w.flush(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *responseWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// Flush sends the header and what the body holds.
func (w *responseWriter) Flush() { _ = w.FlushError() }

func (w *responseWriter) FlushError() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return w.err
	}
	return w.flush(nil)
}

// flush sends the HEADERS frame if it has not gone, then the buffered
// body and p.
func (w *responseWriter) flush(p []byte) error {
	data := w.buf
	if len(p) > 0 {
		data = append(data, p...)
	}
	w.buf = w.buf[:0]
	err := w.send(data, false)
	if err == nil && w.req.Method == http.MethodHead && len(p) > 0 {
		// As Go's server: the HEAD answer ended with its header, and
		// the body's bytes past the buffer count as a short write.
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = err
	}
	return err
}

// finish ends the answer after the handler returns.
func (w *responseWriter) finish() {
	if w.st.reset.Load() {
		return
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil && !w.ended {
		if !w.st.reset.Load() {
			w.st.c.resetStream(w.st.id, http2.ErrCodeInternal)
		}
		return
	}
	// Fields the handler set with the TrailerPrefix are trailers too.
	for k, vv := range w.header {
		if t, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			w.declareTrailer(t)
			w.header[http.CanonicalHeaderKey(t)] = vv
		}
	}
	slices.Sort(w.trailers)
	if w.ended {
		// A HEAD answer, ended with its header.
	} else if err := w.send(w.buf, true); err != nil {
		if !w.st.reset.Load() {
			w.st.c.resetStream(w.st.id, http2.ErrCodeInternal)
		}
		return
	}
	c := w.st.c
	c.mu.Lock()
	open := !w.st.halfClosed && !w.st.closed
	c.mu.Unlock()
	if open {
		// The client is still sending a body nobody will read.
		c.resetStream(w.st.id, http2.ErrCodeNo)
		return
	}
	c.closeStream(w.st, errStreamDone)
}

var errStreamDone = errors.New("h2: the stream is done")

// send writes the HEADERS frame if it has not gone, then data, then,
// when last, the end of the stream: trailers or END_STREAM.
func (w *responseWriter) send(data []byte, last bool) error {
	head := w.req.Method == http.MethodHead
	if !w.sentHeader {
		w.sentHeader = true
		h := w.snapHeader
		var clen, ctype string
		if cl := h.Get("Content-Length"); cl != "" {
			delete(h, "Content-Length")
			if _, err := strconv.ParseUint(cl, 10, 63); err == nil {
				clen = cl
			}
		}
		if _, ok := h["Content-Length"]; !ok && clen == "" && last && bodyAllowed(w.status) && (len(data) > 0 || !head) {
			clen = strconv.Itoa(len(data))
		}
		if _, ok := h["Content-Type"]; !ok && h.Get("Content-Encoding") == "" && bodyAllowed(w.status) && len(data) > 0 {
			ctype = http.DetectContentType(data)
		}
		if v, ok := h["Connection"]; ok {
			delete(h, "Connection")
			if len(v) > 0 && v[0] == "close" {
				w.st.c.startGoAway()
			}
		}
		end := (last && len(w.trailers) == 0 && len(data) == 0) || head
		// The body's first frame goes out with the header block, in one
		// write, when the windows allow it.
		var first []byte
		firstEnd := false
		if !end && len(data) > 0 {
			n := w.st.tryReserve(len(data))
			first, data = data[:n], data[n:]
			firstEnd = last && len(data) == 0 && !w.hasTrailerValues()
		}
		if err := w.writeHeaders(w.status, h, end, clen, ctype, first, firstEnd); err != nil {
			return err
		}
		w.ended = end || firstEnd
		if end || firstEnd {
			return nil
		}
		if len(data) == 0 && len(first) > 0 && !last {
			return nil
		}
	}
	if head {
		return nil
	}
	trailers := last && w.hasTrailerValues()
	if len(data) > 0 || (last && !trailers) {
		if err := w.st.writeData(data, last && !trailers); err != nil {
			return err
		}
	}
	w.ended = last
	if trailers {
		return w.writeTrailers()
	}
	return nil
}

func (w *responseWriter) hasTrailerValues() bool {
	for _, k := range w.trailers {
		if len(w.header[k]) > 0 {
			return true
		}
	}
	return false
}

// writeHeaders writes an answer's header block: status, then the
// fields HTTP/2 allows, lower-cased.
func (w *responseWriter) writeHeaders(status int, h http.Header, end bool, clen, ctype string, data []byte, dataEnd bool) error {
	c := w.st.c
	skipped := false
	err := c.write(func() error {
		if w.st.reset.Load() {
			// The stream is gone: nothing is encoded, so that the
			// encoder's table stays as the client's decoder has it.
			skipped = true
			return nil
		}
		c.hbuf.Reset()
		enc := c.henc
		enc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(status)})
		encodeFields(enc, h, nil)
		if ctype != "" {
			enc.WriteField(hpack.HeaderField{Name: "content-type", Value: ctype})
		}
		if clen != "" {
			enc.WriteField(hpack.HeaderField{Name: "content-length", Value: clen})
		}
		if _, ok := h["Date"]; !ok && status >= 200 {
			enc.WriteField(hpack.HeaderField{Name: "date", Value: nowDate()})
		}
		if err := c.writeHeaderBlock(w.st.id, end); err != nil || len(data) == 0 {
			return err
		}
		return c.wfr.WriteData(w.st.id, dataEnd, data)
	})
	if skipped {
		c.giveBack(len(data))
	}
	return err
}

func (w *responseWriter) writeTrailers() error {
	c := w.st.c
	return c.write(func() error {
		if w.st.reset.Load() {
			return nil
		}
		c.hbuf.Reset()
		encodeFields(c.henc, w.header, w.trailers)
		return c.writeHeaderBlock(w.st.id, true)
	})
}
