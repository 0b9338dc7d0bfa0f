package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
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
		{path: "/until-close", status: 200, body: "all of it", wantClose: true},
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
	serving := e.serverCA.Issue(t, testpki.Options{CN: "localhost", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, EKUs: []x509ExtKeyUsage{serverAuth}})
	pair, _ := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	_, shutdown := serve(e.gateway, NewHTTPServer(e.gateway, &tls.Config{Certificates: []tls.Certificate{pair}}, slog.New(slog.NewTextHandler(io.Discard, nil))), ln)
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

func TestWriteValueBreaksNoLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"alice", "alice"},
		{"a\r\nX-Remote-User: admin", "a  X-Remote-User: admin"},
		{"\n\r", "  "},
		{"a\rb\nc", "a b c"},
		{"", ""},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		w := bufio.NewWriter(&b)
		writeValue(w, tt.in)
		w.Flush()
		if b.String() != tt.want {
			t.Errorf("writeValue(%q) = %q, want %q", tt.in, b.String(), tt.want)
		}
	}
}

// FuzzParseRequestHead checks the lean parser against net/http's: every
// head the lean path takes (parsed and plain) must be one net/http reads
// the same way.
func FuzzParseRequestHead(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /api/v1/pods?watch=1 HTTP/1.1\r\nHost: a\r\nX-Remote-User:  x \r\nx-remote-user: y\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX:\x01\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nA B: x\r\n\r\n",
		"GET / HTTP/1.1\nHost: a\n\n",
		"GET / HTTP/1.1\r\nHost: a<b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: [::1]:80\r\nConnection: close, X-A\r\n\r\n",
		"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a%2Fb/c HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a!b/(c)*'d?x=%zz HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET //a/b;c=d@e$f HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a? HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a?? HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a?b?c#d HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, head string) {
		// A head is everything through the first empty line.
		if i := strings.Index(head, "\r\n\r\n"); i >= 0 {
			head = head[:i+4]
		} else {
			head += "\r\n\r\n"
		}
		var r h1Request
		if parseRequestHead(head, &r) != nil || !r.plain() {
			return
		}
		std, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
		if err != nil {
			t.Fatalf("lean parser took %q, net/http refuses it: %v", head, err)
		}
		if rec := serveOnce(head); rec == http.StatusBadRequest {
			t.Fatalf("lean parser took %q, the net/http server answers 400", head)
		}
		if std.Method != r.method || std.RequestURI != r.target {
			t.Fatalf("%q: lean %s %s, net/http %s %s", head, r.method, r.target, std.Method, std.RequestURI)
		}
		if *std.URL != r.url {
			t.Fatalf("%q: lean URL %#v, net/http %#v", head, r.url, *std.URL)
		}
		got := http.Header{}
		for _, fl := range r.fields {
			if strings.ContainsAny(fl.name+fl.value, "\r\n") {
				t.Fatalf("%q: field %q: %q holds a line break", head, fl.name, fl.value)
			}
			if http.CanonicalHeaderKey(fl.name) != "Host" {
				got.Add(fl.name, fl.value)
			}
		}
		for k, vs := range std.Header {
			if strings.Join(got[k], "\x00") != strings.Join(vs, "\x00") {
				t.Fatalf("%q: header %s: lean %q, net/http %q", head, k, got[k], vs)
			}
		}
		if len(got) != len(std.Header) {
			t.Fatalf("%q: lean headers %v, net/http %v", head, got, std.Header)
		}
	})
}

// FuzzRelayChunked checks that the chunked relay passes through exactly
// the bytes of the body it accepts, and that net/http decodes those
// bytes as it does the original.
func FuzzRelayChunked(f *testing.F) {
	for _, s := range []string{
		"5\r\nhello\r\n0\r\n\r\n",
		"3;ext=1\r\nabc\r\n0\r\nTrailer: x\r\n\r\n",
		"ff\r\nshort\r\n",
		"0\r\n\r\nextra",
		"-1\r\n\r\n",
		"5\r\nhelloXX0\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		src := bufio.NewReader(strings.NewReader(in))
		err := relayChunked(w, src)
		w.Flush()
		if err != nil {
			return
		}
		consumed := len(in) - src.Buffered()
		if out.String() != in[:consumed] {
			t.Fatalf("relayed %q, want the accepted input %q", out.String(), in[:consumed])
		}
		want, werr := io.ReadAll(httputil.NewChunkedReader(strings.NewReader(in[:consumed])))
		got, gerr := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(out.Bytes())))
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("net/http decodes the relay as %q (%v), the input as %q (%v)", got, gerr, want, werr)
		}
	})
}

func TestParseResponseHead(t *testing.T) {
	tests := []struct {
		name, head   string
		wantErr      bool
		status       int
		length       int64
		chunked      bool
		close        bool
		wantFields   string // names kept, joined by ","
		wantStatusLn string
	}{
		{name: "length", head: "HTTP/1.1 200 OK\r\nContent-Type: a\r\nContent-Length: 12\r\n\r\n", status: 200, length: 12, wantFields: "Content-Type", wantStatusLn: "200 OK"},
		{name: "chunked wins over a length", head: "HTTP/1.1 200 OK\r\nContent-Length: 12\r\nTransfer-Encoding: chunked\r\n\r\n", status: 200, length: -1, chunked: true},
		{name: "hop-by-hop dropped", head: "HTTP/1.1 204 No Content\r\nConnection: close\r\nKeep-Alive: x\r\nUpgrade: y\r\nX-A: 1\r\n\r\n", status: 204, length: -1, close: true, wantFields: "X-A"},
		{name: "HTTP/1.0 closes", head: "HTTP/1.0 200 OK\r\n\r\n", status: 200, length: -1, close: true},
		{name: "HTTP/1.0 keep-alive", head: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", status: 200, length: 0},
		{name: "no reason phrase", head: "HTTP/1.1 404\r\n\r\n", status: 404, length: -1, wantStatusLn: "404"},
		{name: "empty reason phrase", head: "HTTP/1.1 404 \r\n\r\n", status: 404, length: -1, wantStatusLn: "404 "},
		{name: "conflicting lengths", head: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", wantErr: true},
		{name: "negative length", head: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", wantErr: true},
		{name: "other transfer coding", head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", wantErr: true},
		{name: "Connection names a header", head: "HTTP/1.1 200 OK\r\nConnection: X-Secret, close\r\nx-secret: 1\r\nX-A: 2\r\n\r\n", status: 200, length: -1, close: true, wantFields: "X-A"},
		{name: "bad status", head: "HTTP/1.1 2x0 OK\r\n\r\n", wantErr: true},
		{name: "not HTTP", head: "SSH-2.0-OpenSSH\r\n\r\n", wantErr: true},
		{name: "header without colon", head: "HTTP/1.1 200 OK\r\nnocolon\r\n\r\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r h1Response
			err := parseResponseHead([]byte(tt.head), &r)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			var names []string
			for _, f := range r.fields {
				names = append(names, string(f[0]))
			}
			if r.status != tt.status || r.contentLength != tt.length || r.chunked != tt.chunked || r.close != tt.close || strings.Join(names, ",") != tt.wantFields {
				t.Errorf("got status %d length %d chunked %v close %v fields %q; want %d %d %v %v %q",
					r.status, r.contentLength, r.chunked, r.close, names, tt.status, tt.length, tt.chunked, tt.close, tt.wantFields)
			}
			if tt.wantStatusLn != "" && string(r.statusLine) != tt.wantStatusLn {
				t.Errorf("status line %q, want %q", r.statusLine, tt.wantStatusLn)
			}
		})
	}
}

// serveOnce runs head through a net/http server and returns its status.
func serveOnce(head string) int {
	client, server := net.Pipe()
	defer client.Close()
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	go func() { _ = srv.Serve(&oneConnListener{c: server}) }()
	defer srv.Close()
	go func() { _, _ = io.WriteString(client, head) }()
	_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(client), nil)
	if err != nil {
		return 0
	}
	return resp.StatusCode
}

// oneConnListener accepts one connection, then blocks until closed.
type oneConnListener struct {
	c    net.Conn
	once sync.Once
	done chan struct{}
	mu   sync.Mutex
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.done == nil {
		l.done = make(chan struct{})
	}
	done := l.done
	l.mu.Unlock()
	var c net.Conn
	l.once.Do(func() { c = l.c })
	if c != nil {
		return c, nil
	}
	<-done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
	}
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{} }
