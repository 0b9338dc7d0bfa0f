package authn_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/requestheader"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authn/tokenfile"
	kx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/internal/testpki"
)

const (
	saIssuer = "https://kubernetes.default.svc"
	// goodToken is in the token file; every hostile case is a near miss.
	goodToken = "31ada4fd-adec-460c-809a-9e56ceb75269"
)

// The token file mixes ordinary records with quoting and newline tricks;
// each tricky record is a valid record whose token differs from the
// strings an attacker would try.
var tokenFile = strings.Join([]string{
	goodToken + `,alice,1001,"dev,ops"`,
	`"quoted""token",bob,1002`,
	`"multi` + "\n" + `line",carol,1003`,
	`"comma,token",dave,1004,system:masters`,
	`#comment-token,erin,1005`,
	``,
}, "\n")

// world is everything the hostile matrix needs: the PKI, the keys and the
// union with all four authenticators configured, kube-apiserver style.
type world struct {
	// All four authenticators, with and without anonymous, followed by
	// the removal of identity headers as a server's filter does it.
	union, unionNoAnon authn.Request

	clientCA, frontCA, otherCA, inter *testpki.Cert
	saKey, otherKey                   *ecdsa.PrivateKey
	saIssuer                          *serviceaccount.Issuer
	kid                               string
	now                               time.Time
}

var (
	worldOnce sync.Once
	theWorld  *world
	worldErr  error
)

func hostileWorld(t testing.TB) *world {
	t.Helper()
	worldOnce.Do(func() { theWorld, worldErr = buildWorld(t) })
	if worldErr != nil {
		t.Fatal(worldErr)
	}
	return theWorld
}

func buildWorld(t testing.TB) (*world, error) {
	w := &world{now: time.Now()}
	w.clientCA = testpki.NewCA(t, "kubernetes")
	w.frontCA = testpki.NewCA(t, "front-proxy-ca")
	w.otherCA = testpki.NewCA(t, "kubernetes") // same name, other key
	w.inter = w.clientCA.Intermediate(t, "kubernetes-intermediate")

	var err error
	if w.saKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, err
	}
	if w.otherKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, err
	}
	if w.kid, err = serviceaccount.KeyID(w.saKey.Public()); err != nil {
		return nil, err
	}
	if w.saIssuer, err = serviceaccount.NewIssuer(w.saKey, serviceaccount.IssuerOptions{Issuer: saIssuer}); err != nil {
		return nil, err
	}

	x, err := kx509.New(w.clientCA.CertPEM, kx509.Options{})
	if err != nil {
		return nil, err
	}
	rhOpts := requestheader.Default()
	rhOpts.AllowedNames = []string{"front-proxy-client"}
	rh, err := requestheader.New(w.frontCA.CertPEM, rhOpts)
	if err != nil {
		return nil, err
	}
	tf, _, err := tokenfile.Parse(strings.NewReader(tokenFile))
	if err != nil {
		return nil, err
	}
	sa, err := serviceaccount.New(serviceaccount.Options{Issuers: []string{saIssuer}}, []crypto.PublicKey{w.saKey.Public()})
	if err != nil {
		return nil, err
	}
	c := authn.Config{
		RequestHeader: rh,
		X509:          x,
		StaticTokens:  []authn.Token{tf},
		Tokens:        []authn.Token{sa},
		TokenCache:    authn.DefaultCacheOptions(),
		APIAudiences:  []string{saIssuer},
		Anonymous:     true,
	}
	w.union = authn.StripCredentials(authn.New(c), c.IdentityHeaders()...)
	c.Anonymous = false
	w.unionNoAnon = authn.StripCredentials(authn.New(c), c.IdentityHeaders()...)
	return w, nil
}

func (w *world) cert(t testing.TB, ca *testpki.Cert, o testpki.Options) *testpki.Cert {
	return ca.Issue(t, o)
}

func b64(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(data)
}

// jwt signs header and claims with key (ES256), or leaves the signature
// empty when key is nil.
func jwt(header, claims map[string]any, key *ecdsa.PrivateKey) string {
	input := b64(header) + "." + b64(claims)
	if key == nil {
		return input + "."
	}
	sum := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		panic(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func (w *world) claims(mod func(map[string]any)) map[string]any {
	c := map[string]any{
		"iss": saIssuer,
		"sub": "system:serviceaccount:default:builder",
		"aud": []string{saIssuer},
		"iat": w.now.Unix(),
		"nbf": w.now.Unix(),
		"exp": w.now.Add(time.Hour).Unix(),
		"jti": "0f3c8d8e-0000-4000-8000-000000000001",
		"kubernetes.io": map[string]any{
			"namespace":      "default",
			"serviceaccount": map[string]any{"name": "builder", "uid": "sa-uid-1"},
		},
	}
	if mod != nil {
		mod(c)
	}
	return c
}

func (w *world) es256(kid string) map[string]any {
	h := map[string]any{"alg": "ES256", "typ": "JWT"}
	if kid != "" {
		h["kid"] = kid
	}
	return h
}

// hostileCase is one request. want is "anonymous" when the request carries
// no credential the union recognises; otherwise the request must be refused
// with an error containing want. secrets must not appear in the error.
type hostileCase struct {
	name    string
	r       func() *http.Request
	want    string
	secrets []string
}

func bearerReq(token string) func() *http.Request {
	return func() *http.Request {
		r := httptest.NewRequest("GET", "/api", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		return r
	}
}

func certReq(headers map[string]string, certs ...*testpki.Cert) func() *http.Request {
	return func() *http.Request {
		r := httptest.NewRequest("GET", "https://gateway/api", nil)
		r.TLS = &tls.ConnectionState{}
		for _, c := range certs {
			r.TLS.PeerCertificates = append(r.TLS.PeerCertificates, c.Cert)
		}
		for k, v := range headers {
			r.Header.Set(k, v)
		}
		return r
	}
}

func headerReq(headers map[string]string) func() *http.Request {
	return func() *http.Request {
		r := httptest.NewRequest("GET", "/api", nil)
		for k, v := range headers {
			r.Header.Set(k, v)
		}
		return r
	}
}

func wsReq(protocols string) func() *http.Request {
	return func() *http.Request {
		r := httptest.NewRequest("GET", "/api/v1/namespaces/default/pods/p/exec", nil)
		r.Header.Set("Connection", "Upgrade")
		r.Header.Set("Upgrade", "websocket")
		r.Header.Set("Sec-WebSocket-Protocol", protocols)
		return r
	}
}

func hostileCases(t testing.TB, w *world) []hostileCase {
	now := w.now
	spoof := map[string]string{"X-Remote-User": "system:admin", "X-Remote-Group": "system:masters", "X-Remote-Extra-Scopes": "all"}
	cert := func(ca *testpki.Cert, o testpki.Options) *testpki.Cert { return w.cert(t, ca, o) }
	valid := w.claims(nil)

	// Signature tampering: flip a bit in the last signature byte.
	tamperSig := func(tok string) string {
		b := []byte(tok)
		i := len(b) - 2
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	goodJWT := jwt(w.es256(w.kid), valid, w.saKey)
	parts := strings.Split(goodJWT, ".")
	tamperedPayload := parts[0] + "." + b64(w.claims(func(c map[string]any) { c["sub"] = "system:serviceaccount:kube-system:admin" })) + "." + parts[2]
	tamperedPrivate := parts[0] + "." + b64(w.claims(func(c map[string]any) {
		c["kubernetes.io"] = map[string]any{"namespace": "kube-system", "serviceaccount": map[string]any{"name": "admin", "uid": "x"}}
	})) + "." + parts[2]
	tamperedHeader := b64(w.es256("another-kid")) + "." + parts[1] + "." + parts[2]

	pubDER, err := x509.MarshalPKIXPublicKey(w.saKey.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	hs256 := func(key []byte, kid string) string {
		h := map[string]any{"alg": "HS256", "typ": "JWT"}
		if kid != "" {
			h["kid"] = kid
		}
		input := b64(h) + "." + b64(valid)
		m := hmac.New(sha256.New, key)
		m.Write([]byte(input))
		return input + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	none := func(kid string) string {
		h := map[string]any{"alg": "none", "typ": "JWT"}
		if kid != "" {
			h["kid"] = kid
		}
		return jwt(h, valid, nil)
	}
	withAlg := func(alg string) string {
		h := w.es256(w.kid)
		h["alg"] = alg
		return jwt(h, valid, w.saKey)
	}
	big := strings.Repeat("A", 1<<20)
	hugeJWT := b64(w.es256(w.kid)) + "." + b64(w.claims(func(c map[string]any) { c["pad"] = big })) + ".sig"
	legacy := jwt(w.es256(w.kid), map[string]any{"iss": "kubernetes/serviceaccount", "sub": "system:serviceaccount:kube-system:admin"}, w.saKey)
	wsTok := func(tok string) string {
		return authn.WebSocketProtocolPrefix + base64.RawURLEncoding.EncodeToString([]byte(tok))
	}
	expiredProxy := cert(w.frontCA, testpki.Options{CN: "front-proxy-client", NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-time.Hour)})
	proxy := cert(w.frontCA, testpki.Options{CN: "front-proxy-client"})
	otherInter := w.otherCA.Intermediate(t, "kubernetes-intermediate")
	tampered := func() *testpki.Cert {
		c := cert(w.clientCA, testpki.Options{CN: "alice"})
		raw := slices.Clone(c.Cert.Raw)
		raw[len(raw)-3] ^= 0x01 // inside the signature
		parsed, err := x509.ParseCertificate(raw)
		if err != nil {
			t.Fatal(err)
		}
		return &testpki.Cert{Cert: parsed}
	}()

	jwtCase := func(name, tok, want string) hostileCase {
		return hostileCase{name: name, r: bearerReq(tok), want: want, secrets: []string{tok, strings.Split(tok+"..", ".")[2]}}
	}
	tokCase := func(name, tok, want string) hostileCase {
		return hostileCase{name: name, r: bearerReq(tok), want: want, secrets: []string{tok}}
	}
	cases := []hostileCase{
		// Certificates presented to the x509 authenticator.
		{name: "cert expired", r: certReq(nil, cert(w.clientCA, testpki.Options{CN: "alice", NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-time.Hour)})), want: "expired"},
		{name: "cert not yet valid", r: certReq(nil, cert(w.clientCA, testpki.Options{CN: "alice", NotBefore: now.Add(time.Hour)})), want: "not yet valid"},
		{name: "cert from a wrong CA", r: certReq(nil, cert(w.otherCA, testpki.Options{CN: "alice", Orgs: []string{"system:masters"}})), want: "unknown authority"},
		{name: "cert with serverAuth EKU only", r: certReq(nil, cert(w.clientCA, testpki.Options{CN: "alice", EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})), want: "incompatible key usage"},
		{name: "cert with codeSigning EKU only", r: certReq(nil, cert(w.clientCA, testpki.Options{CN: "alice", EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}})), want: "incompatible key usage"},
		{name: "cert is another CA's own certificate", r: certReq(nil, w.otherCA), want: "unknown authority"},
		{name: "cert is a CA the client CA issued for server auth only", r: certReq(nil, cert(w.clientCA, testpki.Options{CN: "alice", IsCA: true, EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})), want: "incompatible key usage"},
		{name: "cert self-signed copying a real subject", r: certReq(nil, testpki.SelfSigned(t, testpki.Options{CN: "alice", Orgs: []string{"system:masters"}})), want: "unknown authority"},
		{name: "cert needs an intermediate that was not sent", r: certReq(nil, cert(w.inter, testpki.Options{CN: "alice"})), want: "unknown authority"},
		{name: "cert sent with an impostor intermediate", r: certReq(nil, cert(otherInter, testpki.Options{CN: "alice"}), otherInter), want: "unknown authority"},
		{name: "cert with a tampered signature", r: certReq(nil, tampered), want: "verifying certificate"},
		{name: "cert expired and serverAuth only", r: certReq(nil, cert(w.clientCA, testpki.Options{CN: "alice", NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-time.Hour), EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})), want: "verifying certificate"},
		{name: "cert with empty CN fails the front-proxy CA (A.1 edge)", r: certReq(nil, cert(w.clientCA, testpki.Options{Orgs: []string{"system:masters"}})), want: "unknown authority"},
		{name: "cert expired with a valid-looking bearer prefix", r: func() *http.Request {
			r := certReq(nil, cert(w.clientCA, testpki.Options{CN: "alice", NotAfter: now.Add(-time.Minute), NotBefore: now.Add(-time.Hour)}))()
			r.Header.Set("Authorization", "Bearer "+goodToken[:10])
			return r
		}, want: "expired", secrets: []string{goodToken[:10]}},

		// Request-header attempts.
		{name: "requestheader client-CA cert with spoofed headers", r: certReq(spoof, cert(w.clientCA, testpki.Options{})), want: "unknown authority"},
		{name: "requestheader client-CA cert named like the proxy, no CN match in x509 CA", r: certReq(spoof, cert(w.otherCA, testpki.Options{CN: "front-proxy-client"})), want: "unknown authority"},
		{name: "requestheader disallowed CN", r: certReq(spoof, cert(w.frontCA, testpki.Options{CN: "evil-proxy"})), want: "not in the allowed list"},
		{name: "requestheader empty CN not allowed", r: certReq(spoof, cert(w.frontCA, testpki.Options{})), want: "not in the allowed list"},
		{name: "requestheader expired proxy cert", r: certReq(spoof, expiredProxy), want: "expired"},
		{name: "requestheader proxy cert with serverAuth only", r: certReq(spoof, cert(w.frontCA, testpki.Options{CN: "front-proxy-client", EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})), want: "incompatible key usage"},
		{name: "requestheader front-proxy CA cert itself, not an allowed name", r: certReq(spoof, w.frontCA), want: "not in the allowed list"},
		{name: "requestheader valid proxy without user header (A.1 edge)", r: certReq(map[string]string{"X-Remote-Group": "system:masters"}, proxy), want: "unknown authority"},
		{name: "requestheader spoofed headers without a cert", r: headerReq(spoof), want: "anonymous"},
		{name: "requestheader spoofed lower-case headers without a cert", r: headerReq(map[string]string{"x-remote-user": "system:admin", "x-remote-group": "system:masters"}), want: "anonymous"},
		{name: "requestheader spoofed headers with a bad token", r: func() *http.Request {
			r := headerReq(spoof)()
			r.Header.Set("Authorization", "Bearer not-a-token")
			return r
		}, want: "invalid bearer token", secrets: []string{"not-a-token"}},

		// JWTs.
		jwtCase("jwt alg none", none(w.kid), "not allowed"),
		jwtCase("jwt alg none without kid", none(""), "not allowed"),
		jwtCase("jwt alg none with a forged signature", strings.TrimSuffix(none(w.kid), ".")+"."+parts[2], "not allowed"),
		jwtCase("jwt HS256 keyed with the public key PEM", hs256(pubPEM, w.kid), "not allowed"),
		jwtCase("jwt HS256 keyed with the public key DER", hs256(pubDER, ""), "not allowed"),
		jwtCase("jwt tampered payload", tamperedPayload, "signature"),
		jwtCase("jwt tampered private claims", tamperedPrivate, "signature"),
		jwtCase("jwt tampered header kid", tamperedHeader, "no keys"),
		jwtCase("jwt tampered signature", tamperSig(goodJWT), "signature"),
		jwtCase("jwt wrong iss", jwt(w.es256(w.kid), w.claims(func(c map[string]any) { c["iss"] = "https://evil.example" }), w.saKey), "invalid bearer token"),
		jwtCase("jwt wrong aud", jwt(w.es256(w.kid), w.claims(func(c map[string]any) { c["aud"] = []string{"https://evil.example"} }), w.saKey), "audiences"),
		jwtCase("jwt expired", jwt(w.es256(w.kid), w.claims(func(c map[string]any) { c["exp"] = now.Add(-2 * time.Minute).Unix() }), w.saKey), "expired"),
		jwtCase("jwt nbf in the future", jwt(w.es256(w.kid), w.claims(func(c map[string]any) { c["nbf"] = now.Add(2 * time.Minute).Unix() }), w.saKey), "not valid yet"),
		jwtCase("jwt iat in the future", jwt(w.es256(w.kid), w.claims(func(c map[string]any) { c["iat"] = now.Add(2 * time.Minute).Unix() }), w.saKey), "future"),
		jwtCase("jwt unknown kid", jwt(w.es256("unknown-kid"), valid, w.saKey), "no keys"),
		jwtCase("jwt signed by another key with our kid", jwt(w.es256(w.kid), valid, w.otherKey), "signature"),
		jwtCase("jwt signed by another key without kid", jwt(w.es256(""), valid, w.otherKey), "signature"),
		jwtCase("jwt RS256 header on an ES256 signature", withAlg("RS256"), "no keys"),
		jwtCase("jwt ES384 header on an ES256 signature", withAlg("ES384"), "no keys"),
		jwtCase("jwt PS256 header", withAlg("PS256"), "not allowed"),
		jwtCase("jwt garbage signature", jwt(w.es256(""), valid, nil)+"x", "malformed"),
		jwtCase("jwt two segments", parts[0]+"."+parts[1], "invalid bearer token"),
		jwtCase("jwt four segments", goodJWT+"."+parts[2], "invalid bearer token"),
		jwtCase("jwt empty signature", parts[0]+"."+parts[1]+".", "signature"),
		jwtCase("jwt payload not base64", parts[0]+".!!!."+parts[2], "invalid bearer token"),
		jwtCase("jwt JSON object instead of JWS", `{"iss":"`+saIssuer+`"}.a.b`, "invalid bearer token"),
		jwtCase("jwt legacy token with missing claims", legacy, "missing"),
		{name: "jwt of 1 MiB", r: bearerReq(hugeJWT), want: "longer than", secrets: []string{hugeJWT[:64]}},
		{name: "jwt of 1 MiB over websocket", r: wsReq("chat, " + wsTok(hugeJWT)), want: "longer than", secrets: []string{hugeJWT[:64]}},

		// Token-file near misses.
		tokCase("tokenfile CSV-quoted token as written", `"quoted""token"`, "invalid bearer token"),
		tokCase("tokenfile token cut at the embedded quote", `quoted`, "invalid bearer token"),
		tokCase("tokenfile first line of a multi-line token", `multi`, "invalid bearer token"),
		tokCase("tokenfile multi-line token with CRLF", "multi\r\nline", "invalid bearer token"),
		tokCase("tokenfile comma token without quotes", `comma`, "invalid bearer token"),
		tokCase("tokenfile record injected as a token", goodToken+`,alice,1001`, "invalid bearer token"),
		tokCase("tokenfile token with a different case", strings.ToUpper(goodToken), "invalid bearer token"),
		tokCase("tokenfile token prefix", goodToken[:len(goodToken)-1], "invalid bearer token"),
		tokCase("tokenfile token with a NUL suffix", goodToken+"\x00", "invalid bearer token"),
		tokCase("tokenfile token with a quote suffix", goodToken+`"`, "invalid bearer token"),
		tokCase("tokenfile user name as token", "alice", "invalid bearer token"),
		tokCase("tokenfile comment marker stripped", "comment-token", "invalid bearer token"),
		{name: "tokenfile token after an extra space", r: bearerReq(" " + goodToken), want: "anonymous"},
		{name: "tokenfile token in Basic auth", r: headerReq(map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(goodToken+":"))}), want: "anonymous", secrets: []string{goodToken}},
		{name: "tokenfile token as a websocket protocol without another", r: wsReq(wsTok(goodToken)), want: "missing additional subprotocol", secrets: []string{goodToken}},
		{name: "websocket two token protocols", r: wsReq("chat, " + wsTok(goodToken) + ", " + wsTok(goodToken)), want: "multiple", secrets: []string{goodToken}},
		{name: "websocket token not base64url", r: wsReq("chat, " + authn.WebSocketProtocolPrefix + "a+b/"), want: "encoding"},
		{name: "websocket unknown token", r: wsReq("chat, " + wsTok("nope-"+goodToken[:8])), want: "invalid bearer token", secrets: []string{"nope-" + goodToken[:8]}},
	}
	return cases
}

// TestHostileInputs runs every hostile case through the union with all
// four authenticators configured, with anonymous on (kube-apiserver's
// default) and off. No case may authenticate anyone but the anonymous user,
// panic, or quote a secret in its error.
func TestHostileInputs(t *testing.T) {
	t.Parallel()
	w := hostileWorld(t)
	cases := hostileCases(t, w)
	if len(cases) < 60 {
		t.Fatalf("%d hostile cases, want at least 60", len(cases))
	}
	for _, mode := range []struct {
		name string
		a    authn.Request
		anon bool
	}{{"anonymous on", w.union, true}, {"anonymous off", w.unionNoAnon, false}} {
		for _, tc := range cases {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				r := tc.r()
				resp, ok, err := mode.a.AuthenticateRequest(r)
				if tc.want == "anonymous" {
					if err != nil {
						t.Fatalf("err = %v, want no error (no credential of any kind)", err)
					}
					if mode.anon && (!ok || resp.User.Name != authn.Anonymous) {
						t.Fatalf("got (%+v, %v), want the anonymous user", resp, ok)
					}
					if !mode.anon && ok {
						t.Fatalf("authenticated as %+v with anonymous off", resp.User)
					}
					if ok {
						for k := range r.Header {
							if strings.HasPrefix(strings.ToLower(k), "x-remote-") || k == "Authorization" {
								t.Errorf("header %q forwarded after anonymous success", k)
							}
						}
					}
					return
				}
				if ok {
					t.Fatalf("authenticated as %+v by %q, want refused", resp.User, resp.Authenticator)
				}
				if err == nil {
					t.Fatalf("refused without a reason, want an error containing %q", tc.want)
				}
				msg := err.Error()
				if !strings.Contains(msg, tc.want) {
					t.Errorf("err = %q, want it to contain %q", msg, tc.want)
				}
				for _, s := range tc.secrets {
					if len(s) >= 4 && strings.Contains(msg, s) {
						t.Errorf("err quotes the secret %.20q…", s)
					}
				}
				if len(msg) > 4096 {
					t.Errorf("err is %d bytes long, want a short reason", len(msg))
				}
			})
		}
	}
}

// TestHostileWorldAuthenticates proves the matrix is not vacuous: the same
// union accepts the real credentials each hostile case imitates.
func TestHostileWorldAuthenticates(t *testing.T) {
	t.Parallel()
	w := hostileWorld(t)
	tok, err := w.saIssuer.Issue(serviceaccount.TokenRequest{Namespace: "default", Name: "builder", UID: "sa-uid-1"})
	if err != nil {
		t.Fatal(err)
	}
	proxy := w.cert(t, w.frontCA, testpki.Options{CN: "front-proxy-client"})
	tests := []struct {
		name          string
		r             func() *http.Request
		wantUser      string
		wantGroups    []string
		authenticator string
	}{
		{name: "A.0 client cert", r: certReq(nil, w.cert(t, w.clientCA, testpki.Options{CN: "alice", Orgs: []string{"dev"}})), wantUser: "alice", wantGroups: []string{"dev", "system:authenticated"}, authenticator: "x509"},
		{name: "A.0 client cert through a sent intermediate", r: certReq(nil, w.cert(t, w.inter, testpki.Options{CN: "alice"}), w.inter), wantUser: "alice", wantGroups: []string{"system:authenticated"}, authenticator: "x509"},
		{name: "client CA's own certificate", r: certReq(nil, w.clientCA), wantUser: "kubernetes", wantGroups: []string{"system:authenticated"}, authenticator: "x509"},
		{name: "intermediate CA's own certificate", r: certReq(nil, w.inter, w.clientCA), wantUser: "kubernetes-intermediate", wantGroups: []string{"system:authenticated"}, authenticator: "x509"},
		{name: "A.0 front proxy", r: certReq(map[string]string{"X-Remote-User": "bob", "X-Remote-Group": "ops"}, proxy), wantUser: "bob", wantGroups: []string{"ops", "system:authenticated"}, authenticator: "requestheader"},
		{name: "A.0 token file", r: bearerReq(goodToken), wantUser: "alice", wantGroups: []string{"dev", "ops", "system:authenticated"}, authenticator: "tokenfile"},
		{name: "A.0 token file token with embedded quote", r: bearerReq(`quoted"token`), wantUser: "bob", wantGroups: []string{"system:authenticated"}, authenticator: "tokenfile"},
		{name: "A.0 service account token", r: bearerReq(tok.Token), wantUser: "system:serviceaccount:default:builder", wantGroups: []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}, authenticator: "serviceaccount"},
		{name: "A.0 service account token over websocket", r: wsReq("v4.channel.k8s.io, " + authn.WebSocketProtocolPrefix + base64.RawURLEncoding.EncodeToString([]byte(tok.Token))), wantUser: "system:serviceaccount:default:builder", wantGroups: []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}, authenticator: "serviceaccount"},
		{name: "A.0 no credential is anonymous", r: headerReq(nil), wantUser: "system:anonymous", wantGroups: []string{"system:unauthenticated"}, authenticator: "anonymous"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.r()
			r.Header.Set("X-Remote-Extra-Smuggled", "x")
			resp, ok, err := w.union.AuthenticateRequest(r)
			if !ok {
				t.Fatalf("not authenticated: %v", err)
			}
			if resp.User.Name != tt.wantUser || !slices.Equal(resp.User.Groups, tt.wantGroups) || resp.Authenticator != tt.authenticator {
				t.Errorf("got %q in %q by %q, want %q in %q by %q", resp.User.Name, resp.User.Groups, resp.Authenticator, tt.wantUser, tt.wantGroups, tt.authenticator)
			}
			for k := range r.Header {
				if strings.HasPrefix(k, "X-Remote-") || k == "Authorization" {
					t.Errorf("header %q left after success", k)
				}
			}
		})
	}
}
