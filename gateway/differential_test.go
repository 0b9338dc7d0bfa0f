package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"github.com/kubegate/kubegate/internal/serving"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/tokenfile"
	authx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/internal/testpki"
)

// The differential test drives the same client bytes, against the same
// scripted upstream answers, through gateways that differ only in how
// they serve: with the fast path (gateway/internal/h1 for HTTP/1.1; for
// HTTP/2 Go's server, as by default, or gateway/internal/h2, as with
// --http2-fast-path), and with net/http's servers and
// httputil.ReverseProxy alone. The upstream must receive the same
// requests from each (header order aside), and the client the same
// answers: status, headers and body.
// Framing may differ where HTTP lets it (Content-Length or chunked, a
// connection kept or closed after an answer), so it is left out of the
// comparison; the bodies are compared whole. Values that are unique to a
// gateway (its request IDs) and the Date header are normalised.

// diffUpstream records every request it receives, as it arrives, and
// answers each with the current script.
type diffUpstream struct {
	ln net.Listener

	mu     sync.Mutex
	script diffAnswer
	seen   []string
	conns  map[net.Conn]struct{}
}

// diffAnswer is how the upstream answers: the bytes it writes, in
// pieces, and whether it then closes the connection.
type diffAnswer struct {
	name   string
	pieces []string // written with a short pause between them
	close  bool     // close after writing, answered or not
	// cut says the answer breaks off in its body. The client then gets
	// the head and part of the body, or nothing, as buffering has it:
	// both count as the same failure.
	cut bool
}

// diffAnswers are the upstream's answers: ordinary, odd and hostile.
var diffAnswers = []diffAnswer{
	{name: "length", pieces: []string{"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":\"b c\"}"}},
	{name: "chunked", pieces: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n", "3\r\nefg\r\n0\r\n\r\n"}},
	{name: "chunked with trailer", pieces: []string{"HTTP/1.1 200 OK\r\nTrailer: X-T\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\nX-T: 1\r\n\r\n"}},
	{name: "until close", pieces: []string{"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it", " and more"}, close: true},
	{name: "HTTP/1.0 without length", pieces: []string{"HTTP/1.0 200 OK\r\n\r\nold"}, close: true},
	{name: "no content", pieces: []string{"HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n"}},
	{name: "not modified", pieces: []string{"HTTP/1.1 304 Not Modified\r\nEtag: \"1\"\r\n\r\n"}},
	{name: "early hints", pieces: []string{"HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "unasked continue", pieces: []string{"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "connection names a header", pieces: []string{"HTTP/1.1 200 OK\r\nConnection: X-Hop\r\nX-Hop: secret\r\nX-Kept: 1\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "error status", pieces: []string{"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"e\":1}"}},
	{name: "no reason phrase", pieces: []string{"HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n"}},
	{name: "repeated header", pieces: []string{"HTTP/1.1 200 OK\r\nX-Multi: a\r\nX-Multi: b\r\nSet-Cookie: x=1\r\nContent-Length: 0\r\n\r\n"}},
	{name: "upstream request ID", pieces: []string{"HTTP/1.1 200 OK\r\nX-Request-Id: upstream-id\r\nContent-Length: 0\r\n\r\n"}},
	{name: "odd header spellings", pieces: []string{"HTTP/1.1 200 OK\r\ncontent-type: text/x\r\nx-lower: 1\r\nX-Space:  padded \t \r\nX-Empty:\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n"}},
	{name: "gzip transfer coding", pieces: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"}, close: true},
	{name: "conflicting lengths", pieces: []string{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok"}, close: true},
	{name: "aborted body", pieces: []string{"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial"}, close: true, cut: true},
	{name: "aborted chunk", pieces: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nshort"}, close: true, cut: true},
	{name: "unasked switch", pieces: []string{"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x\r\n\r\n"}, close: true},
	{name: "vanish", close: true},
	{name: "garbage", pieces: []string{"SSH-2.0-OpenSSH\r\n\r\n"}, close: true},
	{name: "slow body", pieces: []string{"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nab", "cd", "ef"}},
}

func startDiffUpstream(tb testing.TB, serving tls.Certificate, frontProxyCA *testpki.Cert) *diffUpstream {
	tc := &tls.Config{Certificates: []tls.Certificate{serving}, ClientCAs: frontProxyCA.Pool(), ClientAuth: tls.RequireAndVerifyClientCert}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", tc)
	if err != nil {
		tb.Fatal(err)
	}
	u := &diffUpstream{ln: ln, conns: map[net.Conn]struct{}{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go u.serve(c)
		}
	}()
	tb.Cleanup(func() { ln.Close() })
	return u
}

func (u *diffUpstream) serve(c net.Conn) {
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
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		u.mu.Lock()
		u.seen = append(u.seen, describeUpstreamRequest(req, body))
		a := u.script
		u.mu.Unlock()
		if req.Method == http.MethodHead {
			a.pieces = withoutBody(a.pieces, a.close)
		}
		for i, p := range a.pieces {
			if i > 0 {
				time.Sleep(2 * time.Millisecond)
			}
			if _, err := io.WriteString(c, p); err != nil {
				return
			}
		}
		if a.close {
			return
		}
	}
}

// withoutBody returns an answer's pieces cut after the head of its
// final answer, as a server answers HEAD. Bytes after an answer are a
// hostile upstream's (the pool tests send them); with them, whether
// net/http's Transport reuses the connection is a race, which is not
// what this test compares. When the upstream then closes the
// connection, the head says so, as a server closing after an answer
// does: otherwise whether the next request finds the connection closed
// is a race too.
func withoutBody(pieces []string, closing bool) []string {
	all := strings.Join(pieces, "")
	end := 0
	for {
		i := strings.Index(all[end:], "\r\n\r\n")
		if i < 0 {
			return pieces
		}
		head := all[end : end+i]
		end += i + 4
		if !strings.HasPrefix(head, "HTTP/1.1 1") || strings.HasPrefix(head, "HTTP/1.1 101") {
			if closing {
				return []string{all[:end-2] + "Connection: close\r\n\r\n"}
			}
			return []string{all[:end]}
		}
	}
}

// describeUpstreamRequest writes a request as the upstream received it,
// headers sorted and the gateway's request ID normalised.
func describeUpstreamRequest(req *http.Request, body []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s host=%q length=%d te=%q\n", req.Method, req.RequestURI, req.Proto, req.Host, req.ContentLength, req.TransferEncoding)
	writeSortedHeader(&b, req.Header, "X-Request-Id")
	fmt.Fprintf(&b, "body %q\n", body)
	return b.String()
}

// gatewayRequestID matches the request IDs a gateway makes
// (newRequestID).
var gatewayRequestID = regexp.MustCompile(`^[0-9a-f]{12}-[0-9a-z]+$`)

// writeSortedHeader writes h one line per key, in key order, with the
// values of the keys in ids replaced by their count.
func writeSortedHeader(b *strings.Builder, h http.Header, ids ...string) {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		vs := h[k]
		if slices.Contains(ids, k) {
			// The gateway's own values differ between gateways; the
			// upstream's and the client's are kept.
			shown := make([]string, len(vs))
			for i, v := range vs {
				shown[i] = v
				if k == "Date" || gatewayRequestID.MatchString(v) {
					shown[i] = "<gateway's>"
				}
			}
			fmt.Fprintf(b, "  %s: %q\n", k, shown)
			continue
		}
		fmt.Fprintf(b, "  %s: %q\n", k, vs)
	}
}

// reset sets the script for the next case, forgets what was seen and
// closes every connection, so that each case starts on new connections.
func (u *diffUpstream) reset(a diffAnswer) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.script, u.seen = a, nil
	for c := range u.conns {
		c.Close()
	}
}

func (u *diffUpstream) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}

// diffEnv is the two gateways in front of one scripted upstream.
type diffEnv struct {
	up       *diffUpstream
	fast     string // the address of the gateway with the fast path and gateway/internal/h2 (--http2-fast-path)
	fastGo   string // the address of the gateway with the fast path and Go's HTTP/2 server, as kubegate gateway serves by default
	std      string // the address of the gateway on net/http alone
	clientTC *tls.Config
	anonTC   *tls.Config
	idle     []func()
}

func newDiffEnv(tb testing.TB) *diffEnv {
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
	e := &diffEnv{up: startDiffUpstream(tb, servingCert(), frontProxyCA)}
	dir := tb.TempDir()
	proxyCert, proxyKey := frontProxyCA.Issue(tb, testpki.Options{CN: "front-proxy-client"}).WriteFiles(tb, dir, "front-proxy-client")
	proxyPair, err := serving.LoadKeyPair(proxyCert, proxyKey)
	if err != nil {
		tb.Fatal(err)
	}
	upURL, _ := url.Parse("https://" + e.up.ln.Addr().String())
	x, err := authx509.New(clientCA.CertPEM, authx509.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tokens, _, err := tokenfile.Parse(strings.NewReader("token-bob,bob,uid-bob,\"devs,ops\"\n"))
	if err != nil {
		tb.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func(withFast, fastH2 bool) string {
		o := UpstreamTransportOptions{CAPEM: serverCA.CertPEM, ClientCert: proxyPair}
		rt, err := NewUpstreamTransport(o)
		if err != nil {
			tb.Fatal(err)
		}
		e.idle = append(e.idle, rt.(interface{ CloseIdleConnections() }).CloseIdleConnections)
		var fast *FastPath
		if withFast {
			if fast, err = NewFastPath(upURL, o); err != nil {
				tb.Fatal(err)
			}
			fast.HTTP2 = fastH2
			e.idle = append(e.idle, fast.CloseIdleConnections)
		}
		g, err := New(Config{
			Upstream: upURL, Transport: rt, FastPath: fast, Logger: quiet,
			Authenticator: authn.New(authn.Config{X509: x, StaticTokens: []authn.Token{tokens}}),
			BodyTimeout:   2 * time.Second,
		})
		if err != nil {
			tb.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		tc := &tls.Config{Certificates: []tls.Certificate{servingCert()}, ClientAuth: tls.RequestClientCert, NextProtos: []string{"h2", "http/1.1"}}
		srv := serving.NewHTTPServer(g, tc, quiet)
		srv.ReadHeaderTimeout = 2 * time.Second
		_, shutdown := serve(g, srv, ln)
		tb.Cleanup(func() { _ = shutdown(tb.Context()) })
		return ln.Addr().String()
	}
	e.fast, e.fastGo, e.std = start(true, true), start(true, false), start(false, false)
	alice := clientCA.Issue(tb, testpki.Options{CN: "alice", Orgs: []string{"devs"}})
	pair, _ := tls.X509KeyPair(alice.CertPEM, alice.KeyPEM)
	e.clientTC = &tls.Config{RootCAs: serverCA.Pool(), Certificates: []tls.Certificate{pair}, NextProtos: []string{"http/1.1"}}
	e.anonTC = &tls.Config{RootCAs: serverCA.Pool(), NextProtos: []string{"http/1.1"}}
	return e
}

// diffCase is one client connection: the bytes it sends, the methods of
// the requests in them (to read the answers), and the upstream's script.
type diffCase struct {
	client  string
	methods []string
	anon    bool // no client certificate
	answer  diffAnswer
	// h2, when set, is the one request to send over HTTP/2 instead of
	// client's bytes.
	h2 *diffRequest
}

// observe runs c against the gateway at addr and describes what the
// upstream received and what the client read.
func (e *diffEnv) observe(c diffCase, addr string) string {
	for _, f := range e.idle {
		f()
	}
	e.up.reset(c.answer)
	tc := e.clientTC
	if c.anon {
		tc = e.anonTC
	}
	if c.h2 != nil {
		return e.observeH2(c, addr, tc)
	}
	conn, err := tls.Dial("tcp", addr, tc)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	go func() { _, _ = io.WriteString(conn, c.client) }()
	var b strings.Builder
	br := bufio.NewReader(conn)
	for _, m := range c.methods {
		done := false
		for !done {
			resp, err := http.ReadResponse(br, &http.Request{Method: m})
			if err != nil && c.answer.cut {
				b.WriteString(brokenOff)
				done = true
				break
			}
			if err != nil {
				fmt.Fprintf(&b, "client: no answer (%s)\n", readErrorKind(err))
				done = true
				break
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil && c.answer.cut {
				b.WriteString(brokenOff)
				done = true
				break
			}
			fmt.Fprintf(&b, "client: %s\n", resp.Status)
			writeSortedHeader(&b, answerHeaders(resp.Header), "X-Request-Id", "Date")
			fmt.Fprintf(&b, "  body %q", body)
			if err != nil {
				fmt.Fprintf(&b, " broken off (%s)", readErrorKind(err))
				done = true
			}
			if len(resp.Trailer) > 0 {
				fmt.Fprintf(&b, " trailer %v", resp.Trailer)
			}
			b.WriteString("\n")
			if resp.StatusCode >= 200 {
				break
			}
		}
		if done {
			break
		}
	}
	// Wait for the upstream to have seen what it will see.
	time.Sleep(5 * time.Millisecond)
	for _, r := range e.up.received() {
		b.WriteString("upstream: " + r)
	}
	return b.String()
}

// observeH2 sends c's request over HTTP/2 and describes what the
// upstream received and what the client read, as observe does.
func (e *diffEnv) observeH2(c diffCase, addr string, tc *tls.Config) string {
	tc = tc.Clone()
	tc.NextProtos = []string{"h2"}
	tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	r := c.h2
	req, err := http.NewRequest(r.method, "https://"+addr+r.target, strings.NewReader(r.body))
	if err != nil {
		return "request: " + err.Error()
	}
	if r.body == "" {
		req.Body = http.NoBody
	}
	var b strings.Builder
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			fmt.Fprintf(&b, "client: %d\n", code)
			writeSortedHeader(&b, http.Header(h), "X-Request-Id", "Date")
			return nil
		},
	}))
	for _, line := range strings.Split(r.headers, "\r\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch http.CanonicalHeaderKey(name) {
		case "Host":
			req.Host = value
		case "Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "Keep-Alive", "Proxy-Connection", "Te":
			// Not sent over HTTP/2 (the client refuses or drops them).
		default:
			req.Header.Add(name, value)
		}
	}
	ctx, cancel := context.WithTimeout(req.Context(), 5*time.Second)
	defer cancel()
	resp, err := tr.RoundTrip(req.WithContext(ctx))
	switch {
	case err != nil && c.answer.cut:
		b.WriteString(brokenOff)
	case err != nil:
		fmt.Fprintf(&b, "client: no answer (%s)\n", h2ErrorKind(err))
	default:
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil && c.answer.cut {
			b.WriteString(brokenOff)
		} else {
			fmt.Fprintf(&b, "client: %s\n", resp.Status)
			writeSortedHeader(&b, answerHeaders(resp.Header), "X-Request-Id", "Date")
			fmt.Fprintf(&b, "  body %q", body)
			if err != nil {
				fmt.Fprintf(&b, " broken off (%s)", h2ErrorKind(err))
			}
			if len(resp.Trailer) > 0 {
				fmt.Fprintf(&b, " trailer %v", resp.Trailer)
			}
			b.WriteString("\n")
		}
	}
	time.Sleep(5 * time.Millisecond)
	for _, r := range e.up.received() {
		b.WriteString("upstream: " + r)
	}
	return b.String()
}

// h2ErrorKind reduces an HTTP/2 client error to what both paths can
// agree on.
func h2ErrorKind(err error) string {
	if strings.Contains(err.Error(), "timeout") || strings.Contains(err.Error(), "deadline") {
		return "timeout"
	}
	return "reset"
}

// brokenOff is what the client got of an answer that broke off in its
// body: the head and part of the body, or nothing, as buffering has it.
const brokenOff = "client: answer broken off\n"

// answerHeaders leaves out the framing headers, which may differ (see
// the comment at the top of this file).
func answerHeaders(h http.Header) http.Header {
	h = h.Clone()
	for _, k := range []string{"Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive"} {
		delete(h, k)
	}
	return h
}

// readErrorKind reduces a client read error to what both servers can
// agree on.
func readErrorKind(err error) string {
	switch {
	case err == io.EOF, err == io.ErrUnexpectedEOF, strings.Contains(err.Error(), "connection reset"):
		return "closed"
	case strings.Contains(err.Error(), "timeout"):
		return "timeout"
	}
	return "malformed"
}

// compare runs c on the gateways and reports how they differ.
//
// An HTTP/1.1 case is compared on the gateway with the fast path; an
// HTTP/2 case on both gateways with the fast path, since they differ only
// in the HTTP/2 server: Go's (the default) and gateway/internal/h2.
func (e *diffEnv) compare(c diffCase) error {
	type path struct{ name, addr string }
	paths := []path{{"the fast path", e.fast}}
	sent := fmt.Sprintf("%q", c.client)
	if c.h2 != nil {
		sent = fmt.Sprintf("over HTTP/2 %+v", *c.h2)
		paths = []path{{"the fast path and Go's HTTP/2 server", e.fastGo}, {"the fast path and gateway/internal/h2", e.fast}}
	}
	std := e.observe(c, e.std)
	for _, p := range paths {
		if got := e.observe(c, p.addr); got != std {
			return fmt.Errorf("client sent %s, upstream answered %q:\n%s\nwith %s:\n%s\non net/http:\n%s",
				sent, c.answer.name, lineDiff(got, std), p.name, got, std)
		}
	}
	return nil
}

// lineDiff lists the lines of a missing from b (-) and of b missing from
// a (+).
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for _, l := range al {
		if !slices.Contains(bl, l) {
			out.WriteString("- " + l + "\n")
		}
	}
	for _, l := range bl {
		if !slices.Contains(al, l) {
			out.WriteString("+ " + l + "\n")
		}
	}
	return out.String()
}

// diffRequests are the client's requests, ordinary and hostile; each is
// a method, a target and header lines, and the body it sends, if any.
type diffRequest struct {
	method, target, headers, body string
}

var diffRequests = []diffRequest{
	{"GET", "/api/v1/namespaces/default/pods/app", "", ""},
	{"GET", "/api/v1/pods?labelSelector=app%3Dweb&limit=5", "Accept: application/json\r\n", ""},
	{"HEAD", "/api/v1/pods", "", ""},
	{"OPTIONS", "/api", "", ""},
	{"DELETE", "/api/v1/namespaces/default/pods/app", "", ""},
	{"POST", "/api/v1/namespaces/default/configmaps", "Content-Type: application/json\r\nContent-Length: 2\r\n", "{}"},
	{"PUT", "/api/v1/namespaces/default/configmaps/c", "Transfer-Encoding: chunked\r\n", "2\r\n{}\r\n0\r\n\r\n"},
	{"POST", "/api/v1/namespaces/default/configmaps", "Expect: 100-continue\r\nContent-Length: 2\r\n", "{}"},
	{"GET", "/a;b?x=1;y=2", "", ""},
	{"GET", "/a?x=%zz&y=1", "", ""},
	{"GET", "/a%2Fb/c?q=%41", "", ""},
	{"GET", "/a?", "", ""},
	{"GET", "//double/slash", "", ""},
	{"GET", "/api/v1/pods?watch=1", "", ""},
	{"GET", "/api/v1/namespaces/default/pods/app/log?follow=true", "", ""},
	{"GET", "/kubegate/whoami", "", ""},
	{"GET", "/healthz", "", ""},
	{"GET", "/api", "X-Remote-User: admin\r\nX-Remote-Group: system:masters\r\nX-Remote-Extra-Scopes: all\r\n", ""},
	{"GET", "/api", "X_Remote_User: admin\r\nx-remote-user: admin\r\n", ""},
	{"GET", "/api", "Authorization: Bearer token-bob\r\n", ""},
	{"GET", "/api", "Authorization: Bearer not-a-token\r\n", ""},
	{"GET", "/api", "Impersonate-User: bob\r\nImpersonate-Group: system:masters\r\n", ""},
	{"GET", "/api", "Connection: X-Secret, keep-alive\r\nX-Secret: s\r\nKeep-Alive: timeout=5\r\n", ""},
	{"GET", "/api", "Connection: close\r\n", ""},
	{"GET", "/api", "Te: trailers\r\nTrailer: X-T\r\n", ""},
	{"GET", "/api", "Te: gzip\r\nProxy-Authorization: Basic x\r\nProxy-Connection: keep-alive\r\n", ""},
	{"GET", "/api/v1/namespaces/default/pods/app/exec", "Connection: Upgrade\r\nUpgrade: websocket\r\n", ""},
	{"GET", "/api", "X-Forwarded-For: 10.0.0.1\r\nForwarded: for=10.0.0.1\r\nX-Forwarded-Host: evil\r\nX-Request-Id: mine\r\n", ""},
	{"GET", "/api", "User-Agent: kubectl/v1.37\r\nUser-Agent: second\r\nAccept-Encoding: gzip\r\n", ""},
	{"GET", "/api", "X-Spaces:   padded \t\r\nX-Empty:\r\n", ""},
	{"GET", "/api", "Host: other.example\r\n", ""},
	{"GET", "/api", "X-Folded: a\r\n b\r\n", ""},
	{"GET", "/api", "Bad Name: x\r\n", ""},
	{"GET", "/api", "Content-Length: 3\r\n", "abc"},
	{"GET", "/api", "Expect: something-else\r\n", ""},
	{"GET", "/api", "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"},
	{"TRACE", "/api", "", ""},
	{"GET", "/api", "Accept: " + strings.Repeat("a", 5000) + "\r\n", ""},
}

// diffCaseFrom builds a case from fuzz input: up to three pipelined
// requests, each a request of diffRequests, with or without a client
// certificate, answered by one of diffAnswers.
func diffCaseFrom(in []byte) diffCase {
	next := func(n int) int {
		if len(in) == 0 {
			return 0
		}
		v := int(in[0]) % n
		in = in[1:]
		return v
	}
	c := diffCase{answer: diffAnswers[next(len(diffAnswers))], anon: next(4) == 0}
	if next(3) == 0 {
		r := diffRequests[next(len(diffRequests))]
		c.h2 = &r
		return c
	}
	var b bytes.Buffer
	for n := 1 + next(3); n > 0; n-- {
		r := diffRequests[next(len(diffRequests))]
		host := "Host: gw\r\n"
		if strings.HasPrefix(r.headers, "Host:") {
			host = ""
		}
		fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n%s%s\r\n%s", r.method, r.target, host, r.headers, r.body)
		c.methods = append(c.methods, r.method)
	}
	c.client = b.String()
	return c
}

// TestFastPathMatchesNetHTTP runs every request against every answer,
// one request per connection.
func TestFastPathMatchesNetHTTP(t *testing.T) {
	e := newDiffEnv(t)
	for ri := range diffRequests {
		for ai := range diffAnswers {
			for _, h2 := range []byte{0, 1} { // HTTP/2, then HTTP/1.1
				c := diffCaseFrom([]byte{byte(ai), 1, h2, byte(ri), 0, byte(ri)})
				if err := e.compare(c); err != nil {
					t.Error(err)
				}
			}
		}
	}
}

// FuzzFastPathMatchesNetHTTP runs pipelined requests, with and without a
// client certificate, against the answers. Its seed corpus runs in every
// test run; `go test -fuzz FuzzFastPathMatchesNetHTTP ./gateway/` runs it
// for as long as wanted.
func FuzzFastPathMatchesNetHTTP(f *testing.F) {
	for i := range 24 {
		f.Add([]byte{byte(i * 7), byte(i), byte(i), byte(i * 3), byte(i * 5), byte(i * 11)})
	}
	e := newDiffEnv(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		if err := e.compare(diffCaseFrom(in)); err != nil {
			t.Fatal(err)
		}
	})
}
