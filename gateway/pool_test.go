package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/kubegate/kubegate/internal/serving"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/tokenfile"
	authx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/internal/testpki"
)

// The tests in this file check that an upstream connection shared by many
// clients never hands one client's answer to another: the gateway pools
// upstream connections across identities, so a response read short or
// long (a 1xx taken for the final answer, a body left unread, bytes after
// the end) would shift every later answer on that connection to the wrong
// user. A scripted upstream answers each request in a chosen shape and
// names, in every answer, the user and the nonce it answered.

// answerKinds are the shapes the scripted upstream answers in; the request
// path /k/KIND picks one.
var answerKinds = []string{
	"plain",     // 200 with Content-Length
	"continue",  // 100 Continue (asked for or not), then 200
	"early",     // 103 Early Hints, then 200
	"both",      // 100, 103 and 103, then 200
	"chunked",   // 200 chunked, in several writes
	"empty",     // 204
	"unchanged", // 304
	"head",      // 200 to a HEAD: Content-Length but no body
	"slow",      // 200 whose body arrives in pieces
	"abort",     // 200 whose body breaks off: the connection closes
	"trailing",  // 200, then a forged second answer in the same write
}

// A request to /k/vanish is received, then the upstream closes the
// connection without answering, as one closing an idle connection at the
// moment a request arrives does.

// scriptedUpstream is an HTTP/1.1 server written on the wire, so that it
// can answer in shapes net/http's server never produces.
type scriptedUpstream struct {
	ln    net.Listener
	dials atomic.Int64 // connections accepted
	// impersonate says where the identity is: Impersonate-User instead
	// of X-Remote-User.
	impersonate bool

	mu       sync.Mutex
	receipts map[string]int // requests received, by nonce
	conns    map[net.Conn]struct{}
}

// closeAll closes every connection the upstream has open, as an upstream
// restarting or timing out its idle connections does.
func (u *scriptedUpstream) closeAll() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for c := range u.conns {
		c.Close()
	}
}

// received returns how many requests with nonce the upstream received.
func (u *scriptedUpstream) received(nonce string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.receipts[nonce]
}

func startScriptedUpstream(tb testing.TB, serving tls.Certificate, frontProxyCA *testpki.Cert, impersonate bool) *scriptedUpstream {
	tb.Helper()
	tc := &tls.Config{Certificates: []tls.Certificate{serving}, ClientCAs: frontProxyCA.Pool(), ClientAuth: tls.RequireAndVerifyClientCert}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", tc)
	if err != nil {
		tb.Fatal(err)
	}
	u := &scriptedUpstream{ln: ln, impersonate: impersonate, receipts: map[string]int{}, conns: map[net.Conn]struct{}{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.dials.Add(1)
			go u.serve(c)
		}
	}()
	tb.Cleanup(func() { ln.Close() })
	return u
}

// answerHeader names, in every answer, whom the upstream answered: the
// identity it was given and the request's nonce.
const answerHeader = "X-Answer"

func answerFor(user, nonce string) string { return user + "/" + nonce }

func answerBody(user, nonce, kind string) string {
	return fmt.Sprintf("answer for %s, nonce %s, kind %s", user, nonce, kind)
}

func (u *scriptedUpstream) serve(c net.Conn) {
	u.mu.Lock()
	u.conns[c] = struct{}{}
	u.mu.Unlock()
	defer func() {
		u.mu.Lock()
		delete(u.conns, c)
		u.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReader(c)
	for {
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		kind := strings.TrimPrefix(req.URL.Path, "/k/")
		if req.Header.Get("Expect") == "100-continue" && kind != "continue" && kind != "both" {
			io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		user := req.Header.Get("X-Remote-User")
		if u.impersonate {
			user = req.Header.Get("Impersonate-User")
		}
		nonce := req.URL.Query().Get("n")
		u.mu.Lock()
		u.receipts[nonce]++
		u.mu.Unlock()
		if kind == "vanish" {
			return // ran the request, then closed without an answer
		}
		who := answerHeader + ": " + answerFor(user, nonce) + "\r\n"
		body := answerBody(user, nonce, kind)
		final := "HTTP/1.1 200 OK\r\n" + who + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
		var err2 error
		write := func(s string) {
			if err2 == nil {
				_, err2 = io.WriteString(c, s)
			}
		}
		switch kind {
		case "continue":
			write("HTTP/1.1 100 Continue\r\n\r\n")
			write(final)
		case "early":
			write("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
			write(final)
		case "both":
			write("HTTP/1.1 100 Continue\r\n\r\n")
			write("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n")
			write("HTTP/1.1 103 Early Hints\r\nLink: </b.css>; rel=preload\r\n\r\n")
			write(final)
		case "chunked":
			write("HTTP/1.1 200 OK\r\n" + who + "Transfer-Encoding: chunked\r\n\r\n")
			half := len(body) / 2
			write(fmt.Sprintf("%x\r\n%s\r\n", half, body[:half]))
			time.Sleep(time.Millisecond)
			write(fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body)-half, body[half:]))
		case "empty":
			write("HTTP/1.1 204 No Content\r\n" + who + "\r\n")
		case "unchanged":
			write("HTTP/1.1 304 Not Modified\r\n" + who + "ETag: \"1\"\r\n\r\n")
		case "head":
			write("HTTP/1.1 200 OK\r\n" + who + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
		case "slow":
			write("HTTP/1.1 200 OK\r\n" + who + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
			for i := 0; i < len(body); i += 16 {
				time.Sleep(500 * time.Microsecond)
				write(body[i:min(i+16, len(body))])
			}
		case "abort":
			write("HTTP/1.1 200 OK\r\n" + who + "Content-Length: " + strconv.Itoa(len(body)+100) + "\r\n\r\n" + body)
			return
		case "trailing":
			forged := answerBody("mallory", "forged", "forged")
			write(final + "HTTP/1.1 200 OK\r\n" + answerHeader + ": " + answerFor("mallory", "forged") +
				"\r\nContent-Length: " + strconv.Itoa(len(forged)) + "\r\n\r\n" + forged)
		default:
			write(final)
		}
		if err2 != nil {
			return
		}
	}
}

// poolEnv is a gateway in front of a scripted upstream, with clients for
// several identities over each way in: the lean HTTP/1.1 path, net/http's
// HTTP/1.1 server (reached by requests with a body), and HTTP/2.
type poolEnv struct {
	up     *scriptedUpstream
	addr   string
	tlsCfg func(who string) *tls.Config
	h2     map[string]*http.Client
	nonce  atomic.Int64
}

// poolUsers are the identities clients take: two by certificate, two by
// token.
var poolUsers = []string{"alice", "bob", "carol", "dave"}

func newPoolEnv(tb testing.TB, identity UpstreamIdentity) *poolEnv {
	return newPoolEnvWith(tb, identity, UpstreamTransportOptions{})
}

// newPoolEnvWith is newPoolEnv with the upstream transport's limits in o.
func newPoolEnvWith(tb testing.TB, identity UpstreamIdentity, o UpstreamTransportOptions) *poolEnv {
	tb.Helper()
	clientCA := testpki.NewCA(tb, "kubernetes")
	frontProxyCA := testpki.NewCA(tb, "front-proxy-ca")
	serverCA := testpki.NewCA(tb, "server-ca")
	servingCert := func() tls.Certificate {
		c := serverCA.Issue(tb, testpki.Options{CN: "localhost", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, EKUs: []x509ExtKeyUsage{serverAuth}})
		pair, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
		if err != nil {
			tb.Fatal(err)
		}
		return pair
	}
	up := startScriptedUpstream(tb, servingCert(), frontProxyCA, identity == ImpersonateIdentity)

	dir := tb.TempDir()
	proxyCert, proxyKey := frontProxyCA.Issue(tb, testpki.Options{CN: "front-proxy-client"}).WriteFiles(tb, dir, "front-proxy-client")
	proxyPair, err := serving.LoadKeyPair(proxyCert, proxyKey)
	if err != nil {
		tb.Fatal(err)
	}
	upURL, _ := url.Parse("https://" + up.ln.Addr().String())
	o.CAPEM, o.ClientCert = serverCA.CertPEM, proxyPair
	rt, err := NewUpstreamTransport(o)
	if err != nil {
		tb.Fatal(err)
	}
	fast, err := NewFastPath(upURL, o)
	if err != nil {
		tb.Fatal(err)
	}
	x, err := authx509.New(clientCA.CertPEM, authx509.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tokens, _, err := tokenfile.Parse(strings.NewReader("token-bob,bob,uid-bob\ntoken-dave,dave,uid-dave\n"))
	if err != nil {
		tb.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := New(Config{
		Upstream:      upURL,
		Transport:     rt,
		FastPath:      fast,
		Authenticator: authn.New(authn.Config{X509: x, StaticTokens: []authn.Token{tokens}}),
		Identity:      identity,
		Logger:        quiet,
	})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{servingCert()}, ClientAuth: tls.RequestClientCert, NextProtos: []string{"h2", "http/1.1"}}
	_, shutdown := serve(g, serving.NewHTTPServer(g, tc, quiet), ln)

	certs := map[string]tls.Certificate{}
	for _, cn := range []string{"alice", "carol"} {
		c := clientCA.Issue(tb, testpki.Options{CN: cn})
		certs[cn], _ = tls.X509KeyPair(c.CertPEM, c.KeyPEM)
	}
	e := &poolEnv{up: up, addr: ln.Addr().String(), h2: map[string]*http.Client{}}
	e.tlsCfg = func(who string) *tls.Config {
		c := &tls.Config{RootCAs: serverCA.Pool()}
		if pair, ok := certs[who]; ok {
			c.Certificates = []tls.Certificate{pair}
		}
		return c
	}
	var transports []*http.Transport
	for _, who := range poolUsers {
		tr := &http.Transport{TLSClientConfig: e.tlsCfg(who), ForceAttemptHTTP2: true}
		transports = append(transports, tr)
		e.h2[who] = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	tb.Cleanup(func() {
		for _, tr := range transports {
			tr.CloseIdleConnections()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(ctx)
		rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	})
	return e
}

// authHeader is the credential line a raw client sends for who: a token,
// or nothing for the users who present certificates.
func authHeader(who string) string {
	if who == "bob" || who == "dave" {
		return "Authorization: Bearer token-" + who + "\r\n"
	}
	return ""
}

// rawClient is one HTTP/1.1 connection to the gateway, written by hand
// so that each request can take the lean path (no body) or go to
// net/http (a body, with or without Expect).
type rawClient struct {
	who  string
	conn *tls.Conn
	br   *bufio.Reader
}

func (e *poolEnv) dialRaw(who string) (*rawClient, error) {
	c := e.tlsCfg(who)
	c.NextProtos = []string{"http/1.1"}
	conn, err := tls.Dial("tcp", e.addr, c)
	if err != nil {
		return nil, err
	}
	return &rawClient{who: who, conn: conn, br: bufio.NewReader(conn)}, nil
}

// poolStep is one request: who sends it, the answer's shape, and how it
// travels from client to gateway.
type poolStep struct {
	who  string
	kind string
	via  string // "lean", "body", "expect" (raw HTTP/1.1) or "h2"
}

var poolVias = []string{"lean", "body", "expect", "h2"}

// result is what one client received; err is set when the exchange broke
// off, which only an aborted answer may cause.
type result struct {
	status int
	answer string
	body   string
	err    error
}

func (s poolStep) method() string {
	switch {
	case s.kind == "head":
		return http.MethodHead
	case s.via == "body" || s.via == "expect":
		return http.MethodPost
	}
	return http.MethodGet
}

// doRaw sends one request on rc and reads its answer, skipping
// informational ones.
func (rc *rawClient) do(s poolStep, nonce string) result {
	_ = rc.conn.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "%s /k/%s?n=%s HTTP/1.1\r\nHost: gw\r\n%s", s.method(), s.kind, nonce, authHeader(s.who))
	body := ""
	switch s.via {
	case "body":
		body = "hello"
		b.WriteString("Content-Type: text/plain\r\nContent-Length: 5\r\n")
	case "expect":
		body = "hello"
		b.WriteString("Content-Type: text/plain\r\nContent-Length: 5\r\nExpect: 100-continue\r\n")
	}
	b.WriteString("\r\n" + body)
	if _, err := io.WriteString(rc.conn, b.String()); err != nil {
		return result{err: err}
	}
	for {
		resp, err := http.ReadResponse(rc.br, &http.Request{Method: s.method()})
		if err != nil {
			return result{err: err}
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 {
			continue
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		return result{status: resp.StatusCode, answer: resp.Header.Get(answerHeader), body: string(got), err: err}
	}
}

func (e *poolEnv) doH2(s poolStep, nonce string) result {
	req, _ := http.NewRequest(s.method(), "https://"+e.addr+"/k/"+s.kind+"?n="+nonce, nil)
	if a := authHeader(s.who); a != "" {
		req.Header.Set("Authorization", strings.TrimSpace(strings.TrimPrefix(a, "Authorization:")))
	}
	resp, err := e.h2[s.who].Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	if resp.Proto != "HTTP/2.0" {
		return result{err: fmt.Errorf("answered over %s, not HTTP/2", resp.Proto)}
	}
	got, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, answer: resp.Header.Get(answerHeader), body: string(got), err: err}
}

// check reports what is wrong with r as the answer to s with nonce.
func (s poolStep) check(r result, nonce string) error {
	if r.err != nil {
		if s.kind == "abort" {
			return nil // the answer broke off, as the upstream's did
		}
		return fmt.Errorf("%s for %s via %s: %v", s.kind, s.who, s.via, r.err)
	}
	want := map[string]int{"empty": 204, "unchanged": 304}[s.kind]
	if want == 0 {
		want = 200
	}
	if s.kind == "abort" {
		// net/http may answer the break with a complete short body only
		// if it never sent a header; any answer must still be the
		// client's own.
		want = r.status
	}
	if r.status != want {
		return fmt.Errorf("%s for %s via %s: status %d, want %d (answer %q, body %q)", s.kind, s.who, s.via, r.status, want, r.answer, r.body)
	}
	if wantAnswer := answerFor(s.who, nonce); r.answer != wantAnswer {
		return fmt.Errorf("%s for %s via %s: got the answer for %q, want %q (body %q)", s.kind, s.who, s.via, r.answer, wantAnswer, r.body)
	}
	wantBody := answerBody(s.who, nonce, s.kind)
	switch s.kind {
	case "empty", "unchanged", "head":
		wantBody = ""
	case "abort":
		if !strings.HasPrefix(wantBody, r.body) {
			return fmt.Errorf("abort for %s via %s: body %q", s.who, s.via, r.body)
		}
		return nil
	}
	if r.body != wantBody {
		return fmt.Errorf("%s for %s via %s: body %q, want %q", s.kind, s.who, s.via, r.body, wantBody)
	}
	return nil
}

// run sends steps, each from its own client's connection, in order, and
// reports every answer that is not the client's own. Raw connections are
// kept per user and way in, and replaced when an exchange breaks off.
func (e *poolEnv) run(steps []poolStep) error {
	// Keyed by user and way in: a request with a body moves its
	// connection to net/http for good, so lean requests keep their own.
	raw := map[poolStep]*rawClient{}
	defer func() {
		for _, rc := range raw {
			rc.conn.Close()
		}
	}()
	var errs []error
	for _, s := range steps {
		nonce := strconv.FormatInt(e.nonce.Add(1), 10)
		var r result
		if s.via == "h2" {
			r = e.doH2(s, nonce)
		} else {
			key := poolStep{who: s.who, via: s.via}
			rc := raw[key]
			if rc == nil {
				var err error
				if rc, err = e.dialRaw(s.who); err != nil {
					return err
				}
				raw[key] = rc
			}
			r = rc.do(s, nonce)
			if r.err != nil {
				rc.conn.Close()
				delete(raw, key)
			}
		}
		if err := s.check(r, nonce); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// runConcurrently runs each client's steps on its own goroutine, so that
// the clients' requests interleave on the shared upstream pool.
func (e *poolEnv) runConcurrently(steps []poolStep) error {
	byUser := map[string][]poolStep{}
	for _, s := range steps {
		byUser[s.who] = append(byUser[s.who], s)
	}
	var wg sync.WaitGroup
	errc := make(chan error, len(byUser))
	for _, ss := range byUser {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- e.run(ss)
		}()
	}
	wg.Wait()
	close(errc)
	var errs []error
	for err := range errc {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// transportSafe leaves out of steps the answers that carry bytes after
// their end on the ways in served by net/http's Transport. The Transport
// closes a connection on which bytes arrive while it is idle, but a
// request handed the connection in the instant between its return to the
// pool and that check reads them as its answer, however the requests are
// scheduled. Only an upstream that breaks HTTP sends such bytes (Go's
// server, which kube-apiserver uses, never does); the lean path checks
// for them before it pools a connection, and keeps them in every
// schedule.
func transportSafe(steps []poolStep) []poolStep {
	var out []poolStep
	for _, s := range steps {
		if s.kind != "trailing" || s.via == "lean" {
			out = append(out, s)
		}
	}
	return out
}

// TestUpstreamPoolNeverCrossesAnswers sends every answer shape, from
// every way in, alternating identities, one request at a time, so that
// consecutive requests of different users share one pooled upstream
// connection; then the same requests concurrently. Every client must get
// only its own answer, in both upstream identity modes.
func TestUpstreamPoolNeverCrossesAnswers(t *testing.T) {
	for _, mode := range []UpstreamIdentity{RequestHeaderIdentity, ImpersonateIdentity} {
		t.Run(string(mode), func(t *testing.T) {
			e := newPoolEnv(t, mode)
			var steps []poolStep
			i := 0
			for v, via := range poolVias {
				for _, kind := range answerKinds {
					// Each shape is followed by plain requests of the next
					// users, the same way in and another, which would
					// receive whatever the shape left on the connection.
					steps = append(steps,
						poolStep{who: poolUsers[i%len(poolUsers)], kind: kind, via: via},
						poolStep{who: poolUsers[(i+1)%len(poolUsers)], kind: "plain", via: via},
						poolStep{who: poolUsers[(i+2)%len(poolUsers)], kind: "plain", via: poolVias[(v+1)%len(poolVias)]})
					i++
				}
			}
			if err := e.run(transportSafe(steps)); err != nil {
				t.Errorf("one request at a time:\n%v", err)
			}
			if err := e.runConcurrently(transportSafe(append(steps, steps...))); err != nil {
				t.Errorf("concurrently:\n%v", err)
			}
		})
	}
}

// FuzzUpstreamPoolInterleaving drives random sequences of clients,
// identities, ways in and upstream answer shapes through the gateway, in
// order or concurrently, and fails if any client receives an answer that
// is not its own.
func FuzzUpstreamPoolInterleaving(f *testing.F) {
	f.Add([]byte{0x00, 0x11, 0x22, 0x33, 0x44})
	f.Add([]byte{0x80, 0x01, 0x15, 0x29, 0x3d, 0x02, 0x16})
	f.Add([]byte{0x01, 0x0b, 0x1a, 0x2a, 0x3a, 0x07, 0x0c})
	f.Add([]byte{0x81, 0x09, 0x0a, 0x19, 0x1a, 0x29, 0x2a, 0x39, 0x3a})
	f.Add([]byte{0x02, 0x06, 0x07, 0x16, 0x17, 0x26, 0x27, 0x36})
	f.Add([]byte{0x83, 0x03, 0x13, 0x23, 0x33, 0x04, 0x14, 0x24, 0x34, 0x05, 0x15})
	envs := map[UpstreamIdentity]*poolEnv{
		RequestHeaderIdentity: newPoolEnv(f, RequestHeaderIdentity),
		ImpersonateIdentity:   newPoolEnv(f, ImpersonateIdentity),
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 || len(data) > 64 {
			return
		}
		// The first byte picks the mode and the schedule; each further
		// byte one request: bits 0-1 the user, 2-3 the way in, 4-7 the
		// answer shape.
		e := envs[RequestHeaderIdentity]
		if data[0]&1 == 1 {
			e = envs[ImpersonateIdentity]
		}
		concurrent := data[0]&0x80 != 0
		var steps []poolStep
		for _, b := range data[1:] {
			steps = append(steps, poolStep{
				who:  poolUsers[b&3],
				via:  poolVias[(b>>2)&3],
				kind: answerKinds[int(b>>4)%len(answerKinds)],
			})
		}
		run := e.run
		if concurrent {
			run = e.runConcurrently
		}
		if err := run(transportSafe(steps)); err != nil {
			t.Fatal(err)
		}
	})
}

// TestUpstreamRequestsReplayedOnlyWhenSafe sends requests on a pooled
// upstream connection that the upstream closes without answering. A
// request that may not run twice (DELETE, POST) must reach the upstream
// once, whichever way it comes in; a GET may be sent again on a new
// connection.
func TestUpstreamRequestsReplayedOnlyWhenSafe(t *testing.T) {
	e := newPoolEnv(t, RequestHeaderIdentity)
	steps := []struct {
		via, method string
		maxReceived int
	}{
		{"lean", http.MethodDelete, 1},
		{"lean", http.MethodPost, 1},
		{"h2", http.MethodDelete, 1},
		{"body", http.MethodPost, 1},
		// A GET may be sent again once per stale pooled connection, as
		// net/http's Transport sends it: how many are pooled depends on
		// the earlier steps' timing.
		{"lean", http.MethodGet, 8},
		{"h2", http.MethodGet, 8},
	}
	for _, s := range steps {
		// A first request leaves a connection in the pool.
		if err := e.run([]poolStep{{who: "alice", kind: "plain", via: s.via}}); err != nil {
			t.Fatal(err)
		}
		nonce := "vanish-" + strconv.FormatInt(e.nonce.Add(1), 10)
		status := e.send(t, s.via, s.method, "/k/vanish?n="+nonce)
		if got := e.up.received(nonce); got < 1 || got > s.maxReceived {
			t.Errorf("%s via %s: the upstream received it %d times, want 1 to %d", s.method, s.via, got, s.maxReceived)
		}
		if status != http.StatusBadGateway {
			t.Errorf("%s via %s: status %d, want 502", s.method, s.via, status)
		}
	}
}

// send makes one request as alice without a body (with an empty one via
// "body") and returns the status.
func (e *poolEnv) send(t *testing.T, via, method, target string) int {
	t.Helper()
	if via == "h2" {
		req, _ := http.NewRequest(method, "https://"+e.addr+target, nil)
		resp, err := e.h2["alice"].Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	rc, err := e.dialRaw("alice")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.conn.Close()
	body := ""
	if via == "body" {
		body = "Content-Length: 2\r\n\r\n{}"
	} else {
		body = "\r\n"
	}
	fmt.Fprintf(rc.conn, "%s %s HTTP/1.1\r\nHost: gw\r\n%s", method, target, body)
	resp, err := http.ReadResponse(rc.br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRapidResetDoesNotMultiplyUpstreamConnections opens many HTTP/2
// streams on one connection and resets each at once, to quick and to
// slow answers. Dials that complete after their request was cancelled
// serve the next requests, and the connections open at once never exceed
// the cap, however many streams were reset.
func TestRapidResetDoesNotMultiplyUpstreamConnections(t *testing.T) {
	for _, kind := range []string{"plain", "slow"} {
		t.Run(kind, func(t *testing.T) { rapidReset(t, kind) })
	}
}

func rapidReset(t *testing.T, kind string) {
	const maxConns = 4
	var open, peak atomic.Int64 // the gateway's upstream connections
	d := &net.Dialer{}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		n := open.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		return &countedConn{Conn: c, open: &open}, nil
	}
	e := newPoolEnvWith(t, RequestHeaderIdentity, UpstreamTransportOptions{MaxConns: maxConns, DialContext: dial})
	c := e.tlsCfg("bob")
	c.NextProtos = []string{"h2"}
	conn, err := tls.Dial("tcp", e.addr, c)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	// Read and discard whatever the gateway sends, so that it never
	// blocks writing.
	var goaway atomic.Value
	pongs := make(chan struct{}, 1)
	go func() {
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.GoAwayFrame:
				goaway.Store(fmt.Sprintf("GOAWAY %v after stream %d", f.ErrCode, f.LastStreamID))
			case *http2.PingFrame:
				if f.IsAck() {
					pongs <- struct{}{}
				}
			}
		}
	}()
	var hb strings.Builder
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "gw"}, {":path", "/k/" + kind + "?n=reset"}, {"authorization", "Bearer token-bob"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	block := []byte(hb.String())
	const streams = 5000
	for i := uint32(0); i < streams; i++ {
		id := 2*i + 1
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		if err := fr.WriteRSTStream(id, http2.ErrCodeCancel); err != nil {
			t.Fatal(err)
		}
		// In batches, as fast as the gateway takes them: a client that
		// outruns the server is sent away by its HTTP/2 code first.
		if i%50 == 49 {
			if err := fr.WritePing(false, [8]byte{}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-pongs:
			case <-time.After(10 * time.Second):
				t.Fatalf("no PING answer after %d streams; %v", i+1, goaway.Load())
			}
		}
	}
	if ga := goaway.Load(); ga != nil {
		t.Fatalf("the gateway sent %v", ga)
	}
	// A last request, not reset, is answered after the others.
	if err := e.run([]poolStep{{who: "bob", kind: "plain", via: "h2"}}); err != nil {
		t.Fatal(err)
	}
	dials := e.up.dials.Load()
	t.Logf("%d reset streams: %d upstream connections, at most %d open at once", streams, dials, peak.Load())
	// net/http's Transport frees a connection's place just before it
	// closes the connection, so a replacement may be dialled a moment
	// before the old one is counted out. Without the cap, hundreds are
	// open at once.
	if limit := int64(2 * maxConns); peak.Load() > limit {
		t.Errorf("%d reset streams had %d upstream connections open at once, want at most %d", streams, peak.Load(), limit)
	}
}

// countedConn counts itself out of open when it is first closed.
type countedConn struct {
	net.Conn
	open *atomic.Int64
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}

// TestLeanRetriesPastEveryStalePooledConnection fills the lean path's
// pool with several upstream connections, has the upstream close them
// all, then sends a GET: it must be answered, however many dead
// connections the pool held.
func TestLeanRetriesPastEveryStalePooledConnection(t *testing.T) {
	e := newPoolEnv(t, RequestHeaderIdentity)
	var steps []poolStep
	for range 3 {
		for _, who := range poolUsers {
			steps = append(steps, poolStep{who: who, kind: "slow", via: "lean"})
		}
	}
	if err := e.runConcurrently(steps); err != nil {
		t.Fatal(err)
	}
	if n := e.up.dials.Load(); n < 2 {
		t.Fatalf("the pool holds %d upstream connection, want several", n)
	}
	e.up.closeAll()
	time.Sleep(50 * time.Millisecond)
	if err := e.run([]poolStep{{who: "alice", kind: "plain", via: "lean"}}); err != nil {
		t.Error(err)
	}
}
