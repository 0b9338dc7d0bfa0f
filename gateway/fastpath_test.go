package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"github.com/kubegate/kubegate/internal/serving"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testpki"
)

// dialLean opens an HTTP/1.1 TLS connection to the gateway, presenting
// cert if set.
func (e *env) dialLean(t *testing.T, cert *testpki.Cert) (*tls.Conn, *bufio.Reader) {
	t.Helper()
	tc := &tls.Config{RootCAs: e.serverCA.Pool(), NextProtos: []string{"http/1.1"}}
	if cert != nil {
		pair, _ := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
		tc.Certificates = []tls.Certificate{pair}
	}
	conn, err := tls.Dial("tcp", strings.TrimPrefix(e.gw.URL, "https://"), tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	return conn, bufio.NewReader(conn)
}

func readResponse(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, string(body)
}

// TestLeanWire drives the lean path with raw HTTP/1.1 on one connection:
// each step is written as is and must get the status wanted, whether the
// lean path serves it or hands the connection to net/http.
func TestLeanWire(t *testing.T) {
	e := newEnv(t, envOptions{})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice", Orgs: []string{"devs"}})
	get := "GET /api/v1/pods HTTP/1.1\r\nHost: gw\r\n\r\n"
	tests := []struct {
		name   string
		steps  []string // requests written one after another on one connection
		method []string // request method per step, for reading the answer; "" is GET
		want   []int
		check  func(t *testing.T, last seen)
	}{
		{name: "keep-alive", steps: []string{get, get, get}, want: []int{200, 200, 200}},
		{name: "pipelined", steps: []string{get + get}, want: []int{200, 200}},
		{
			name:  "mixed-case duplicate identity headers and a token",
			steps: []string{"GET /api/v1/pods HTTP/1.1\r\nHost: gw\r\nx-remote-user: admin\r\nX-REMOTE-USER: root\r\nx-CUSTOM-user: admin\r\nX-Remote-Extra-Scopes: all\r\nimpersonate-user: bob\r\nProxy-Authorization: Basic c2VjcmV0\r\nAuthorization: Bearer token-alice\r\n\r\n"},
			want:  []int{200},
			check: func(t *testing.T, last seen) {
				if got := last.header.Values("X-Remote-User"); len(got) != 1 || got[0] != "alice" {
					t.Errorf("X-Remote-User = %q, want [alice]", got)
				}
				if last.header.Get("Authorization") != "" || last.header.Get("Proxy-Authorization") != "" || last.header.Get("X-Custom-User") != "" || last.header.Get("X-Remote-Extra-Scopes") != "" {
					t.Errorf("a client identity header or Authorization reached the upstream: %v", identityHeaders(last.header))
				}
				if got := last.header.Get("Impersonate-User"); got != "bob" {
					t.Errorf("Impersonate-User = %q, want bob passed through in request-header mode", got)
				}
				if got := last.header.Get("X-Forwarded-For"); got != "127.0.0.1" {
					t.Errorf("X-Forwarded-For = %q, want the client's address 127.0.0.1", got)
				}
			},
		},
		{
			name:   "a body hands the connection to net/http mid-stream",
			steps:  []string{get, "POST /api/v1/pods HTTP/1.1\r\nHost: gw\r\nContent-Length: 5\r\n\r\nhello", get},
			method: []string{"", "POST", ""},
			want:   []int{200, 200, 200},
		},
		{name: "head", steps: []string{"HEAD /api/v1/pods HTTP/1.1\r\nHost: gw\r\n\r\n", get}, method: []string{"HEAD", ""}, want: []int{200, 200}},
		{name: "a head larger than the lean buffer", steps: []string{"GET /api/v1/pods HTTP/1.1\r\nHost: gw\r\nX-Big: " + strings.Repeat("a", 6000) + "\r\n\r\n"}, want: []int{200}},
		{name: "HTTP/1.0", steps: []string{"GET /api/v1/pods HTTP/1.0\r\nHost: gw\r\n\r\n"}, want: []int{200}},
		{name: "malformed request line", steps: []string{"GET /api v1 HTTP/1.1\r\nHost: gw\r\n\r\n"}, want: []int{400}},
		{name: "invalid escape in the target", steps: []string{"GET /api/%0X HTTP/1.1\r\nHost: gw\r\n\r\n"}, want: []int{400}},
		{name: "no Host", steps: []string{"GET /api/v1/pods HTTP/1.1\r\n\r\n"}, want: []int{400}},
		{name: "malformed Host", steps: []string{"GET /api/v1/pods HTTP/1.1\r\nHost: a<b\r\n\r\n"}, want: []int{400}},
		{name: "two Hosts", steps: []string{"GET /api/v1/pods HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"}, want: []int{400}},
		{
			// net/http unfolds the line; the folded identity header is
			// scrubbed like any other.
			name: "obsolete line folding", steps: []string{"GET /api/v1/pods HTTP/1.1\r\nHost: gw\r\nX-Remote-User: admin\r\n root\r\n\r\n"}, want: []int{200},
			check: func(t *testing.T, last seen) {
				if got := last.header.Values("X-Remote-User"); len(got) != 1 || got[0] != "alice" {
					t.Errorf("X-Remote-User = %q, want [alice]", got)
				}
			},
		},
		{name: "gateway endpoints", steps: []string{"GET /kubegate/healthz HTTP/1.1\r\nHost: gw\r\n\r\n", "GET /kubegate/whoami HTTP/1.1\r\nHost: gw\r\n\r\n"}, want: []int{200, 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, br := e.dialLean(t, alice)
			k := 0
			for i, step := range tt.steps {
				if _, err := io.WriteString(conn, step); err != nil {
					t.Fatal(err)
				}
				for n := strings.Count(step, " HTTP/1."); n > 0; n-- {
					method := "GET"
					if i < len(tt.method) && tt.method[i] != "" {
						method = tt.method[i]
					}
					resp, body := readResponse(t, br, method)
					if resp.StatusCode != tt.want[k] {
						t.Fatalf("answer %d: status %d, want %d; body %s", k, resp.StatusCode, tt.want[k], body)
					}
					if resp.StatusCode == 200 && method == "GET" && body == "" {
						t.Errorf("answer %d: empty body", k)
					}
					if strings.Contains(body, `"kind":"Pod"`) && resp.Header.Get("X-Request-Id") == "" {
						t.Errorf("answer %d: no X-Request-Id", k)
					}
					k++
				}
			}
			if k != len(tt.want) {
				t.Fatalf("read %d answers, want %d", k, len(tt.want))
			}
			if tt.check != nil {
				tt.check(t, e.up.last(t))
			}
		})
	}
}

func TestLeanUnauthenticatedIs401AndKeepsTheConnection(t *testing.T) {
	e := newEnv(t, envOptions{})
	conn, br := e.dialLean(t, nil)
	before := e.up.count()
	for i := 0; i < 2; i++ {
		fmt.Fprintf(conn, "GET /api/v1/pods HTTP/1.1\r\nHost: gw\r\nX-Remote-User: admin\r\nAuthorization: Bearer nope\r\n\r\n")
		resp, body := readResponse(t, br, "GET")
		wantUnauthorized(t, resp, []byte(body))
	}
	if e.up.count() != before {
		t.Fatal("an unauthenticated request reached the upstream")
	}
}

func TestLeanConnectionClose(t *testing.T) {
	e := newEnv(t, envOptions{})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	conn, br := e.dialLean(t, alice)
	fmt.Fprintf(conn, "GET /api/v1/pods HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n")
	resp, _ := readResponse(t, br, "GET")
	if resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("status %d, close %v; want 200 and Connection: close", resp.StatusCode, resp.Close)
	}
	if n, err := br.ReadByte(); err == nil {
		t.Fatalf("read %q after a closing answer, want the connection closed", n)
	}
}

// TestLeanStreamsChunkedAnswers checks that an answer of unknown length
// reaches the client as the upstream produces it, not when it ends, on a
// request the lean path serves (no watch parameter), and that the
// connection is reusable after it.
func TestLeanStreamsChunkedAnswers(t *testing.T) {
	e := newEnv(t, envOptions{})
	release := make(chan struct{})
	e.up.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/stream" {
			fmt.Fprint(w, "plain")
			return
		}
		fmt.Fprintln(w, "first")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprintln(w, "second")
	}
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	conn, br := e.dialLean(t, alice)
	fmt.Fprintf(conn, "GET /api/v1/stream HTTP/1.1\r\nHost: gw\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Errorf("Transfer-Encoding %q, want chunked", resp.TransferEncoding)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first line = %q, %v; want it before the upstream finishes", line, err)
	}
	close(release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "second\n" {
		t.Fatalf("rest = %q, %v", rest, err)
	}
	fmt.Fprintf(conn, "GET /api/v1/pods HTTP/1.1\r\nHost: gw\r\n\r\n")
	if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || body != "plain" {
		t.Fatalf("after the stream: status %d body %q", resp.StatusCode, body)
	}
}

// TestLeanUpstreamAnswers covers upstream answers of every framing.
func TestLeanUpstreamAnswers(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.up.handler = func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/until-close":
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			fmt.Fprint(brw, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it")
			brw.Flush()
			conn.Close()
		case "/no-content":
			w.WriteHeader(http.StatusNoContent)
		case "/hop-by-hop":
			w.Header().Set("Keep-Alive", "timeout=5")
			w.Header().Set("X-Kept", "yes")
			fmt.Fprint(w, "ok")
		case "/not-found":
			http.Error(w, "nope", http.StatusNotFound)
		}
	}
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	tests := []struct {
		path      string
		status    int
		body      string
		wantClose bool
	}{
		{path: "/until-close", status: 200, body: "all of it", wantClose: false}, // sent chunked, as net/http sends it
		{path: "/no-content", status: 204},
		{path: "/hop-by-hop", status: 200, body: "ok"},
		{path: "/not-found", status: 404, body: "nope\n"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			conn, br := e.dialLean(t, alice)
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: gw\r\n\r\n", tt.path)
			resp, body := readResponse(t, br, "GET")
			if resp.StatusCode != tt.status || body != tt.body || resp.Close != tt.wantClose {
				t.Fatalf("got %d %q close=%v, want %d %q close=%v", resp.StatusCode, body, resp.Close, tt.status, tt.body, tt.wantClose)
			}
			if resp.Header.Get("Keep-Alive") != "" {
				t.Error("a hop-by-hop header from the upstream reached the client")
			}
			if tt.path == "/hop-by-hop" && resp.Header.Get("X-Kept") != "yes" {
				t.Error("an end-to-end header from the upstream was lost")
			}
		})
	}
}

func TestLeanRetriesStaleUpstreamConnection(t *testing.T) {
	e := newEnv(t, envOptions{})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	conn, br := e.dialLean(t, alice)
	get := "GET /api/v1/pods HTTP/1.1\r\nHost: gw\r\n\r\n"
	io.WriteString(conn, get)
	readResponse(t, br, "GET")
	e.up.CloseClientConnections() // the pooled upstream connection goes stale
	time.Sleep(50 * time.Millisecond)
	io.WriteString(conn, get)
	if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 {
		t.Fatalf("after the upstream closed its connections: %d %s", resp.StatusCode, body)
	}
}

func TestLeanShutdownClosesIdleConnections(t *testing.T) {
	e := newEnv(t, envOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	servingCert := e.serverCA.Issue(t, testpki.Options{CN: "localhost", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, EKUs: []x509ExtKeyUsage{serverAuth}})
	pair, _ := tls.X509KeyPair(servingCert.CertPEM, servingCert.KeyPEM)
	_, shutdown := serve(e.gateway, serving.NewHTTPServer(e.gateway, &tls.Config{Certificates: []tls.Certificate{pair}}, slog.New(slog.NewTextHandler(io.Discard, nil))), ln)
	e.gw.URL = "https://" + ln.Addr().String()
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	conn, br := e.dialLean(t, alice)
	fmt.Fprintf(conn, "GET /api/v1/pods HTTP/1.1\r\nHost: gw\r\n\r\n")
	readResponse(t, br, "GET")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("an idle keep-alive connection survived shutdown")
	}
}
