package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testwait"
)

// TestIdentitiesThatWouldChangeUpstreamAreRefused presents identities that
// authenticate as written but that an upstream's header parser would read
// as another user or group: whitespace at either end, or a control
// character. Each is refused with 401 before anything reaches the
// upstream, with the reason in the audit line, on both serving paths and
// in both upstream identity modes.
func TestIdentitiesThatWouldChangeUpstreamAreRefused(t *testing.T) {
	for _, mode := range []UpstreamIdentity{RequestHeaderIdentity, ImpersonateIdentity} {
		forEachProtocol(t, func(t *testing.T, proto string) {
			t.Run(string(mode), func(t *testing.T) {
				e := newEnv(t, envOptions{identity: mode, proto: proto})
				tests := []struct {
					name   string
					cert   *testpki.Cert
					header http.Header
					reason string
				}{
					{name: "CN with spaces around it", cert: e.clientCA.Issue(t, testpki.Options{CN: " kubernetes-admin "}),
						reason: `user name \" kubernetes-admin \" begins with whitespace`},
					{name: "O with a leading space", cert: e.clientCA.Issue(t, testpki.Options{CN: "mallory", Orgs: []string{" system:masters"}}),
						reason: `group \" system:masters\" begins with whitespace`},
					{name: "O with a trailing tab", cert: e.clientCA.Issue(t, testpki.Options{CN: "mallory", Orgs: []string{"system:masters\t"}}),
						reason: `group \"system:masters\\t\" contains a control character`},
					{name: "CN with a line break", cert: e.clientCA.Issue(t, testpki.Options{CN: "evil\nX-Remote-User: admin"}),
						reason: `contains a control character (U+000A)`},
				}
				if strings.HasPrefix(proto, "HTTP/2.0") {
					// HTTP/1.1 parsers trim a header value's edges before
					// the gateway sees it; HPACK does not.
					proxy := e.frontProxyCA.Issue(t, testpki.Options{CN: "front-proxy-client"})
					tests = append(tests, struct {
						name   string
						cert   *testpki.Cert
						header http.Header
						reason string
					}{name: "front proxy asserting a padded user", cert: proxy,
						header: http.Header{"X-Remote-User": {" kubernetes-admin"}, "X-Remote-Group": {"system:masters"}},
						reason: `user name \" kubernetes-admin\" begins with whitespace`})
				}
				for _, tt := range tests {
					t.Run(tt.name, func(t *testing.T) {
						before := e.up.count()
						resp, body := e.do(t, e.client(tt.cert), "GET", "/api/v1/namespaces/kube-system/secrets", tt.header)
						if resp.StatusCode != http.StatusUnauthorized {
							t.Errorf("status %d %s, want 401", resp.StatusCode, body)
						}
						if n := e.up.count(); n != before {
							t.Errorf("the upstream received %d requests, want none", n-before)
						}
						testwait.For(t, 5*time.Second, "the refusal's reason in the audit log", func() (bool, string) {
							_ = e.gateway.Flush()
							log := e.audit.String()
							return strings.Contains(log, tt.reason), "not in:\n" + log
						})
					})
				}
			})
		})
	}
}

// TestImpersonatedIdentityThatWouldChangeIsRefused asks, in impersonate
// mode, to impersonate padded names that the upstream would read as
// others (sent over HTTP/2, whose header values keep their edges): the
// gateway must not authorize one name and forward another.
func TestImpersonatedIdentityThatWouldChangeIsRefused(t *testing.T) {
	allowAll := impersonationFunc(func(context.Context, *authn.User, authorizationAttrs) (bool, string, error) {
		return true, "", nil
	})
	e := newEnv(t, envOptions{identity: ImpersonateIdentity, impersonation: allowAll, proto: "HTTP/2.0"})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	for _, h := range []http.Header{
		{"Impersonate-User": {" kubernetes-admin"}},
		{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:masters "}},
	} {
		before := e.up.count()
		resp, body := e.do(t, e.client(alice), "GET", "/api/v1/secrets", h)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "identity headers would not carry it unchanged") {
			t.Errorf("%v: status %d %s, want 400 naming the problem", h, resp.StatusCode, body)
		}
		if n := e.up.count(); n != before {
			t.Errorf("%v: the upstream received %d requests, want none", h, n-before)
		}
	}
	// A plain name still passes.
	if resp, body := e.do(t, e.client(alice), "GET", "/api/v1/secrets", http.Header{"Impersonate-User": {"bob"}}); resp.StatusCode != http.StatusOK {
		t.Errorf("impersonating bob: status %d %s, want 200", resp.StatusCode, body)
	}
}

// TestUnderscoreHeadersNeverReachTheUpstream sends identity headers spelt
// with underscores, which some servers and middleboxes read as the
// hyphenated names; none may reach the upstream, on either serving path
// or in either upstream identity mode.
func TestUnderscoreHeadersNeverReachTheUpstream(t *testing.T) {
	spoofed := http.Header{
		"X_remote_user":        {"admin"},
		"X_Remote_Group":       {"system:masters"},
		"X_remote_extra_scope": {"all"},
		"Impersonate_user":     {"admin"},
		"Impersonate_Group":    {"system:masters"},
		"X_custom_user":        {"admin"},
		"Authorization_":       {"Bearer x"},
	}
	for _, mode := range []UpstreamIdentity{RequestHeaderIdentity, ImpersonateIdentity} {
		forEachProtocol(t, func(t *testing.T, proto string) {
			t.Run(string(mode), func(t *testing.T) {
				e := newEnv(t, envOptions{identity: mode, proto: proto})
				alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
				resp, body := e.do(t, e.client(alice), "GET", "/api/v1/pods", spoofed)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d %s", resp.StatusCode, body)
				}
				for k := range e.up.last(t).header {
					if strings.Contains(k, "_") {
						t.Errorf("the upstream received %s: %q", k, e.up.last(t).header[k])
					}
				}
			})
		})
	}
}

// TestEncodedWatchesAreStreams sends watches and followed logs spelt in
// ways a substring test on the raw target misses. Each must be served as
// a stream: when the client goes away mid-stream, the upstream's request
// is cancelled at once rather than left open until the upstream writes
// again.
func TestEncodedWatchesAreStreams(t *testing.T) {
	e := newEnv(t, envOptions{})
	cancelled := make(chan bool, 1) // whether the upstream saw its request cancelled
	e.up.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"ADDED"}`+"\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			cancelled <- true
		case <-time.After(5 * time.Second):
			cancelled <- false
		}
	}
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	for _, target := range []string{
		"/api/v1/pods?wat%63h=1",
		"/api/v1/%77atch/pods",
		"/api/v1/pods?watch=yes",
		"/api/v1/pods?watch",
		"/api/v1/namespaces/default/pods/app/log?fol%6Cow=true",
	} {
		conn, br := e.dialLean(t, alice)
		io.WriteString(conn, "GET "+target+" HTTP/1.1\r\nHost: gw\r\n\r\n")
		if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatalf("%s: status line %q, %v", target, line, err)
		}
		conn.Close()
		if !<-cancelled {
			t.Errorf("%s: the upstream's request was not cancelled within 5 s of the client leaving", target)
		}
	}
}
