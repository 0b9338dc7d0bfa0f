package h1

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"testing"
	"time"
)

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
		var r request
		if parseRequestHead(head, &r) != nil || !r.plain(nil) {
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
			var r response
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
