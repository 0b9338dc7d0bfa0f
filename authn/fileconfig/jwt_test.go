package fileconfig

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/jwt"
	"github.com/kubegate/kubegate/authn/jwt/jwttest"
	"github.com/kubegate/kubegate/internal/testwait"
)

const saIssuer = "https://kubernetes.default.svc.cluster.local"

func authConfig(anonymous string, issuers ...*jwttest.Issuer) string {
	s := "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n" + anonymous + "jwt:\n"
	for _, iss := range issuers {
		s += fmt.Sprintf("- issuer:\n    url: %s\n    audiences: [kubegate]\n    certificateAuthority: %q\n  claimMappings:\n    username: {claim: sub, prefix: %q}\n",
			iss.URL, iss.CAPEM(), iss.URL+"#")
	}
	return s
}

func idToken(t *testing.T, iss *jwttest.Issuer, key *jwttest.Key, sub string) string {
	now := time.Now()
	return jwttest.Sign(t, key, map[string]any{"iss": iss.URL, "aud": "kubegate", "sub": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}, nil)
}

func bearerUser(a authn.Request, path, token string) string {
	r := httptest.NewRequest("GET", path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	resp, ok, err := a.AuthenticateRequest(r)
	switch {
	case err != nil:
		return "error"
	case !ok:
		return "none"
	}
	return resp.User.Name
}

func loadJWTConfig(t *testing.T, f Flags) (authn.Request, error) {
	t.Helper()
	f.SAIssuers = []string{saIssuer}
	ac, err := Load(t.Context(), Options{Flags: f, ReloadInterval: 20 * time.Millisecond,
		JWTHealthPoll: 50 * time.Millisecond, JWTUpdateTimeout: 500 * time.Millisecond}, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	return authn.New(ac), nil
}

// An authentication configuration file is reloaded when it changes: an
// issuer added takes effect once it answers, one removed stops, and an
// invalid file keeps the configuration in force (A.8).
func TestAuthenticationConfigReloads_A8(t *testing.T) {
	k1, k2 := jwttest.NewKey(t, "a", "ES256"), jwttest.NewKey(t, "b", "ES256")
	one, two := jwttest.NewIssuer(t, k1), jwttest.NewIssuer(t, k2)
	path := filepath.Join(t.TempDir(), "auth.yaml")
	write(t, path, []byte(authConfig("", one)))
	a, err := loadJWTConfig(t, Flags{AuthenticationConfigFile: path})
	if err != nil {
		t.Fatal(err)
	}
	tok1, tok2 := idToken(t, one, k1, "ada"), idToken(t, two, k2, "bob")
	wait := func(what, token, want string) {
		t.Helper()
		testwait.For(t, 30*time.Second, what, func() (bool, string) {
			got := bearerUser(a, "/api", token)
			return got == want, got
		})
	}
	wait("first issuer", tok1, one.URL+"#ada")
	if got := bearerUser(a, "/api", tok2); got != "error" {
		t.Fatalf("a token of an issuer not configured: %s, want refused as an invalid bearer token", got)
	}
	write(t, path, []byte(authConfig("", one, two)))
	wait("second issuer added", tok2, two.URL+"#bob")
	write(t, path, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {url: http://insecure}\n"))
	write(t, path, []byte(authConfig("", two)+"# the invalid file above was skipped\n"))
	// a new token at each try: the token cache keeps a success for 10 s
	n := 0
	testwait.For(t, 30*time.Second, "first issuer removed", func() (bool, string) {
		n++
		got := bearerUser(a, "/api", idToken(t, one, k1, fmt.Sprint("user-", n)))
		return got == "error", got
	})
	if got := bearerUser(a, "/api", tok2); got != two.URL+"#bob" {
		t.Errorf("second issuer after the reload: %s", got)
	}
}

// An invalid file written over a good one leaves the good one in force.
func TestInvalidAuthenticationConfigKeepsTheOld_A8(t *testing.T) {
	k := jwttest.NewKey(t, "a", "RS256")
	iss := jwttest.NewIssuer(t, k)
	path := filepath.Join(t.TempDir(), "auth.yaml")
	write(t, path, []byte(authConfig("", iss)))
	a, err := loadJWTConfig(t, Flags{AuthenticationConfigFile: path})
	if err != nil {
		t.Fatal(err)
	}
	tok := idToken(t, iss, k, "ada")
	testwait.For(t, 30*time.Second, "issuer ready", func() (bool, string) {
		got := bearerUser(a, "/api", tok)
		return got == iss.URL+"#ada", got
	})
	for _, bad := range []string{"not: [yaml", authConfig("anonymous: {enabled: true}\n", iss)} {
		write(t, path, []byte(bad))
		time.Sleep(200 * time.Millisecond) // several polls of the file
		if got := bearerUser(a, "/api", tok); got != iss.URL+"#ada" {
			t.Errorf("after an invalid file %q: %s, want the old configuration in force", bad[:12], got)
		}
	}
}

// The anonymous section of the file limits anonymous requests to its
// paths; --anonymous-auth may not be given with it (A.8).
func TestAnonymousConditions_A8(t *testing.T) {
	iss := jwttest.NewIssuer(t, jwttest.NewKey(t, "a", "RS256"))
	path := filepath.Join(t.TempDir(), "auth.yaml")
	write(t, path, []byte(authConfig("anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n  - path: /readyz\n", iss)))
	a, err := loadJWTConfig(t, Flags{AuthenticationConfigFile: path})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/livez": authn.Anonymous, "/readyz": authn.Anonymous, "/healthz": "none", "/livez/": "none", "/api": "none"} {
		if got := bearerUser(a, path, ""); got != want {
			t.Errorf("GET %s without credentials: %s, want %s", path, got, want)
		}
	}
	// a bad token is refused, not anonymous
	if got := bearerUser(a, "/livez", "not-a-token"); got != "error" {
		t.Errorf("bad token on an anonymous path: %s, want refused", got)
	}
	if _, err := loadJWTConfig(t, Flags{AuthenticationConfigFile: path, AnonymousAuth: true, AnonymousAuthSet: true}); err == nil ||
		!strings.Contains(err.Error(), "--anonymous-auth") || !strings.Contains(err.Error(), path) {
		t.Errorf("--anonymous-auth with an anonymous section: %v", err)
	}
}

// The --oidc-* flags and the file exclude each other; the flags need the
// issuer and the client ID together; errors name the flag and the file
// (A.8).
func TestJWTConfigErrorsNameTheirSource_A8(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "auth.yaml")
	write(t, bad, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {url: \""+saIssuer+"\", audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: \"\"}}\n"))
	unknown := filepath.Join(dir, "unknown.yaml")
	write(t, unknown, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwts: []\n"))
	oidc := jwt.DefaultOIDCFlags()
	oidc.IssuerURL, oidc.Set = "https://example.com", true
	for name, c := range map[string]struct {
		f    Flags
		want []string
	}{
		"service-account issuer": {Flags{AuthenticationConfigFile: bad}, []string{"--authentication-config", bad, "jwt[0].issuer.url", "disallowed issuers"}},
		"unknown field":          {Flags{AuthenticationConfigFile: unknown}, []string{unknown, `unknown field "jwts"`}},
		"missing file":           {Flags{AuthenticationConfigFile: filepath.Join(dir, "none.yaml")}, []string{"--authentication-config", "none.yaml"}},
		"flags without client":   {Flags{OIDC: oidc}, []string{"--oidc-issuer-url and --oidc-client-id"}},
		"flags and file":         {Flags{OIDC: oidc, AuthenticationConfigFile: bad}, []string{"mutually exclusive"}},
	} {
		_, err := loadJWTConfig(t, c.f)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to say %q", name, err, w)
			}
		}
	}
}

// The legacy flags make one issuer whose user names carry the issuer URL
// as prefix by default (A.8).
func TestOIDCFlags_A8(t *testing.T) {
	k := jwttest.NewKey(t, "a", "RS256")
	iss := jwttest.NewIssuer(t, k)
	caFile := filepath.Join(t.TempDir(), "oidc-ca.crt")
	write(t, caFile, []byte(iss.CAPEM()))
	f := jwt.DefaultOIDCFlags()
	f.IssuerURL, f.ClientID, f.CAFile, f.GroupsClaim, f.GroupsPrefix, f.Set = iss.URL, "kubegate", caFile, "groups", "oidc:", true
	a, err := loadJWTConfig(t, Flags{OIDC: f})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok := jwttest.Sign(t, k, map[string]any{"iss": iss.URL, "aud": "kubegate", "sub": "ada", "groups": "dev", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}, nil)
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	var resp *authn.Response
	testwait.For(t, 30*time.Second, "issuer ready", func() (bool, string) {
		var ok bool
		var err error
		resp, ok, err = a.AuthenticateRequest(r)
		return ok, fmt.Sprint(err)
	})
	if resp.User.Name != iss.URL+"#ada" || strings.Join(resp.User.Groups, ",") != "oidc:dev,system:authenticated" {
		t.Errorf("user %+v", resp.User)
	}
	// ES256 is not among the flag's default algorithms
	es := jwttest.NewKey(t, "es", "ES256")
	iss.SetKeys(k, es)
	r.Header.Set("Authorization", "Bearer "+jwttest.Sign(t, es, map[string]any{"iss": iss.URL, "aud": "kubegate", "sub": "eve", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}, nil))
	if _, ok, err := a.AuthenticateRequest(r); ok || err == nil {
		t.Errorf("an ES256 token under the default --oidc-signing-algs: ok %v err %v", ok, err)
	}
}

// An issuer that is down makes its own tokens fail and nothing else: the
// static tokens and another issuer's tokens still work (A.8).
func TestIssuerDownFailsOnlyItsTokens_A8(t *testing.T) {
	kUp, kDown := jwttest.NewKey(t, "up", "ES256"), jwttest.NewKey(t, "down", "ES256")
	up, down := jwttest.NewIssuer(t, kUp), jwttest.NewIssuer(t, kDown)
	down.Down.Store(true)
	dir := t.TempDir()
	path, tokens := filepath.Join(dir, "auth.yaml"), filepath.Join(dir, "tokens.csv")
	write(t, path, []byte(authConfig("", up, down)))
	write(t, tokens, []byte("static-token,alice,uid-1\n"))
	a, err := loadJWTConfig(t, Flags{AuthenticationConfigFile: path, TokenAuthFile: tokens})
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the issuer that is up", func() (bool, string) {
		got := bearerUser(a, "/api", idToken(t, up, kUp, "ada"))
		return got == up.URL+"#ada", got
	})
	if got := bearerUser(a, "/api", "static-token"); got != "alice" {
		t.Errorf("static token while an issuer is down: %s", got)
	}
	if got := bearerUser(a, "/api", idToken(t, down, kDown, "bob")); got != "error" {
		t.Errorf("a token of the issuer that is down: %s, want refused", got)
	}
	// once it is back, its tokens work without a restart
	down.Down.Store(false)
	testwait.For(t, 60*time.Second, "the issuer back up", func() (bool, string) {
		got := bearerUser(a, "/api", idToken(t, down, kDown, "bob"))
		return got == down.URL+"#bob", got
	})
}

// A reloaded file whose new issuer does not answer leaves the old
// configuration in force, and takes over once the issuer answers, with
// no further change of the file (A.8).
func TestReloadWaitsForNewIssuers_A8(t *testing.T) {
	k1, k2 := jwttest.NewKey(t, "a", "ES256"), jwttest.NewKey(t, "b", "ES256")
	one, two := jwttest.NewIssuer(t, k1), jwttest.NewIssuer(t, k2)
	two.Down.Store(true)
	path := filepath.Join(t.TempDir(), "auth.yaml")
	write(t, path, []byte(authConfig("", one)))
	a, err := loadJWTConfig(t, Flags{AuthenticationConfigFile: path})
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "first issuer", func() (bool, string) {
		got := bearerUser(a, "/api", idToken(t, one, k1, "ada"))
		return got == one.URL+"#ada", got
	})
	write(t, path, []byte(authConfig("", two)))
	time.Sleep(time.Second) // two update timeouts: the new file has been tried and refused
	n := 0
	if got := bearerUser(a, "/api", idToken(t, one, k1, "still")); got != one.URL+"#still" {
		t.Fatalf("while the new issuer is down: %s, want the old configuration in force", got)
	}
	two.Down.Store(false)
	testwait.For(t, 60*time.Second, "the new configuration in force", func() (bool, string) {
		n++
		got := bearerUser(a, "/api", idToken(t, two, k2, fmt.Sprint("bob-", n)))
		return got == two.URL+"#bob-"+fmt.Sprint(n), got
	})
}

// A version of the file still being retried is dropped once the file
// holds something else: the configuration in force again, or an invalid
// file. Its issuer coming up later changes nothing (A.8).
func TestPendingReloadDroppedWhenTheFileChanges_A8(t *testing.T) {
	for _, then := range []string{"put back", "invalid"} {
		t.Run(then, func(t *testing.T) {
			k1, k2 := jwttest.NewKey(t, "a", "ES256"), jwttest.NewKey(t, "b", "ES256")
			one, two := jwttest.NewIssuer(t, k1), jwttest.NewIssuer(t, k2)
			two.Down.Store(true)
			path := filepath.Join(t.TempDir(), "auth.yaml")
			inForce := authConfig("", one)
			write(t, path, []byte(inForce))
			a, err := loadJWTConfig(t, Flags{AuthenticationConfigFile: path})
			if err != nil {
				t.Fatal(err)
			}
			testwait.For(t, 30*time.Second, "first issuer", func() (bool, string) {
				got := bearerUser(a, "/api", idToken(t, one, k1, "ada"))
				return got == one.URL+"#ada", got
			})
			write(t, path, []byte(authConfig("", one, two)))
			time.Sleep(1500 * time.Millisecond) // refused at least once; a retry is pending
			if then == "put back" {
				write(t, path, []byte(inForce))
			} else {
				write(t, path, []byte("not: [yaml"))
			}
			time.Sleep(500 * time.Millisecond) // the watch has seen it
			two.Down.Store(false)
			time.Sleep(3 * time.Second) // several retry periods
			if got := bearerUser(a, "/api", idToken(t, two, k2, "bob-"+then)); got != "error" {
				t.Errorf("issuer two after the file was %s: %s, want refused", then, got)
			}
			if got := bearerUser(a, "/api", idToken(t, one, k1, "ada-"+then)); got != one.URL+"#ada-"+then {
				t.Errorf("issuer one after the file was %s: %s", then, got)
			}
		})
	}
}

// With HealthAnonymous and --anonymous-auth not given, a request without
// credentials is anonymous on the health and version paths only; the
// flag given either way, or an anonymous section in the file, decides
// instead (A.5).
func TestHealthAnonymous_A5(t *testing.T) {
	iss := jwttest.NewIssuer(t, jwttest.NewKey(t, "a", "RS256"))
	withSection := filepath.Join(t.TempDir(), "auth.yaml")
	write(t, withSection, []byte(authConfig("anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n", iss)))
	without := filepath.Join(t.TempDir(), "auth.yaml")
	write(t, without, []byte(authConfig("", iss)))
	for name, c := range map[string]struct {
		f    Flags
		want map[string]string
	}{
		"not given": {Flags{HealthAnonymous: true},
			map[string]string{"/readyz": authn.Anonymous, "/readyz/etcd": authn.Anonymous, "/livez/ping": authn.Anonymous, "/healthz": authn.Anonymous, "/version/": authn.Anonymous, "/api": "none", "/metrics": "none"}},
		"not given, a file without a section": {Flags{HealthAnonymous: true, AuthenticationConfigFile: without},
			map[string]string{"/readyz": authn.Anonymous, "/api": "none"}},
		"true": {Flags{HealthAnonymous: true, AnonymousAuth: true, AnonymousAuthSet: true},
			map[string]string{"/readyz": authn.Anonymous, "/api": authn.Anonymous}},
		"false": {Flags{HealthAnonymous: true, AnonymousAuthSet: true},
			map[string]string{"/readyz": "none", "/version": "none", "/api": "none"}},
		"a file's section": {Flags{HealthAnonymous: true, AuthenticationConfigFile: withSection},
			map[string]string{"/livez": authn.Anonymous, "/livez/ping": "none", "/readyz": "none", "/api": "none"}},
		"kube-apiserver's default, off": {Flags{},
			map[string]string{"/readyz": "none"}},
	} {
		a, err := loadJWTConfig(t, c.f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for path, want := range c.want {
			if got := bearerUser(a, path, ""); got != want {
				t.Errorf("%s: GET %s without credentials: %s, want %s", name, path, got, want)
			}
		}
	}
}
