package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/kubegate/kubegate/internal/testpki"
)

// TestHTTP2ServerFollowsTheFlag_A7 starts the gateway from its options,
// as kubegate gateway does, and tells by its behaviour which HTTP/2
// server took the connection. Go's HTTP/2 server, which kube-apiserver
// serves with, ends a connection whose TLS 1.2 suite RFC 9113 (section
// 9.2.2) prohibits with a GOAWAY INADEQUATE_SECURITY before any request;
// gateway/internal/h2 has no such check and answers the request. With
// the default options HTTP/2 must be Go's; --http2-fast-path, given
// explicitly, still selects gateway/internal/h2.
func TestHTTP2ServerFollowsTheFlag_A7(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fastPath bool // --http2-fast-path given
		want     string
	}{
		{"default", false, "GOAWAY INADEQUATE_SECURITY"},
		{"--http2-fast-path", true, ":status 200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startOptionsServer(t, func(o *Options) {
				// Both suites are ones kubegate serves when named; the
				// CBC one is on RFC 9113's list of suites HTTP/2 must
				// not use.
				o.TLS.CipherSuites = []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"}
				if tc.fastPath {
					o.HTTP2FastPath = true
				}
			})
			got := s.h2Get(t, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA)
			t.Logf("HTTP/2 over TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, %s: %s", tc.name, got)
			if got != tc.want {
				t.Errorf("HTTP/2 request over a prohibited TLS 1.2 suite: got %q, want %q", got, tc.want)
			}
			// Over a suite HTTP/2 allows, both servers answer.
			if got := s.h2Get(t, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256); got != ":status 200" {
				t.Errorf("HTTP/2 request over TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: got %q, want \":status 200\"", got)
			}
		})
	}
}

// optionsServer is a gateway started by NewServer and Serve, in front of
// a plain-HTTP upstream.
type optionsServer struct {
	addr   string
	client *tls.Config
}

// startOptionsServer starts the gateway from Defaults(), changed by tune,
// on a loopback port, with a client CA and a serving certificate, and
// stops it when t ends.
func startOptionsServer(t *testing.T, tune func(*Options)) *optionsServer {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"app"}}`)
	}))
	t.Cleanup(up.Close)
	clientCA, serverCA := testpki.NewCA(t, "kubernetes"), testpki.NewCA(t, "server-ca")
	dir := t.TempDir()
	caFile, _ := clientCA.WriteFiles(t, dir, "ca")
	certFile, keyFile := serverCA.Issue(t, testpki.Options{CN: "localhost", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, EKUs: []x509ExtKeyUsage{serverAuth}}).WriteFiles(t, dir, "serving")

	o := Defaults()
	o.BindAddress = "127.0.0.1"
	o.TLSCertFile, o.TLSKeyFile = certFile, keyFile
	o.ClientCAFile = caFile
	o.Upstream = up.URL
	tune(&o)
	ctx, cancel := context.WithCancel(context.Background())
	var s *Server
	// A free port, taken again by NewServer: another process may take it
	// in between, so a few tries.
	for try := 0; ; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		o.SecurePort = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		s, err = NewServer(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil {
			break
		}
		var listen *net.OpError
		if !errors.As(err, &listen) || listen.Op != "listen" || try == 4 {
			cancel()
			t.Fatal(err)
		}
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	alice := clientCA.Issue(t, testpki.Options{CN: "alice", Orgs: []string{"devs"}})
	pair, err := tls.X509KeyPair(alice.CertPEM, alice.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &optionsServer{
		addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(o.SecurePort)),
		client: &tls.Config{RootCAs: serverCA.Pool(), Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2"}, MaxVersion: tls.VersionTLS12},
	}
}

// h2Get sends one GET over HTTP/2 on a new connection whose TLS 1.2
// handshake chose suite, and says what came back first: the answer's
// status, a GOAWAY's code, or the connection's end.
func (s *optionsServer) h2Get(t *testing.T, suite uint16) string {
	t.Helper()
	tc := s.client.Clone()
	tc.CipherSuites = []uint16{suite}
	conn, err := tls.Dial("tcp", s.addr, tc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if st := conn.ConnectionState(); st.NegotiatedProtocol != "h2" || st.CipherSuite != suite {
		t.Fatalf("TLS chose protocol %q and suite %s, want h2 and %s", st.NegotiatedProtocol, tls.CipherSuiteName(st.CipherSuite), tls.CipherSuiteName(suite))
	}
	// A generous bound: either server answers at once.
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	// Both servers speak first, before reading the client's preface:
	// their SETTINGS, or the GOAWAY that ends the connection. Reading it
	// before writing keeps a connection closed at once from turning the
	// GOAWAY into a reset.
	first, err := fr.ReadFrame()
	if err != nil {
		return "closed: " + err.Error()
	}
	if f, ok := first.(*http2.GoAwayFrame); ok {
		return "GOAWAY " + f.ErrCode.String()
	}
	var block strings.Builder
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", s.addr}, {":path", "/api/v1/namespaces/default/pods/app"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		return "closed: " + err.Error()
	}
	if err := fr.WriteSettings(); err != nil {
		return "closed: " + err.Error()
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte(block.String()), EndStream: true, EndHeaders: true}); err != nil {
		return "closed: " + err.Error()
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return "closed: " + err.Error()
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			return "GOAWAY " + f.ErrCode.String()
		case *http2.MetaHeadersFrame:
			if f.StreamID == 1 {
				return ":status " + f.PseudoValue("status")
			}
		case *http2.RSTStreamFrame:
			return fmt.Sprintf("RST_STREAM %d %v", f.StreamID, f.ErrCode)
		}
	}
}
