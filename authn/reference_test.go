package authn_test

import (
	"crypto/x509"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/request/union"
	kubex509 "k8s.io/apiserver/pkg/authentication/request/x509"
	kubetokenfile "k8s.io/apiserver/pkg/authentication/token/tokenfile"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/requestheader"
	"github.com/kubegate/kubegate/authn/tokenfile"
	kx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/internal/testpki"
)

// referenceTokens holds token-file users whose names or groups decide
// whether the chain adds the authenticated group.
var referenceTokens = strings.Join([]string{
	goodToken + `,alice,1001,"dev,ops"`,
	`anonymous-token,system:anonymous,2001`,
	`anonymous-with-groups-token,system:anonymous,2002,"ops,system:authenticated"`,
	`unauthenticated-token,bob,2003,"ops,system:unauthenticated"`,
	`both-token,carol,2004,"system:unauthenticated,system:authenticated"`,
	`empty-group-token,dave,2005,`,
	``,
}, "\n")

// decider authenticates a request, kubegate's way or kube-apiserver's.
type decider func(*http.Request) (decision, error)

// decision is what a chain concluded, in a form both chains share.
type decision struct {
	ok     bool
	name   string
	uid    string
	groups []string
	extra  map[string][]string
}

func (d decision) equal(o decision) bool {
	return d.ok == o.ok && d.name == o.name && d.uid == o.uid &&
		slices.Equal(d.groups, o.groups) &&
		maps.EqualFunc(d.extra, o.extra, slices.Equal[[]string])
}

// referenceChains builds, from the same CAs, token file and proxy names,
// kubegate's chain and k8s.io/apiserver's authenticators assembled as
// kube-apiserver assembles them: request-header, x509 and bearer token in
// a union, the authenticated-group adder around it, then anonymous behind
// fail-on-error.
func referenceChains(t *testing.T, w *world, allowedProxies []string) (ours, theirs decider) {
	t.Helper()
	x, err := kx509.New(w.clientCA.CertPEM, kx509.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rhOpts := requestheader.Default()
	rhOpts.AllowedNames = allowedProxies
	rh, err := requestheader.New(w.frontCA.CertPEM, rhOpts)
	if err != nil {
		t.Fatal(err)
	}
	tf, _, err := tokenfile.Parse(strings.NewReader(referenceTokens))
	if err != nil {
		t.Fatal(err)
	}
	c := authn.Config{RequestHeader: rh, X509: x, StaticTokens: []authn.Token{tf}, Anonymous: true}
	a := authn.New(c)
	ours = func(r *http.Request) (decision, error) {
		resp, ok, err := a.AuthenticateRequest(r)
		if !ok {
			return decision{}, err
		}
		u := resp.User
		return decision{ok: true, name: u.Name, uid: u.UID, groups: u.Groups, extra: u.Extra}, err
	}

	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte(referenceTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeTokens, err := kubetokenfile.NewCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	verify := func(ca *testpki.Cert) x509.VerifyOptions {
		o := kubex509.DefaultVerifyOptions()
		o.Roots = ca.Pool()
		return o
	}
	kubeProxy := headerrequest.NewDynamicVerifyOptionsSecure(
		kubex509.StaticVerifierFn(verify(w.frontCA)),
		headerrequest.StaticStringSlice(allowedProxies),
		headerrequest.StaticStringSlice{requestheader.UserHeader},
		headerrequest.StaticStringSlice{requestheader.UIDHeader},
		headerrequest.StaticStringSlice{requestheader.GroupHeader},
		headerrequest.StaticStringSlice{requestheader.ExtraHeaderPrefix},
	)
	kubeCerts := kubex509.New(verify(w.clientCA), kubex509.CommonNameUserConversion)
	kube := union.NewFailOnError(
		group.NewAuthenticatedGroupAdder(union.New(kubeProxy, kubeCerts, bearertoken.New(kubeTokens))),
		anonymous.NewAuthenticator(nil),
	)
	theirs = func(r *http.Request) (decision, error) {
		resp, ok, err := kube.AuthenticateRequest(r)
		if !ok {
			return decision{}, err
		}
		return kubeDecision(resp), err
	}
	return ours, theirs
}

func kubeDecision(resp *authenticator.Response) decision {
	u := resp.User
	return decision{ok: true, name: u.GetName(), uid: u.GetUID(), groups: u.GetGroups(), extra: u.GetExtra()}
}

// TestSameDecisionsAsKubeAPIServer runs kubegate's chain and
// k8s.io/apiserver's on the same requests and wants the same user, UID,
// groups and extra, and an error from both or from neither.
func TestSameDecisionsAsKubeAPIServer(t *testing.T) {
	t.Parallel()
	w := hostileWorld(t)
	proxy := w.cert(t, w.frontCA, testpki.Options{CN: "front-proxy-client"})
	anonCert := w.cert(t, w.clientCA, testpki.Options{CN: authn.Anonymous, Orgs: []string{"devs"}})
	anonCertNoOrg := w.cert(t, w.clientCA, testpki.Options{CN: authn.Anonymous})
	unauthCert := w.cert(t, w.clientCA, testpki.Options{CN: "erin", Orgs: []string{authn.AllUnauthenticated}})
	aliceCert := w.cert(t, w.clientCA, testpki.Options{CN: "alice", Orgs: []string{"devs"}})
	serverOnlyCA := w.cert(t, w.clientCA, testpki.Options{CN: "server-only-ca", IsCA: true, EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})

	bearer := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	withHeaders := func(a, b map[string]string) map[string]string {
		out := maps.Clone(a)
		maps.Copy(out, b)
		return out
	}
	remote := func(user string, groups ...string) map[string]string {
		h := map[string]string{requestheader.UserHeader: user}
		if len(groups) > 0 {
			h[requestheader.GroupHeader] = strings.Join(groups, ",")
		}
		return h
	}

	tests := []struct {
		name    string
		r       func() *http.Request
		proxies []string // allowed proxy names; nil: any proxy that verifies
	}{
		{name: "token user alice gains the authenticated group", r: bearerReq(goodToken)},
		{name: "token user system:anonymous gains no group", r: bearerReq("anonymous-token")},
		{name: "token user system:anonymous keeps its own groups only", r: bearerReq("anonymous-with-groups-token")},
		{name: "token user already unauthenticated gains no group", r: bearerReq("unauthenticated-token")},
		{name: "token user in both groups keeps them", r: bearerReq("both-token")},
		{name: "token user with one empty group gains the authenticated group", r: bearerReq("empty-group-token")},
		{name: "cert CN system:anonymous gains no group", r: certReq(nil, anonCert)},
		{name: "cert CN system:anonymous without O gains no group", r: certReq(nil, anonCertNoOrg)},
		{name: "cert with O system:unauthenticated gains no group", r: certReq(nil, unauthCert)},
		{name: "cert user alice gains the authenticated group", r: certReq(nil, aliceCert)},
		{name: "proxied user system:anonymous gains no group", r: certReq(remote(authn.Anonymous, "g1"), proxy), proxies: []string{"front-proxy-client"}},
		{name: "proxied user system:anonymous without groups gains none", r: certReq(remote(authn.Anonymous), proxy), proxies: []string{"front-proxy-client"}},
		{name: "proxied user already unauthenticated gains no group", r: certReq(remote("frank", authn.AllUnauthenticated), proxy), proxies: []string{"front-proxy-client"}},
		{name: "proxied user frank gains the authenticated group", r: certReq(remote("frank", "g1"), proxy), proxies: []string{"front-proxy-client"}},
		{name: "no credential is anonymous and unauthenticated", r: headerReq(nil)},
		{name: "client CA certificate as client certificate is its CN", r: certReq(nil, w.clientCA)},
		{name: "client CA certificate beside a valid token is its CN", r: certReq(bearer(goodToken), w.clientCA)},
		{name: "client CA certificate beside an unknown token is its CN", r: certReq(bearer("unknown"), w.clientCA)},
		{name: "intermediate CA certificate with its root is its CN", r: certReq(nil, w.inter, w.clientCA)},
		{name: "front-proxy CA certificate as proxy names the user", r: certReq(remote("grace", "g1"), w.frontCA)},
		{name: "front-proxy CA certificate as proxy outside the allowed names is refused", r: certReq(remote("grace"), w.frontCA), proxies: []string{"front-proxy-client"}},
		{name: "front-proxy CA certificate as proxy beside a valid token is the token user", r: certReq(withHeaders(remote("grace"), bearer(goodToken)), w.frontCA), proxies: []string{"front-proxy-client"}},
		{name: "CA certificate for server auth only is refused", r: certReq(nil, serverOnlyCA)},
		{name: "CA certificate of another CA beside a valid token is the token user", r: certReq(bearer(goodToken), w.otherCA)},
	}
	chains := map[bool][2]decider{}
	for _, restricted := range []bool{false, true} {
		var names []string
		if restricted {
			names = []string{"front-proxy-client"}
		}
		ours, theirs := referenceChains(t, w, names)
		chains[restricted] = [2]decider{ours, theirs}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := chains[tt.proxies != nil]
			got, gotErr := c[0](tt.r())
			want, wantErr := c[1](tt.r())
			if !got.equal(want) || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("kubegate: %+v, err %v\nkube-apiserver: %+v, err %v", got, gotErr, want, wantErr)
			}
		})
	}
}
