package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/internal/serving"
)

// errShuttingDown refuses in-process requests once the API server stops.
var errShuttingDown = errors.New("the API server is shutting down")

// inProcessBuffer is how much of a response is collected before it is
// handed to the caller as a stream; a handler that flushes (a watch) hands
// it over at once.
const inProcessBuffer = 32 << 10

// localRequests tracks the requests an API server serves in process, so
// that its shutdown can wait for them as it waits for its connections.
type localRequests struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
	// streams is the base of every request's context; ending it ends open
	// watches.
	streams    context.Context
	endStreams context.CancelFunc
}

func newLocalRequests() *localRequests {
	l := &localRequests{}
	l.streams, l.endStreams = context.WithCancel(context.Background())
	return l
}

// begin registers a request; it fails once close has been called.
func (l *localRequests) begin() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.wg.Add(1)
	return true
}

func (l *localRequests) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// wait waits for the registered requests to finish or ctx to end.
func (l *localRequests) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// inProcessTransport carries the gateway's requests to an API server in the
// same process by calling its handler, with no TLS or TCP in between. Each
// request arrives as if over the gateway's TLS connection: r.TLS holds the
// front-proxy client certificate chain, which the API server's
// request-header authenticator verifies against the front-proxy CA and the
// allowed names exactly as for a network request. Response bodies stream
// through a pipe once the handler flushes (watches arrive per event);
// cancelling the request or closing the body cancels the handler's
// context. Upgrade requests (exec, attach, port-forward) need a real
// connection and go to fallback.
type inProcessTransport struct {
	handler  http.Handler
	local    *localRequests
	cert     *serving.KeyPair // the front-proxy client certificate
	fallback http.RoundTripper
	// loopback: the requests are the server's own (apiserver.WithLoopback)
	// and present no certificate; cert and fallback are nil.
	loopback bool

	tls atomic.Pointer[peerState]
}

// peerState is the connection state presented for one certificate.
type peerState struct {
	cert  *tls.Certificate
	state *tls.ConnectionState
}

// connectionState returns the TLS state of a connection authenticated with
// the current front-proxy certificate, parsing it only when it changes.
func (t *inProcessTransport) connectionState() (*tls.ConnectionState, error) {
	cert := t.cert.Certificate()
	if p := t.tls.Load(); p != nil && p.cert == cert {
		return p.state, nil
	}
	chain := make([]*x509.Certificate, 0, len(cert.Certificate))
	for i, der := range cert.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("front-proxy client certificate %d: %w", i, err)
		}
		chain = append(chain, c)
	}
	if len(chain) == 0 {
		return nil, errors.New("front-proxy client certificate: no certificate")
	}
	st := &tls.ConnectionState{Version: tls.VersionTLS13, HandshakeComplete: true,
		NegotiatedProtocol: "http/1.1", PeerCertificates: chain}
	t.tls.Store(&peerState{cert: cert, state: st})
	return st, nil
}

// CloseIdleConnections closes the fallback's idle connections.
func (t *inProcessTransport) CloseIdleConnections() {
	if ci, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// RoundTrip serves req with the handler.
func (t *inProcessTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body := req.Body
	if body == nil {
		body = http.NoBody
	}
	if req.Header.Get("Upgrade") != "" {
		if t.fallback == nil {
			body.Close()
			return nil, errors.New("the API server's loopback client does not upgrade connections")
		}
		return t.fallback.RoundTrip(req)
	}
	var st *tls.ConnectionState
	if !t.loopback {
		var err error
		if st, err = t.connectionState(); err != nil {
			body.Close()
			return nil, err
		}
	}
	if !t.local.begin() {
		body.Close()
		return nil, errShuttingDown
	}
	ctx, cancel := context.WithCancel(req.Context())
	if t.loopback {
		ctx = apiserver.WithLoopback(ctx)
	}
	stopWithServer := context.AfterFunc(t.local.streams, cancel)
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	sreq := (&http.Request{
		Method:        req.Method,
		URL:           &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery},
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        req.Header.Clone(),
		Body:          body,
		ContentLength: req.ContentLength,
		Host:          host,
		RemoteAddr:    "127.0.0.1:0",
		RequestURI:    req.URL.RequestURI(),
		TLS:           st,
	}).WithContext(ctx)
	if sreq.Header == nil {
		sreq.Header = http.Header{}
	}
	w := &pipeWriter{header: http.Header{}, req: req, ready: make(chan struct{}), cancel: cancel}
	go func() {
		defer t.local.wg.Done()
		defer stopWithServer()
		defer body.Close()
		defer w.finish()
		t.handler.ServeHTTP(w, sreq)
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		w.abandon()
		return nil, context.Cause(req.Context())
	}
	if w.err != nil {
		return nil, w.err
	}
	return w.resp, nil
}

// pipeWriter is the handler's ResponseWriter. The response is collected
// until the handler returns, flushes or writes more than inProcessBuffer;
// then it is handed to RoundTrip (ready), and later writes go through a
// pipe to the caller's reads of the body.
type pipeWriter struct {
	header http.Header
	req    *http.Request
	cancel context.CancelFunc

	mu        sync.Mutex
	code      int // 0 until WriteHeader
	buf       bytes.Buffer
	handedOff bool
	abandoned bool
	pw        *io.PipeWriter
	ready     chan struct{} // closed once resp or err is set
	resp      *http.Response
	err       error
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.code != 0 || code < 200 {
		return // repeated, or informational: not forwarded
	}
	w.code = code
	w.resp = &http.Response{
		Status:     strconv.Itoa(code) + " " + http.StatusText(code),
		StatusCode: code,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     w.header.Clone(),
		Request:    w.req,
	}
	w.resp.Header.Del("Transfer-Encoding")
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.mu.Lock()
	if !w.handedOff {
		if w.abandoned {
			w.mu.Unlock()
			return 0, io.ErrClosedPipe
		}
		w.buf.Write(p)
		over := w.buf.Len() > inProcessBuffer
		w.mu.Unlock()
		if over {
			return len(p), w.handOff()
		}
		return len(p), nil
	}
	pw := w.pw
	w.mu.Unlock()
	return pw.Write(p)
}

// Flush hands the response over so that what was written reaches the
// caller now.
func (w *pipeWriter) Flush() {
	w.WriteHeader(http.StatusOK)
	_ = w.handOff()
}

// FlushError is Flush for http.ResponseController, reporting a caller that
// has gone away.
func (w *pipeWriter) FlushError() error {
	w.WriteHeader(http.StatusOK)
	return w.handOff()
}

// handOff gives RoundTrip a response whose body is a pipe, then writes
// what was collected into it. After the first call it does nothing.
func (w *pipeWriter) handOff() error {
	w.mu.Lock()
	if w.handedOff {
		w.mu.Unlock()
		return nil
	}
	if w.abandoned {
		w.mu.Unlock()
		return io.ErrClosedPipe
	}
	pr, pw := io.Pipe()
	w.handedOff, w.pw = true, pw
	w.resp.ContentLength = -1
	w.resp.Body = &pipeBody{PipeReader: pr, cancel: w.cancel}
	pending := bytes.Clone(w.buf.Bytes())
	w.buf = bytes.Buffer{}
	close(w.ready)
	w.mu.Unlock()
	if len(pending) > 0 {
		if _, err := pw.Write(pending); err != nil {
			return err
		}
	}
	return nil
}

// finish runs when the handler returns: a response not yet handed over is
// handed over whole, a streamed one is ended.
func (w *pipeWriter) finish() {
	// As with net/http, a handler that panics aborts its response; the
	// API server's own recovery filter has logged anything unexpected.
	p := recover()
	w.WriteHeader(http.StatusOK)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.handedOff {
		switch {
		case p != nil:
			w.pw.CloseWithError(fmt.Errorf("handler aborted the response: %v", p))
		case w.req.Context().Err() != nil:
			// The caller cancelled: its reads fail as over a connection.
			w.pw.CloseWithError(context.Cause(w.req.Context()))
		default:
			w.pw.Close()
		}
		w.cancel()
		return
	}
	w.cancel()
	if w.abandoned {
		return
	}
	if p != nil {
		w.err = fmt.Errorf("handler aborted the response: %v", p)
	} else {
		w.resp.ContentLength = int64(w.buf.Len())
		w.resp.Body = io.NopCloser(bytes.NewReader(w.buf.Bytes()))
	}
	close(w.ready)
}

// abandon is called when the caller stops waiting for the response.
func (w *pipeWriter) abandon() {
	w.mu.Lock()
	w.abandoned = true
	handedOff := w.handedOff
	w.mu.Unlock()
	w.cancel()
	if handedOff {
		// The response raced with the cancellation; nobody will read it.
		w.resp.Body.Close()
	}
}

// pipeBody is a streamed response body; closing it ends the handler's
// request.
type pipeBody struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b *pipeBody) Close() error {
	b.cancel()
	return b.PipeReader.Close()
}

// LoopbackConfig returns a client configuration for the server's own
// clients (kube-apiserver's loopback client): its requests are served by
// the handler in process, authenticated as apiserver.LoopbackUserName in
// system:masters, and refused once the server stops. Nothing leaves the
// process, so no credential exists that a remote client could replay.
func (s *Server) LoopbackConfig() *rest.Config {
	return &rest.Config{
		Host:      s.URL(),
		Transport: &inProcessTransport{handler: s.Server.Handler(), local: s.local, loopback: true},
		UserAgent: "kube-apiserver/loopback",
		QPS:       -1, // kube-apiserver's loopback client is not rate limited
	}
}
