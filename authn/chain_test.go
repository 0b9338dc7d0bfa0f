package authn_test

import (
	"crypto"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/requestheader"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authn/tokenfile"
	kx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/internal/testpki"
)

// TestKubeChainEdges runs the edge cases of kube-apiserver's authenticator
// chain with the real authenticators, in kube-apiserver's order.
func TestKubeChainEdges(t *testing.T) {
	t.Parallel()
	w := hostileWorld(t)
	x, err := kx509.New(w.clientCA.CertPEM, kx509.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tf, _, err := tokenfile.Parse(strings.NewReader(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	noProxy := authn.New(authn.Config{X509: x, Tokens: []authn.Token{tf}, Anonymous: true})
	// A front-proxy CA that is also the client CA: its certificates are
	// both proxies and users.
	rh, err := requestheader.New(w.clientCA.CertPEM, requestheader.Default())
	if err != nil {
		t.Fatal(err)
	}
	sharedCA := authn.New(authn.Config{RequestHeader: rh, X509: x, Tokens: []authn.Token{tf}, Anonymous: true})

	now := time.Now()
	emptyCN := w.cert(t, w.clientCA, testpki.Options{Orgs: []string{"system:masters"}})
	expired := w.cert(t, w.clientCA, testpki.Options{CN: "alice", NotBefore: now.Add(-2 * time.Hour), NotAfter: now.Add(-time.Hour)})
	proxy := w.cert(t, w.frontCA, testpki.Options{CN: "front-proxy-client"})
	proxyInClientCA := w.cert(t, w.clientCA, testpki.Options{CN: "front-proxy-client"})
	withBearer := func(r func() *http.Request, token string) func() *http.Request {
		return func() *http.Request {
			req := r()
			req.Header.Set("Authorization", "Bearer "+token)
			return req
		}
	}

	tests := []struct {
		name     string
		a        authn.Request
		r        func() *http.Request
		wantUser string // "" means refused with an error
		wantErr  string
	}{
		{name: "A.1 empty-CN cert without a front proxy falls through to anonymous", a: noProxy, r: certReq(nil, emptyCN), wantUser: authn.Anonymous},
		{name: "A.1 empty-CN cert with a front proxy configured is refused", a: w.union, r: certReq(nil, emptyCN), wantErr: "unknown authority"},
		{name: "A.1 empty-CN cert plus a valid token authenticates by token", a: w.union, r: withBearer(certReq(nil, emptyCN), goodToken), wantUser: "alice"},
		{name: "A.0 expired cert with anonymous on is refused, not anonymous", a: noProxy, r: certReq(nil, expired), wantErr: "expired"},
		{name: "A.0 expired cert plus a valid token authenticates by token", a: noProxy, r: withBearer(certReq(nil, expired), goodToken), wantUser: "alice"},
		{name: "A.0 unknown bearer token with anonymous on is refused", a: noProxy, r: bearerReq("unknown"), wantErr: "invalid bearer token"},
		{name: "A.0 no credential is anonymous", a: noProxy, r: headerReq(nil), wantUser: authn.Anonymous},
		{name: "A.0 errors of every authenticator are reported together", a: w.union, r: withBearer(certReq(nil, expired), "unknown"), wantErr: "invalid bearer token"},
		{name: "A.4 front-proxy cert without a user header is refused by x509", a: w.union, r: certReq(nil, proxy), wantErr: "unknown authority"},
		{name: "A.4 proxy cert also in the client CA without a user header is the proxy itself", a: sharedCA, r: certReq(nil, proxyInClientCA), wantUser: "front-proxy-client"},
		{name: "A.4 proxy cert also in the client CA with a user header is that user", a: sharedCA, r: certReq(map[string]string{"X-Remote-User": "carol"}, proxyInClientCA), wantUser: "carol"},
		{name: "A.2 Bearer token trailing authenticates token", a: noProxy, r: bearerReq(goodToken + " trailing"), wantUser: "alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, ok, err := tt.a.AuthenticateRequest(tt.r())
			if tt.wantUser == "" {
				if ok {
					t.Fatalf("authenticated as %q, want refused", resp.User.Name)
				}
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if !ok || resp.User.Name != tt.wantUser {
				t.Fatalf("got (%+v, %v, %v), want %q", resp, ok, err, tt.wantUser)
			}
			if tt.wantUser != authn.Anonymous && !slices.Contains(resp.User.Groups, authn.AllAuthenticated) {
				t.Errorf("groups %q lack %s", resp.User.Groups, authn.AllAuthenticated)
			}
		})
	}
}

// TestNewComposesTheExportedDecorators checks that New is the exported
// decorators nested in kube-apiserver's order, and nothing else: the
// chain New builds and the same chain composed by hand give the same
// answer to every request, with anonymous on and off.
func TestNewComposesTheExportedDecorators(t *testing.T) {
	t.Parallel()
	w := hostileWorld(t)
	x, err := kx509.New(w.clientCA.CertPEM, kx509.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rhOpts := requestheader.Default()
	rhOpts.AllowedNames = []string{"front-proxy-client"}
	rh, err := requestheader.New(w.frontCA.CertPEM, rhOpts)
	if err != nil {
		t.Fatal(err)
	}
	tf, _, err := tokenfile.Parse(strings.NewReader(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	sa, err := serviceaccount.New(serviceaccount.Options{Issuers: []string{saIssuer}}, []crypto.PublicKey{w.saKey.Public()})
	if err != nil {
		t.Fatal(err)
	}
	apiAuds := []string{saIssuer}
	byHand := func(anonymous bool) authn.Request {
		tokens := authn.UnionTokens(tf, authn.CacheTokens(authn.UnionTokens(sa), authn.DefaultCacheOptions()))
		a := authn.WithAuthenticatedGroup(authn.Union(rh, x, authn.Bearer(tokens), authn.WebSocketBearer(tokens)))
		if anonymous {
			a = authn.FailOnError(a, authn.NewAnonymous())
		}
		return authn.WithAPIAudiences(a, apiAuds)
	}
	good, err := w.saIssuer.Issue(serviceaccount.TokenRequest{Namespace: "default", Name: "builder", UID: "sa-uid-1"})
	if err != nil {
		t.Fatal(err)
	}
	otherAud, err := w.saIssuer.Issue(serviceaccount.TokenRequest{Namespace: "default", Name: "builder", UID: "sa-uid-1", Audiences: []string{"vault"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	alice := w.cert(t, w.clientCA, testpki.Options{CN: "alice", Orgs: []string{"dev"}})
	expired := w.cert(t, w.clientCA, testpki.Options{CN: "alice", NotBefore: now.Add(-2 * time.Hour), NotAfter: now.Add(-time.Hour)})
	stranger := w.cert(t, w.otherCA, testpki.Options{CN: "mallory"})
	proxy := w.cert(t, w.frontCA, testpki.Options{CN: "front-proxy-client"})
	requests := map[string]func() *http.Request{
		"client cert":                      certReq(nil, alice),
		"expired client cert":              certReq(nil, expired),
		"client cert from another CA":      certReq(nil, stranger),
		"front proxy with a user":          certReq(map[string]string{"X-Remote-User": "carol", "X-Remote-Group": "ops"}, proxy),
		"front proxy without a user":       certReq(nil, proxy),
		"static token":                     bearerReq(goodToken),
		"unknown token":                    bearerReq("unknown"),
		"service-account token":            bearerReq(good.Token),
		"service-account token for vault":  bearerReq(otherAud.Token),
		"no credential":                    headerReq(nil),
		"expired cert and a static token":  withBearerToken(certReq(nil, expired), goodToken),
		"spoofed identity headers, no TLS": headerReq(map[string]string{"X-Remote-User": "admin"}),
		"WebSocket bearer protocol": headerReq(map[string]string{
			"Connection": "Upgrade", "Upgrade": "websocket",
			"Sec-Websocket-Protocol": "base64url.bearer.authorization.k8s.io." + base64.RawURLEncoding.EncodeToString([]byte(goodToken)),
		}),
	}
	describe := func(a authn.Request, r *http.Request) string {
		r = r.WithContext(authn.WithAudiences(r.Context(), apiAuds))
		resp, ok, err := a.AuthenticateRequest(r)
		if !ok {
			return fmt.Sprintf("refused: %v", err)
		}
		return fmt.Sprintf("%s %q %q by %s, audiences %q", resp.User.Name, resp.User.UID, resp.User.Groups, resp.Authenticator, resp.Audiences)
	}
	for _, anonymous := range []bool{false, true} {
		composed := authn.New(authn.Config{
			RequestHeader: rh, X509: x, StaticTokens: []authn.Token{tf}, Tokens: []authn.Token{sa},
			TokenCache: authn.DefaultCacheOptions(), APIAudiences: apiAuds, Anonymous: anonymous,
		})
		hand := byHand(anonymous)
		for name, r := range requests {
			// Twice: the second answer of a token comes from the cache.
			for range 2 {
				if got, want := describe(composed, r()), describe(hand, r()); got != want {
					t.Errorf("anonymous %v, %s: New gives %s, the decorators by hand %s", anonymous, name, got, want)
				}
			}
		}
	}
	if got := describe(authn.New(authn.Config{X509: x}), certReq(nil, alice)()); !strings.HasPrefix(got, "alice") {
		t.Errorf("control: a client cert gives %s", got)
	}
}

func withBearerToken(r func() *http.Request, token string) func() *http.Request {
	return func() *http.Request {
		req := r()
		req.Header.Set("Authorization", "Bearer "+token)
		return req
	}
}
