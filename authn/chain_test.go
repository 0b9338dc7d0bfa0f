package authn_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/requestheader"
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
