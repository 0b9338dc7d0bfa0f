package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/kubegate/kubegate/internal/benchcpu"
)

// result is the JSON line a run prints.
type result struct {
	Label          string            `json:"label,omitempty"`
	Scenario       string            `json:"scenario,omitempty"`
	URL            string            `json:"url"`
	Mode           string            `json:"mode"`
	Conns          int               `json:"conns"`
	Streams        int               `json:"streams"`
	HTTP2          bool              `json:"http2"`
	Curves         string            `json:"curves,omitempty"`
	Seconds        float64           `json:"seconds"`
	Requests       uint64            `json:"requests"`
	OK             uint64            `json:"ok"`
	Errors         uint64            `json:"errors"`
	WarmupRequests uint64            `json:"warmup_requests"`
	WarmupErrors   uint64            `json:"warmup_errors"`
	RPS            float64           `json:"rps"`
	P50us          float64           `json:"p50_us"`
	P90us          float64           `json:"p90_us"`
	P99us          float64           `json:"p99_us"`
	MaxUs          float64           `json:"max_us"`
	MeanUs         float64           `json:"mean_us"`
	ErrorKinds     map[string]uint64 `json:"error_kinds"`
	// CPUSeconds is the load generator's own CPU time (user and system)
	// over the whole run, warm-up included: the client's share of a
	// machine the system under test shares with it.
	CPUSeconds float64           `json:"cpu_seconds"`
	Tags       map[string]string `json:"tags,omitempty"`
}

// tally is one worker's accounting; workers merge theirs when done.
type tally struct {
	hist           histogram // latency of ok requests after the warm-up
	requests       uint64
	errors         uint64
	warmupRequests uint64
	warmupErrors   uint64
	kinds          map[string]uint64
}

// add accounts one attempt that took d; warm says it started during the
// warm-up, and kind is "" for success or the kind of failure.
func (t *tally) add(warm bool, d time.Duration, kind string) {
	switch {
	case warm:
		t.warmupRequests++
	default:
		t.requests++
	}
	if kind == "" {
		if !warm {
			t.hist.record(d)
		}
		return
	}
	if warm {
		t.warmupErrors++
	} else {
		t.errors++
	}
	if t.kinds == nil {
		t.kinds = make(map[string]uint64)
	}
	t.kinds[kind]++
}

func (t *tally) merge(o *tally) {
	t.hist.merge(&o.hist)
	t.requests += o.requests
	t.errors += o.errors
	t.warmupRequests += o.warmupRequests
	t.warmupErrors += o.warmupErrors
	for k, v := range o.kinds {
		if t.kinds == nil {
			t.kinds = make(map[string]uint64)
		}
		t.kinds[k] += v
	}
}

// result summarises the tally over a measured window of elapsed.
func (t *tally) result(elapsed time.Duration) result {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	r := result{
		Seconds:        elapsed.Seconds(),
		Requests:       t.requests,
		OK:             t.hist.n,
		Errors:         t.errors,
		WarmupRequests: t.warmupRequests,
		WarmupErrors:   t.warmupErrors,
		P50us:          us(t.hist.quantile(0.50)),
		P90us:          us(t.hist.quantile(0.90)),
		P99us:          us(t.hist.quantile(0.99)),
		MaxUs:          us(time.Duration(t.hist.max)),
		MeanUs:         us(t.hist.mean()),
		ErrorKinds:     map[string]uint64{},
	}
	for k, v := range t.kinds {
		r.ErrorKinds[k] = v
	}
	if elapsed > 0 {
		r.RPS = float64(t.hist.n) / elapsed.Seconds()
	}
	return r
}

// firstErrors prints the first error of each kind to stderr, so a failing
// run says why without flooding the terminal.
type firstErrors struct {
	mu   sync.Mutex
	seen map[string]bool
	w    io.Writer
}

func (f *firstErrors) note(kind string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen[kind] {
		return
	}
	f.seen[kind] = true
	fmt.Fprintf(f.w, "loadgen: first %s error: %v\n", kind, err)
}

// run generates the load cfg describes and returns its accounting.
func run(cfg *config, stderr io.Writer) result {
	first := &firstErrors{seen: map[string]bool{}, w: stderr}
	start := time.Now()
	warmEnd := start.Add(cfg.warmup)
	stopAt := warmEnd.Add(cfg.duration)
	tallies := make([]tally, cfg.conns*cfg.streams)
	var wg sync.WaitGroup
	for c := range cfg.conns {
		w := newWorker(cfg, first)
		defer w.rt.CloseIdleConnections()
		for s := range cfg.streams {
			// Each stream sends its own request over the connection's
			// transport, one at a time.
			ws := *w
			trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { ws.conn = info.Conn }}
			ws.req = w.req.Clone(httptrace.WithClientTrace(w.req.Context(), trace))
			t := &tallies[c*cfg.streams+s]
			wg.Go(func() {
				for {
					begin := time.Now()
					if !begin.Before(stopAt) {
						return
					}
					kind := ws.do()
					t.add(begin.Before(warmEnd), time.Since(begin), kind)
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(warmEnd)
	var total tally
	for i := range tallies {
		total.merge(&tallies[i])
	}
	r := total.result(elapsed)
	r.CPUSeconds = benchcpu.Process().Seconds()
	r.Label, r.Scenario, r.URL, r.Conns, r.Streams, r.HTTP2, r.Curves = cfg.label, cfg.scenario, cfg.url.String(), cfg.conns, cfg.streams, cfg.http2, cfg.curveList
	r.Mode = "keepalive"
	if cfg.newConn {
		r.Mode = "newconn"
	}
	if len(cfg.tags) > 0 {
		r.Tags = map[string]string{}
		for _, kv := range cfg.tags {
			r.Tags[kv[0]] = kv[1]
		}
	}
	return r
}

// worker sends one request at a time over its connection's transport. A
// transport per connection, limited to one connection, makes -conns
// exactly the number of connections for HTTP/1.1 and HTTP/2 alike and
// keeps connections from contending on one pool; with -streams, that
// many workers share each HTTP/2 connection.
type worker struct {
	cfg   *config
	rt    *http.Transport
	req   *http.Request
	first *firstErrors
	conn  net.Conn // the connection of the latest request, from its trace
}

func newWorker(cfg *config, first *firstErrors) *worker {
	protocols := new(http.Protocols)
	switch {
	case !cfg.http2:
		protocols.SetHTTP1(true)
	case cfg.tls != nil:
		protocols.SetHTTP2(true)
	default:
		protocols.SetUnencryptedHTTP2(true)
	}
	rt := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: cfg.timeout}).DialContext,
		TLSClientConfig:       cfg.tls.Clone(), // HTTP/2 set-up writes to it
		TLSHandshakeTimeout:   cfg.timeout,
		ResponseHeaderTimeout: cfg.timeout,
		DisableKeepAlives:     cfg.newConn,
		DisableCompression:    true,
		MaxIdleConns:          1,
		MaxIdleConnsPerHost:   1,
		MaxConnsPerHost:       1,
		Protocols:             protocols,
	}
	req, err := http.NewRequest(http.MethodGet, cfg.url.String(), nil)
	if err != nil {
		panic(err) // cfg.url was parsed already
	}
	for _, kv := range cfg.headers {
		if http.CanonicalHeaderKey(kv[0]) == "Host" {
			req.Host = kv[1]
			continue
		}
		req.Header.Add(kv[0], kv[1])
	}
	return &worker{cfg: cfg, rt: rt, req: req, first: first}
}

// do sends one request and reads the whole answer. It returns "" on
// success or the kind of failure.
func (w *worker) do() string {
	// The request is reused: the transport neither keeps nor changes it
	// once the body below is closed.
	w.conn = nil
	resp, err := w.rt.RoundTrip(w.req)
	if err != nil {
		err = w.tlsCause(err)
		kind := classify(err)
		w.first.note(kind, err)
		return kind
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		kind := "body_" + classify(err)
		w.first.note(kind, err)
		return kind
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		kind := fmt.Sprintf("status_%d", resp.StatusCode)
		w.first.note(kind, fmt.Errorf("%s", resp.Status))
		return kind
	}
	for _, kv := range w.cfg.checks {
		got := resp.Header.Values(kv[0])
		if len(got) != 1 || got[0] != kv[1] {
			kind := "check_" + http.CanonicalHeaderKey(kv[0])
			w.first.note(kind, fmt.Errorf("response header %s: got %q, want %q", kv[0], got, kv[1]))
			return kind
		}
	}
	return ""
}

// tlsCause returns the TLS alert that closed the connection when err
// is only the symptom of it. A TLS 1.3 server refuses a client
// certificate after the client's handshake is done, so the alert
// arrives while the request is being written: net/http's read loop
// closes the connection on the alert, and whether RoundTrip reports
// the alert or the write to the closed connection is a race. The
// tls.Conn keeps the alert it read, and a read returns it again.
func (w *worker) tlsCause(err error) error {
	tc, ok := w.conn.(*tls.Conn)
	if !ok || !errors.Is(err, net.ErrClosed) {
		return err
	}
	var b [1]byte
	if _, rerr := tc.Read(b[:]); classify(rerr) == "tls" {
		return rerr
	}
	return err
}

// classify names the kind of a transport error.
func classify(err error) string {
	var (
		netErr     net.Error
		alert      tls.AlertError
		recordErr  tls.RecordHeaderError
		verifyErr  *tls.CertificateVerificationError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		opErr      *net.OpError
	)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "conn_refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "conn_reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken_pipe"
	case errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EMFILE):
		return "no_socket"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.As(err, &opErr) && (opErr.Op == "remote error" || opErr.Op == "local error"),
		errors.As(err, &alert), errors.As(err, &recordErr), errors.As(err, &verifyErr),
		errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidErr):
		return "tls"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	}
	return "other"
}
