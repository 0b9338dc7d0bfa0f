package x509_test

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	kx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/internal/testpki"
)

func newCA(t testing.TB, cn string) *testpki.Cert { return testpki.NewCA(t, cn) }

func issue(t testing.TB, ca *testpki.Cert, o testpki.Options) *testpki.Cert { return ca.Issue(t, o) }

func bundle(cas ...*testpki.Cert) []byte {
	var b []byte
	for _, ca := range cas {
		b = append(b, ca.CertPEM...)
	}
	return b
}

func tlsRequest(certs ...*testpki.Cert) *http.Request {
	r := httptest.NewRequest("GET", "https://example/", nil)
	r.TLS = &tls.ConnectionState{}
	for _, c := range certs {
		r.TLS.PeerCertificates = append(r.TLS.PeerCertificates, c.Cert)
	}
	return r
}

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func uidName(v any) pkix.AttributeTypeAndValue {
	return pkix.AttributeTypeAndValue{Type: kx509.UIDOID, Value: v}
}

// nonStringUID returns c with an INTEGER UID attribute in its parsed
// subject. crypto/x509 refuses to parse such a certificate, so the
// attribute is added after parsing; the signature still verifies.
func nonStringUID(c *testpki.Cert) *testpki.Cert {
	parsed := *c.Cert
	parsed.Subject.Names = append(slices.Clone(parsed.Subject.Names), uidName(42))
	return &testpki.Cert{Cert: &parsed}
}

var errFormat = regexp.MustCompile(`^verifying certificate SN=-?\d+, SKID=[0-9A-F:]*, AKID=[0-9A-F:]* failed: `)

func TestAuthenticateRequest(t *testing.T) {
	t.Parallel()
	ca := newCA(t, "client-ca")
	ca2 := newCA(t, "client-ca-2")
	other := newCA(t, "other-ca")
	inter := ca.Intermediate(t, "client-intermediate")
	serverCA := testpki.SelfSigned(t, testpki.Options{CN: "server-ca", IsCA: true, EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	now := time.Now()
	a, err := kx509.New(bundle(ca, ca2, serverCA), kx509.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Each O in its own RDN keeps the order written; several O values in
	// one RDN are a DER SET, which sorts them.
	orgOID := asn1.ObjectIdentifier{2, 5, 4, 10}
	alice := issue(t, ca, testpki.Options{CN: "alice", ExtraNames: []pkix.AttributeTypeAndValue{
		{Type: orgOID, Value: "zeta"}, {Type: orgOID, Value: "system:masters"}, {Type: orgOID, Value: "alpha"},
	}})

	tests := []struct {
		name       string
		r          *http.Request
		wantUser   *authn.User
		wantErr    string // substring; "" means no error
		wantFormat bool   // the error names the cert as kube does
	}{
		{name: "A.1 no TLS is not mine", r: httptest.NewRequest("GET", "/", nil)},
		{name: "A.1 TLS without a client certificate is not mine", r: tlsRequest()},
		{name: "A.1 CN is the name and O are the groups in order", r: tlsRequest(alice), wantUser: &authn.User{Name: "alice", Groups: []string{"zeta", "system:masters", "alpha"}}},
		{name: "A.1 a second CA in the bundle is trusted", r: tlsRequest(issue(t, ca2, testpki.Options{CN: "bob"})), wantUser: &authn.User{Name: "bob"}},
		{name: "A.1 a chain through a presented intermediate verifies", r: tlsRequest(issue(t, inter, testpki.Options{CN: "carol"}), inter), wantUser: &authn.User{Name: "carol"}},
		{name: "A.1 a leaf without EKU is accepted for client auth", r: tlsRequest(issue(t, ca, testpki.Options{CN: "noeku", NoEKU: true})), wantUser: &authn.User{Name: "noeku"}},
		{name: "A.1 UID comes from the subject attribute", r: tlsRequest(issue(t, ca, testpki.Options{CN: "dave", ExtraNames: []pkix.AttributeTypeAndValue{uidName("uid-1")}})), wantUser: &authn.User{Name: "dave", UID: "uid-1"}},
		{name: "A.1 empty CN is not mine", r: tlsRequest(issue(t, ca, testpki.Options{Orgs: []string{"system:masters"}}))},
		{name: "A.1 empty CN from an unknown CA is an error", r: tlsRequest(issue(t, other, testpki.Options{})), wantErr: "unknown authority", wantFormat: true},
		{name: "A.1 expired certificate is an error", r: tlsRequest(issue(t, ca, testpki.Options{CN: "old", NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-time.Hour)})), wantErr: "expired", wantFormat: true},
		{name: "A.1 not yet valid certificate is an error", r: tlsRequest(issue(t, ca, testpki.Options{CN: "early", NotBefore: now.Add(time.Hour)})), wantErr: "not yet valid", wantFormat: true},
		{name: "A.1 certificate from an unknown CA is an error", r: tlsRequest(issue(t, other, testpki.Options{CN: "alice"})), wantErr: "unknown authority", wantFormat: true},
		{name: "A.1 serverAuth-only certificate is an error", r: tlsRequest(issue(t, ca, testpki.Options{CN: "server", EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})), wantErr: "incompatible key usage", wantFormat: true},
		{name: "A.1 a missing intermediate is an error", r: tlsRequest(issue(t, inter, testpki.Options{CN: "carol"})), wantErr: "unknown authority", wantFormat: true},
		{name: "A.1 a self-signed copy of a real subject is an error", r: tlsRequest(testpki.SelfSigned(t, testpki.Options{CN: "alice", Orgs: []string{"system:masters"}})), wantErr: "unknown authority", wantFormat: true},
		{name: "A.1 system roots are not trusted", r: tlsRequest(issue(t, other, testpki.Options{CN: "x"})), wantErr: "unknown authority"},
		{name: "the CA's own certificate names its CN", r: tlsRequest(ca), wantUser: &authn.User{Name: "client-ca"}},
		{name: "an intermediate CA certificate names its CN", r: tlsRequest(inter), wantUser: &authn.User{Name: "client-intermediate"}},
		{name: "a CA certificate without client-auth usage is an error", r: tlsRequest(serverCA), wantErr: "incompatible key usage", wantFormat: true},
		{name: "A.1 two UID attributes are an error", r: tlsRequest(issue(t, ca, testpki.Options{CN: "e", ExtraNames: []pkix.AttributeTypeAndValue{uidName("1"), uidName("2")}})), wantErr: "more than one UID"},
		{name: "A.1 a non-string UID is an error", r: tlsRequest(nonStringUID(issue(t, ca, testpki.Options{CN: "e"}))), wantErr: "not a string"},
		{name: "A.1 an empty UID is an error", r: tlsRequest(issue(t, ca, testpki.Options{CN: "e", ExtraNames: []pkix.AttributeTypeAndValue{uidName("")}})), wantErr: "UID attribute is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for range 2 { // uncached, then cached: the same answer
				resp, ok, err := a.AuthenticateRequest(tt.r)
				if tt.wantErr == "" && err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				if tt.wantFormat && !errFormat.MatchString(err.Error()) {
					t.Errorf("err = %q, want it to match %s", err, errFormat)
				}
				if tt.wantUser == nil {
					if ok || resp != nil {
						t.Fatalf("got (%+v, %v), want not authenticated", resp, ok)
					}
					continue
				}
				if !ok {
					t.Fatalf("not authenticated, want %+v", tt.wantUser)
				}
				leaf := tt.r.TLS.PeerCertificates[0]
				sum := sha256.Sum256(leaf.Raw)
				got := resp.User
				// The O values in order, then system:authenticated where
				// the chain adds it; the cached response carries it.
				wantGroups := authn.AddAuthenticated(tt.wantUser.Name, slices.Clone(tt.wantUser.Groups))
				if got.Name != tt.wantUser.Name || got.UID != tt.wantUser.UID || !slices.Equal(got.Groups, wantGroups) {
					t.Errorf("user = %+v, want %+v", got, *tt.wantUser)
				}
				if want := []string{"X509SHA256=" + hex.EncodeToString(sum[:])}; !slices.Equal(got.Extra[authn.CredentialIDKey], want) || len(got.Extra) != 1 {
					t.Errorf("extra = %v, want only %s=%q", got.Extra, authn.CredentialIDKey, want)
				}
				if resp.Authenticator != "x509" {
					t.Errorf("authenticator = %q, want x509", resp.Authenticator)
				}
			}
		})
	}
}

func TestCache(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Second)
	ca := newCA(t, "client-ca")
	leaf := issue(t, ca, testpki.Options{CN: "alice", NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)})
	inter := ca.Issue(t, testpki.Options{CN: "short-intermediate", IsCA: true, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * time.Minute)})
	viaInter := issue(t, inter, testpki.Options{CN: "bob", NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)})
	early := issue(t, ca, testpki.Options{CN: "early", NotBefore: now.Add(time.Minute), NotAfter: now.Add(time.Hour)})

	type step struct {
		at     time.Duration // clock offset from now
		wantOK bool
	}
	tests := []struct {
		name  string
		r     *http.Request
		steps []step
	}{
		{name: "A.1 a cached success ends at the leaf's NotAfter", r: tlsRequest(leaf), steps: []step{
			{at: 0, wantOK: true}, {at: 59 * time.Minute, wantOK: true}, {at: time.Hour + time.Second, wantOK: false},
		}},
		{name: "A.1 a cached success ends at an intermediate's NotAfter", r: tlsRequest(viaInter, inter), steps: []step{
			{at: 0, wantOK: true}, {at: 9 * time.Minute, wantOK: true}, {at: 10*time.Minute + time.Second, wantOK: false},
		}},
		{name: "A.1 a cached failure ends when the certificate becomes valid", r: tlsRequest(early), steps: []step{
			{at: 0, wantOK: false}, {at: 30 * time.Second, wantOK: false}, {at: time.Minute, wantOK: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := &clock{now: now}
			a, err := kx509.New(ca.CertPEM, kx509.Options{Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				clk.Set(now.Add(s.at))
				_, ok, err := a.AuthenticateRequest(tt.r)
				if ok != s.wantOK {
					t.Errorf("step %d at +%v: ok = %v (err %v), want %v", i, s.at, ok, err, s.wantOK)
				}
			}
		})
	}

	t.Run("A.1 loading a CA bundle drops cached results", func(t *testing.T) {
		t.Parallel()
		other := newCA(t, "other-ca")
		a, err := kx509.New(ca.CertPEM, kx509.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := tlsRequest(leaf)
		if _, ok, err := a.AuthenticateRequest(r); !ok {
			t.Fatalf("before reload: not authenticated (%v)", err)
		}
		if err := a.Load(other.CertPEM); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := a.AuthenticateRequest(r); ok || err == nil {
			t.Fatalf("after reload without its CA: (%v, %v), want an error", ok, err)
		}
		if err := a.Load(bundle(other, ca)); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := a.AuthenticateRequest(r); !ok {
			t.Fatalf("after reload with its CA again: not authenticated (%v)", err)
		}
	})

	t.Run("A.1 a cached response is shared, not rebuilt", func(t *testing.T) {
		t.Parallel()
		a, err := kx509.New(ca.CertPEM, kx509.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := tlsRequest(leaf)
		first, _, _ := a.AuthenticateRequest(r)
		again, ok, _ := a.AuthenticateRequest(r)
		if !ok || again != first || again.User.Name != "alice" || again.Authenticator != "x509" {
			t.Errorf("second response = %p %+v, want the cached %p for alice from x509", again, again, first)
		}
	})
}

func TestLoad(t *testing.T) {
	t.Parallel()
	ca := newCA(t, "client-ca")
	leaf := issue(t, ca, testpki.Options{CN: "alice"})
	garbled := []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{name: "A.1 an empty bundle is refused", data: nil, wantErr: "no PEM certificates found"},
		{name: "A.1 a bundle of keys only is refused", data: ca.KeyPEM, wantErr: "no PEM certificates found"},
		{name: "A.1 a bundle with a garbled certificate is refused", data: append(slices.Clone(ca.CertPEM), garbled...), wantErr: "PEM block 2"},
		{name: "A.1 other PEM blocks are skipped", data: append(slices.Clone(ca.KeyPEM), ca.CertPEM...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := kx509.New(tt.data, kx509.Options{}); (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("New: err = %v, want %q", err, tt.wantErr)
			}
			a, err := kx509.New(ca.CertPEM, kx509.Options{})
			if err != nil {
				t.Fatal(err)
			}
			err = a.Load(tt.data)
			if (err == nil) != (tt.wantErr == "") {
				t.Fatalf("Load: err = %v, want %q", err, tt.wantErr)
			}
			if _, ok, _ := a.AuthenticateRequest(tlsRequest(leaf)); !ok {
				t.Errorf("after Load: not authenticated, want the old or new bundle in force")
			}
			if err != nil && strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Errorf("Load error %q quotes the input", err)
			}
		})
	}
}

func TestUIDOID(t *testing.T) {
	t.Parallel()
	t.Run("A.1 the UID attribute is OID 1.3.6.1.4.1.57683.2", func(t *testing.T) {
		t.Parallel()
		if !kx509.UIDOID.Equal(asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57683, 2}) {
			t.Errorf("UIDOID = %v", kx509.UIDOID)
		}
	})
}

func TestAuthenticatedGroupFollowsTheUser(t *testing.T) {
	t.Parallel()
	ca := newCA(t, "client-ca")
	a, err := kx509.New(ca.CertPEM, kx509.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		cn         string
		orgs       []string
		wantGroups []string
	}{
		{name: "an ordinary user gains system:authenticated", cn: "alice", orgs: []string{"devs"}, wantGroups: []string{"devs", authn.AllAuthenticated}},
		{name: "CN system:anonymous gains nothing", cn: authn.Anonymous, orgs: []string{"devs"}, wantGroups: []string{"devs"}},
		{name: "CN system:anonymous without O has no groups", cn: authn.Anonymous},
		{name: "O system:unauthenticated gains nothing", cn: "bob", orgs: []string{authn.AllUnauthenticated}, wantGroups: []string{authn.AllUnauthenticated}},
		{name: "O system:authenticated is not repeated", cn: "carol", orgs: []string{"ops", authn.AllAuthenticated}, wantGroups: []string{"ops", authn.AllAuthenticated}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tlsRequest(issue(t, ca, testpki.Options{CN: tt.cn, Orgs: tt.orgs}))
			for range 2 { // uncached, then cached
				resp, ok, err := a.AuthenticateRequest(r)
				if !ok || err != nil {
					t.Fatalf("got (%v, %v), want authenticated", ok, err)
				}
				if resp.User.Name != tt.cn || !slices.Equal(resp.User.Groups, tt.wantGroups) {
					t.Errorf("user %q groups %q, want %q groups %q", resp.User.Name, resp.User.Groups, tt.cn, tt.wantGroups)
				}
			}
		})
	}
}
