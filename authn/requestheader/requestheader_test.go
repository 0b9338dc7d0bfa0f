package requestheader_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/requestheader"
	"github.com/kubegate/kubegate/internal/filewatch"
	"github.com/kubegate/kubegate/internal/testpki"
)

// Load plugs into the file watcher.
var _ filewatch.LoadFunc = (*requestheader.Authenticator)(nil).Load

type pki struct {
	frontCA, clientCA, inter    *testpki.Cert
	proxy, other, client, viaIn *testpki.Cert
}

var (
	pkiOnce sync.Once
	shared  pki
)

func fixtures(t testing.TB) pki {
	pkiOnce.Do(func() {
		shared.frontCA = testpki.NewCA(t, "front-proxy-ca")
		shared.clientCA = testpki.NewCA(t, "client-ca")
		shared.inter = shared.frontCA.Intermediate(t, "front-proxy-intermediate")
		shared.proxy = shared.frontCA.Issue(t, testpki.Options{CN: "front-proxy-client"})
		shared.other = shared.frontCA.Issue(t, testpki.Options{CN: "some-other-proxy"})
		shared.client = shared.clientCA.Issue(t, testpki.Options{CN: "front-proxy-client"})
		shared.viaIn = shared.inter.Issue(t, testpki.Options{CN: "front-proxy-client"})
	})
	if shared.proxy == nil {
		t.Fatal("test PKI could not be made")
	}
	return shared
}

func request(certs []*testpki.Cert, headers [][2]string) *http.Request {
	r := httptest.NewRequest("GET", "https://example/", nil)
	if certs != nil {
		r.TLS = &tls.ConnectionState{}
		for _, c := range certs {
			r.TLS.PeerCertificates = append(r.TLS.PeerCertificates, c.Cert)
		}
	}
	for _, h := range headers {
		r.Header.Add(h[0], h[1])
	}
	return r
}

func TestAuthenticateRequest(t *testing.T) {
	t.Parallel()
	p := fixtures(t)
	opts := requestheader.Default()
	opts.AllowedNames = []string{"front-proxy-client"}
	a, err := requestheader.New(p.frontCA.CertPEM, opts)
	if err != nil {
		t.Fatal(err)
	}
	multi := requestheader.Options{
		UsernameHeaders:     []string{"X-Remote-User", "X-Other-User"},
		UIDHeaders:          []string{"X-Remote-Uid", "x-other-uid"},
		GroupHeaders:        []string{"X-Remote-Group", "X-Other-Group"},
		ExtraHeaderPrefixes: []string{"X-Remote-Extra-", "x-other-extra-"},
	}
	m, err := requestheader.New(p.frontCA.CertPEM, multi)
	if err != nil {
		t.Fatal(err)
	}
	proxy := []*testpki.Cert{p.proxy}
	tests := []struct {
		name     string
		a        *requestheader.Authenticator
		certs    []*testpki.Cert
		headers  [][2]string
		want     *authn.User
		wantErr  string
		wantKept []string // headers still present afterwards
	}{
		{name: "A.4 a trusted proxy's headers are the identity", a: a, certs: proxy, headers: [][2]string{{"X-Remote-User", "alice"}, {"X-Remote-Uid", "u1"}, {"X-Remote-Group", "dev"}, {"X-Remote-Extra-Scopes", "read"}},
			want: &authn.User{Name: "alice", UID: "u1", Groups: []string{"dev"}, Extra: map[string][]string{"scopes": {"read"}}}},
		{name: "A.4 the proxy certificate's CN and O are not the identity", a: a, certs: proxy, headers: [][2]string{{"X-Remote-User", "bob"}},
			want: &authn.User{Name: "bob"}},
		{name: "A.4 a chain through a presented intermediate verifies", a: a, certs: []*testpki.Cert{p.viaIn, p.inter}, headers: [][2]string{{"X-Remote-User", "bob"}},
			want: &authn.User{Name: "bob"}},
		{name: "A.4 no certificate is not mine", a: a, headers: [][2]string{{"X-Remote-User", "mallory"}}, wantKept: []string{"X-Remote-User"}},
		{name: "A.4 a client-CA certificate is an error", a: a, certs: []*testpki.Cert{p.client}, headers: [][2]string{{"X-Remote-User", "mallory"}}, wantErr: "unknown authority", wantKept: []string{"X-Remote-User"}},
		{name: "A.4 a client-CA certificate without headers is still an error", a: a, certs: []*testpki.Cert{p.client}, wantErr: "unknown authority"},
		{name: "A.4 a CN not in the allowed list is an error", a: a, certs: []*testpki.Cert{p.other}, headers: [][2]string{{"X-Remote-User", "mallory"}}, wantErr: "x509: subject with cn=some-other-proxy is not in the allowed list", wantKept: []string{"X-Remote-User"}},
		{name: "A.4 an empty allowed list accepts any verified CN", a: m, certs: []*testpki.Cert{p.other}, headers: [][2]string{{"X-Remote-User", "carol"}}, want: &authn.User{Name: "carol"}},
		{name: "the front-proxy CA's own certificate is a proxy like any other", a: m, certs: []*testpki.Cert{p.frontCA}, headers: [][2]string{{"X-Remote-User", "carol"}}, want: &authn.User{Name: "carol"}},
		{name: "the front-proxy CA's own certificate must still be an allowed name", a: a, certs: []*testpki.Cert{p.frontCA}, headers: [][2]string{{"X-Remote-User", "carol"}}, wantErr: "x509: subject with cn=front-proxy-ca is not in the allowed list", wantKept: []string{"X-Remote-User"}},
		{name: "A.4 a trusted proxy without a user name is not mine", a: a, certs: proxy, headers: [][2]string{{"X-Remote-Group", "system:masters"}}, wantKept: []string{"X-Remote-Group"}},
		{name: "A.4 an empty user name is no user name", a: a, certs: proxy, headers: [][2]string{{"X-Remote-User", ""}}, wantKept: []string{"X-Remote-User"}},
		{name: "A.4 the first non-empty user header wins", a: m, certs: proxy, headers: [][2]string{{"X-Remote-User", ""}, {"X-Other-User", "dave"}},
			want: &authn.User{Name: "dave"}},
		{name: "A.4 only the first value of a user header counts", a: m, certs: proxy, headers: [][2]string{{"X-Remote-User", ""}, {"X-Remote-User", "eve"}, {"X-Other-User", "dave"}},
			want: &authn.User{Name: "dave"}},
		{name: "A.4 the first user header in configured order wins", a: m, certs: proxy, headers: [][2]string{{"X-Other-User", "dave"}, {"X-Remote-User", "erin"}},
			want: &authn.User{Name: "erin"}},
		{name: "A.4 the first non-empty UID header wins", a: m, certs: proxy, headers: [][2]string{{"X-Remote-User", "u"}, {"X-Remote-Uid", ""}, {"X-Other-Uid", "7"}},
			want: &authn.User{Name: "u", UID: "7"}},
		{name: "A.4 every group value is kept and commas do not split", a: m, certs: proxy, headers: [][2]string{{"X-Remote-User", "u"}, {"X-Remote-Group", "a,b"}, {"X-Remote-Group", ""}, {"X-Remote-Group", "c"}, {"X-Other-Group", "d"}},
			want: &authn.User{Name: "u", Groups: []string{"a,b", "c", "d"}}},
		{name: "A.4 extra keys are lower-cased", a: a, certs: proxy, headers: [][2]string{{"X-Remote-User", "u"}, {"X-Remote-Extra-Acme-Scope", "x"}},
			want: &authn.User{Name: "u", Extra: map[string][]string{"acme-scope": {"x"}}}},
		{name: "A.4 extra keys are percent-decoded", a: a, certs: proxy, headers: [][2]string{{"X-Remote-User", "u"}, {"X-Remote-Extra-Example.com%2fScope", "x"}},
			want: &authn.User{Name: "u", Extra: map[string][]string{"example.com/scope": {"x"}}}},
		{name: "A.4 extra keys are lower-cased before decoding, so escapes keep capitals", a: a, certs: proxy, headers: [][2]string{{"X-Remote-User", "u"}, {"X-Remote-Extra-A%4Eb", "x"}},
			want: &authn.User{Name: "u", Extra: map[string][]string{"aNb": {"x"}}}},
		{name: "A.4 an undecodable extra key is kept lower-cased", a: a, certs: proxy, headers: [][2]string{{"X-Remote-User", "u"}, {"X-Remote-Extra-Bad%zzKey", "x"}},
			want: &authn.User{Name: "u", Extra: map[string][]string{"bad%zzkey": {"x"}}}},
		{name: "A.4 extra values are all kept and not decoded", a: a, certs: proxy, headers: [][2]string{{"X-Remote-User", "u"}, {"X-Remote-Extra-K", "a%2Fb"}, {"X-Remote-Extra-K", ""}, {"X-Remote-Extra-K", "c,d"}},
			want: &authn.User{Name: "u", Extra: map[string][]string{"k": {"a%2Fb", "", "c,d"}}}},
		{name: "A.4 extra prefixes are matched case-insensitively", a: m, certs: proxy, headers: [][2]string{{"X-Remote-User", "u"}, {"X-Other-Extra-K", "1"}},
			want: &authn.User{Name: "u", Extra: map[string][]string{"k": {"1"}}}},
		{name: "A.4 success removes every identity header family", a: m, certs: proxy, headers: [][2]string{{"X-Remote-User", "u"}, {"X-Other-User", "v"}, {"X-Other-Uid", "1"}, {"X-Other-Group", "g"}, {"X-Other-Extra-K", "1"}, {"Accept", "*/*"}},
			want: &authn.User{Name: "u", UID: "1", Groups: []string{"g"}, Extra: map[string][]string{"k": {"1"}}}, wantKept: []string{"Accept"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := request(tt.certs, tt.headers)
			resp, ok, err := tt.a.AuthenticateRequest(r)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if tt.want == nil {
				if ok {
					t.Fatalf("authenticated as %+v, want not", resp.User)
				}
			} else {
				if !ok {
					t.Fatalf("not authenticated, want %+v", *tt.want)
				}
				// The header groups in order, then system:authenticated
				// where the chain adds it.
				want := *tt.want
				want.Groups = authn.AddAuthenticated(want.Name, slices.Clone(want.Groups))
				if !reflect.DeepEqual(resp.User, want) {
					t.Errorf("user = %+v, want %+v", resp.User, want)
				}
				if resp.Authenticator != "requestheader" {
					t.Errorf("authenticator = %q, want requestheader", resp.Authenticator)
				}
			}
			var left []string
			for k := range r.Header {
				left = append(left, k)
			}
			slices.Sort(left)
			if want := slices.Sorted(slices.Values(tt.wantKept)); !slices.Equal(left, want) && !(len(left) == 0 && len(want) == 0) {
				t.Errorf("headers left = %q, want %q", left, want)
			}
		})
	}
}

func TestAuthenticatedGroupFollowsTheUser(t *testing.T) {
	t.Parallel()
	p := fixtures(t)
	a, err := requestheader.New(p.frontCA.CertPEM, requestheader.Default())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		headers    [][2]string
		wantGroups []string
	}{
		{name: "an ordinary user gains system:authenticated", headers: [][2]string{{"X-Remote-User", "alice"}, {"X-Remote-Group", "g1"}}, wantGroups: []string{"g1", authn.AllAuthenticated}},
		{name: "system:anonymous gains nothing", headers: [][2]string{{"X-Remote-User", authn.Anonymous}, {"X-Remote-Group", "g1"}}, wantGroups: []string{"g1"}},
		{name: "system:anonymous without groups has none", headers: [][2]string{{"X-Remote-User", authn.Anonymous}}},
		{name: "a user in system:unauthenticated gains nothing", headers: [][2]string{{"X-Remote-User", "bob"}, {"X-Remote-Group", authn.AllUnauthenticated}}, wantGroups: []string{authn.AllUnauthenticated}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, ok, err := a.AuthenticateRequest(request([]*testpki.Cert{p.proxy}, tt.headers))
			if !ok || err != nil {
				t.Fatalf("got (%v, %v), want authenticated", ok, err)
			}
			if !slices.Equal(resp.User.Groups, tt.wantGroups) {
				t.Errorf("groups = %q, want %q", resp.User.Groups, tt.wantGroups)
			}
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	p := fixtures(t)
	tests := []struct {
		name    string
		ca      []byte
		o       requestheader.Options
		wantErr string
	}{
		{name: "A.4 a user header is required", ca: p.frontCA.CertPEM, o: requestheader.Options{}, wantErr: "UsernameHeaders"},
		{name: "A.4 blank header names are refused", ca: p.frontCA.CertPEM, o: requestheader.Options{UsernameHeaders: []string{"X-Remote-User"}, GroupHeaders: []string{" "}}, wantErr: "GroupHeaders[0]: empty header name"},
		{name: "A.4 blank allowed names are refused", ca: p.frontCA.CertPEM, o: requestheader.Options{UsernameHeaders: []string{"X-Remote-User"}, AllowedNames: []string{""}}, wantErr: "AllowedNames[0]"},
		{name: "A.4 a CA bundle is required", ca: nil, o: requestheader.Default(), wantErr: "front-proxy CA bundle: no PEM certificates found"},
		{name: "A.4 kubeadm's header names are the default", ca: p.frontCA.CertPEM, o: requestheader.Default()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := requestheader.New(tt.ca, tt.o)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	p := fixtures(t)
	t.Run("A.4 reloading the front-proxy CA changes which proxies are trusted", func(t *testing.T) {
		t.Parallel()
		a, err := requestheader.New(p.frontCA.CertPEM, requestheader.Default())
		if err != nil {
			t.Fatal(err)
		}
		hdr := [][2]string{{"X-Remote-User", "u"}}
		if _, ok, err := a.AuthenticateRequest(request([]*testpki.Cert{p.proxy}, hdr)); !ok {
			t.Fatalf("before reload: %v", err)
		}
		if err := a.Load([]byte("junk")); err == nil {
			t.Fatal("Load(junk) succeeded, want an error")
		}
		if _, ok, err := a.AuthenticateRequest(request([]*testpki.Cert{p.proxy}, hdr)); !ok {
			t.Fatalf("after a failed reload the old CA must stay: %v", err)
		}
		if err := a.Load(p.clientCA.CertPEM); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := a.AuthenticateRequest(request([]*testpki.Cert{p.proxy}, hdr)); ok {
			t.Fatal("after reload to another CA the old proxy is still trusted")
		}
	})
}

func TestExtraKey(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{name: "A.4 extra key lower-cased", in: "Scopes", want: "scopes"},
		{name: "A.4 extra key percent-decoded", in: "Example.Com%2FScope", want: "example.com/scope"},
		{name: "A.4 extra key with a bad escape kept", in: "A%2", want: "a%2"},
		{name: "A.4 extra key plus is not a space", in: "a+b", want: "a+b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := requestheader.ExtraKey(tt.in); got != tt.want {
				t.Errorf("ExtraKey(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzHeaders(f *testing.F) {
	p := fixtures(f)
	a, err := requestheader.New(p.frontCA.CertPEM, requestheader.Default())
	if err != nil {
		f.Fatal(err)
	}
	f.Add("X-Remote-Extra-Example.com%2fScope", "v", "alice", "a,b")
	f.Add("X-Remote-Extra-", "", "", "")
	f.Add("x-remote-extra-%zz", "x", "bob", "")
	f.Add("X-Remote-Extra-%E2%9C%93", "\x00", "\xff", "g")
	f.Fuzz(func(t *testing.T, extraName, extraValue, user, group string) {
		if got := requestheader.ExtraKey(extraName); strings.ToLower(got) != got && !strings.Contains(strings.ToLower(extraName), "%") {
			t.Fatalf("ExtraKey(%q) = %q: not lower-cased", extraName, got)
		}
		r := request([]*testpki.Cert{p.proxy}, nil)
		r.Header[extraName] = []string{extraValue}
		r.Header["X-Remote-User"] = []string{user}
		r.Header["X-Remote-Group"] = []string{group}
		resp, ok, err := a.AuthenticateRequest(r)
		if err != nil {
			t.Fatalf("trusted proxy: unexpected error %v", err)
		}
		if ok != (user != "") {
			t.Fatalf("user %q: ok = %v", user, ok)
		}
		if !ok {
			return
		}
		if resp.User.Name != user {
			t.Fatalf("name = %q, want %q", resp.User.Name, user)
		}
		if want := authn.AddAuthenticated(user, []string{group}); group != "" && !slices.Equal(resp.User.Groups, want) {
			t.Fatalf("groups = %q, want %q", resp.User.Groups, want)
		}
		for k := range r.Header {
			l := strings.ToLower(k)
			if l == "x-remote-user" || l == "x-remote-uid" || l == "x-remote-group" || strings.HasPrefix(l, "x-remote-extra-") {
				t.Fatalf("identity header %q left after success", k)
			}
		}
	})
}
