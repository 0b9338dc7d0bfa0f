package jwt_test

// The differential tests run kubegate's JWT authenticators (the
// --authentication-config loader and the --oidc-* flags) and
// kube-apiserver's, assembled here from k8s.io/apiserver the way
// kube-apiserver assembles them, over the same configurations and tokens,
// and require the same answers (A.8).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gojwt "github.com/golang-jwt/jwt/v5"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/install"
	"k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/fileconfig"
	"github.com/kubegate/kubegate/authn/jwt"
	"github.com/kubegate/kubegate/authn/jwt/jwttest"
	"github.com/kubegate/kubegate/internal/testwait"
)

// saIssuer is the service-account issuer both sides are given; no JWT
// issuer may claim it, and it is also the API audience.
const saIssuer = fileconfig.DefaultIssuer

// outcome is what an authenticator answered, in a form both sides share.
type outcome struct {
	OK     bool
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
	Err    string
}

func (o outcome) String() string {
	if o.Err != "" {
		return fmt.Sprintf("ok=%v err=%q", o.OK, o.Err)
	}
	return fmt.Sprintf("ok=%v name=%q uid=%q groups=%q extra=%v", o.OK, o.Name, o.UID, o.Groups, o.Extra)
}

// timeRE matches the times Go prints, which kube's errors carry (the
// current time of a not-yet-valid token, say): those differ between two
// calls, so both sides' errors are compared with times elided.
var timeRE = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? [+-]\d{4} [A-Z]+( m=[+-]\d+\.\d+)?`)

func errText(err error) string {
	if err == nil {
		return ""
	}
	return timeRE.ReplaceAllString(err.Error(), "<time>")
}

func kubegateOutcome(t *testing.T, a authn.Token, token string) outcome {
	t.Helper()
	resp, ok, err := a.AuthenticateToken(context.Background(), token)
	o := outcome{OK: ok, Err: errText(err)}
	if resp != nil {
		if resp.Authenticator != jwt.Name {
			t.Errorf("kubegate: Authenticator %q, want %q", resp.Authenticator, jwt.Name)
		}
		o.Name, o.UID, o.Groups, o.Extra = resp.User.Name, resp.User.UID, resp.User.Groups, resp.User.Extra
	}
	return o.normal()
}

func kubeOutcome(a authenticator.Token, token string) outcome {
	// The API audiences in the context, as kube-apiserver's request
	// filter puts them there.
	ctx := authenticator.WithAudiences(context.Background(), authenticator.Audiences{saIssuer})
	resp, ok, err := a.AuthenticateToken(ctx, token)
	o := outcome{OK: ok, Err: errText(err)}
	if resp != nil && resp.User != nil {
		u := resp.User
		o.Name, o.UID, o.Groups, o.Extra = u.GetName(), u.GetUID(), u.GetGroups(), u.GetExtra()
	}
	return o.normal()
}

// normal makes empty and nil groups and extra alike.
func (o outcome) normal() outcome {
	if len(o.Groups) == 0 {
		o.Groups = nil
	}
	if len(o.Extra) == 0 {
		o.Extra = nil
	}
	return o
}

// kubeCodecs decode configuration files as kube-apiserver does: the
// apiserver.config.k8s.io scheme, strictly.
var kubeCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	install.Install(s)
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
}()

// kubeLoad is kube-apiserver's reading of an --authentication-config
// file: decode, then validate against the service-account issuers.
func kubeLoad(data []byte) (*apiserver.AuthenticationConfiguration, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("empty config data")
	}
	obj, err := runtime.Decode(kubeCodecs.UniversalDecoder(), data)
	if err != nil {
		return nil, err
	}
	c, ok := obj.(*apiserver.AuthenticationConfiguration)
	if !ok {
		return nil, fmt.Errorf("expected AuthenticationConfiguration, got %T", obj)
	}
	if err := validation.ValidateAuthenticationConfiguration(kubeCompiler(), c, []string{saIssuer}).ToAggregate(); err != nil {
		return nil, fmt.Errorf("invalid authentication configuration: %w", err)
	}
	return c, nil
}

var kubeCompiler = sync.OnceValue(authenticationcel.NewDefaultCompiler)

// kubeAuthenticator builds the JWT authenticators of jwts as
// kube-apiserver does: one oidc authenticator per issuer with its CA as
// static content, all in a union that stops at the first error, wrapped
// to accept the API audiences.
func kubeAuthenticator(t *testing.T, jwts []apiserver.JWTAuthenticator, algs []string) authenticator.Token {
	t.Helper()
	var ts []authenticator.Token
	for _, j := range jwts {
		var ca oidc.CAContentProvider
		if j.Issuer.CertificateAuthority != "" {
			p, err := dynamiccertificates.NewStaticCAContent("oidc-authenticator", []byte(j.Issuer.CertificateAuthority))
			if err != nil {
				t.Fatal(err)
			}
			ca = p
		}
		a, err := oidc.New(t.Context(), oidc.Options{
			JWTAuthenticator:     j,
			CAContentProvider:    ca,
			SupportedSigningAlgs: algs,
			DisallowedIssuers:    []string{saIssuer},
		})
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, a)
	}
	return authenticator.WrapAudienceAgnosticToken(authenticator.Audiences{saIssuer}, tokenunion.NewFailOnError(ts...))
}

// kubeFlagsAuthenticator is the JWT authenticator kube-apiserver makes of
// its --oidc-* flags (its ToAuthenticationConfig), written from its
// source as the reference kubegate's OIDCFlags.Authenticator is compared
// with.
func kubeFlagsAuthenticator(t *testing.T, f jwt.OIDCFlags) (apiserver.JWTAuthenticator, bool) {
	t.Helper()
	if f.IssuerURL == "" || f.ClientID == "" {
		return apiserver.JWTAuthenticator{}, false
	}
	var prefix string
	switch {
	case f.UsernamePrefix == "-":
		prefix = ""
	case f.UsernamePrefix == "" && f.UsernameClaim != "email":
		prefix = f.IssuerURL + "#"
	default:
		prefix = f.UsernamePrefix
	}
	j := apiserver.JWTAuthenticator{
		Issuer:        apiserver.Issuer{URL: f.IssuerURL, Audiences: []string{f.ClientID}},
		ClaimMappings: apiserver.ClaimMappings{Username: apiserver.PrefixedClaimOrExpression{Claim: f.UsernameClaim, Prefix: ptr.To(prefix)}},
	}
	if f.GroupsClaim != "" {
		j.ClaimMappings.Groups = apiserver.PrefixedClaimOrExpression{Claim: f.GroupsClaim, Prefix: ptr.To(f.GroupsPrefix)}
	}
	if f.CAFile != "" {
		b, err := os.ReadFile(f.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		j.Issuer.CertificateAuthority = string(b)
	}
	// kube ranges over the map, in no particular order.
	for claim, value := range f.RequiredClaims {
		j.ClaimValidationRules = append(j.ClaimValidationRules, apiserver.ClaimValidationRule{Claim: claim, RequiredValue: value})
	}
	return j, true
}

// env holds the issuers and keys the differential cases share.
type env struct {
	a, b   *jwttest.Issuer
	aRS    *jwttest.Key // RS256, published by a
	aES    *jwttest.Key // ES256, published by a
	bES    *jwttest.Key // ES256, published by b
	ghost  *jwttest.Key // RS256, published by nobody, kid "a-rs" like aRS
	ghost2 *jwttest.Key // ES256, published by nobody, kid "nobody"
	caFile string       // a's CA

	aRSPublicPEM []byte // aRS's public key, PKIX PEM
}

func newEnv(t *testing.T) *env {
	e := &env{
		aRS: jwttest.NewKey(t, "a-rs", "RS256"), aES: jwttest.NewKey(t, "a-es", "ES256"),
		bES: jwttest.NewKey(t, "b-es", "ES256"), ghost: jwttest.NewKey(t, "a-rs", "RS256"),
		ghost2: jwttest.NewKey(t, "nobody", "ES256"),
	}
	e.a = jwttest.NewIssuer(t, e.aRS, e.aES)
	e.b = jwttest.NewIssuer(t, e.bES)
	// Distributed claims endpoints of a: each answers a JWT of a's,
	// given the access token "let-me-in".
	source := func(set map[string]any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer let-me-in" {
				http.Error(w, "who are you", http.StatusUnauthorized)
				return
			}
			c := e.claims(e.a, map[string]any{"groups": []string{"from-source"}})
			for k, v := range set {
				if v == nil {
					delete(c, k)
				} else {
					c[k] = v
				}
			}
			_, _ = io.WriteString(w, e.sign(e.aES, c, nil))
		}
	}
	e.a.Handle("/claims/groups", source(nil))
	e.a.Handle("/claims/wrong-audience", source(map[string]any{"aud": "someone-else"}))
	e.a.Handle("/claims/no-groups", source(map[string]any{"groups": nil}))
	e.aRSPublicPEM = jwttest.PublicKeyPEM(t, e.aRS)
	e.caFile = filepath.Join(t.TempDir(), "a-ca.crt")
	if err := os.WriteFile(e.caFile, []byte(e.a.CAPEM()), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// claims are a's standard claims, valid for an hour, changed by set (a
// nil value deletes the claim).
func (e *env) claims(iss *jwttest.Issuer, set map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{
		"iss": iss.URL, "aud": "kubegate", "sub": "u-1234", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix(),
		"email": "ada@example.com", "email_verified": true, "groups": []string{"dev", "ops"},
	}
	for k, v := range set {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// issuerYAML is one jwt[] entry for iss, its mappings and rules already
// indented under the entry.
func issuerYAML(iss *jwttest.Issuer, issuerExtra, rest string) string {
	return fmt.Sprintf(`- issuer:
    url: %s
    certificateAuthority: |
%s
%s%s`, iss.URL, indent(iss.CAPEM(), 6), issuerExtra, rest)
}

func configYAML(entries ...string) string {
	return "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n" + strings.Join(entries, "\n") + "\n"
}

// diffConfig is one configuration of the differential table: a file, or
// --oidc-* flags, and a token the configuration accepts, to know when
// both sides have fetched the issuers' keys.
type diffConfig struct {
	yaml  func(e *env) string
	flags func(e *env) jwt.OIDCFlags
	ready func(e *env) string
}

const audKubegate = "    audiences: [kubegate]\n"

var diffConfigs = map[string]diffConfig{
	// Claims and prefixes.
	"prefixed": {yaml: func(e *env) string {
		return configYAML(issuerYAML(e.a, audKubegate, `  claimMappings:
    username: {claim: sub, prefix: "a:"}
    groups: {claim: groups, prefix: "a-group:"}
    uid: {claim: sub}`))
	}},
	"unprefixed": {yaml: func(e *env) string {
		return configYAML(issuerYAML(e.a, audKubegate, `  claimMappings:
    username: {claim: name, prefix: ""}
    groups: {claim: roles, prefix: ""}`))
	}, ready: func(e *env) string { return e.sign(e.aES, e.claims(e.a, map[string]any{"name": "ada"}), nil) }},
	"email": {yaml: func(e *env) string {
		return configYAML(issuerYAML(e.a, audKubegate, `  claimMappings:
    username: {claim: email, prefix: ""}`))
	}},
	// Two issuers; only b's tokens carry "team", which b maps to groups
	// and extra.
	"two-issuers": {yaml: func(e *env) string {
		return configYAML(issuerYAML(e.a, audKubegate, `  claimMappings:
    username: {claim: sub, prefix: "a:"}`),
			issuerYAML(e.b, audKubegate, `  claimMappings:
    username: {expression: "'b:' + claims.sub"}
    groups: {expression: "has(claims.team) ? [claims.team] : []"}
    extra:
    - key: example.com/team
      valueExpression: "has(claims.team) ? claims.team : ''"`))
	}, ready: func(e *env) string {
		return e.sign(e.aES, e.claims(e.a, nil), nil) + " " + e.sign(e.bES, e.claims(e.b, map[string]any{"team": "blue"}), nil)
	}},
	// CEL mappings: username, groups, uid and extra from expressions.
	"cel": {yaml: func(e *env) string {
		return configYAML(issuerYAML(e.a, audKubegate, `  claimMappings:
    username: {expression: "claims.preferred_username + '@corp'"}
    groups: {expression: "claims.roles"}
    uid: {expression: "'uid-' + claims.sub"}
    extra:
    - key: example.com/tenant
      valueExpression: claims.tenant
    - key: example.com/scopes
      valueExpression: "has(claims.scopes) ? claims.scopes : []"`))
	}, ready: func(e *env) string {
		return e.sign(e.aES, e.claims(e.a, map[string]any{"preferred_username": "ada", "roles": "dev", "tenant": "blue"}), nil)
	}},
	// Claim validation rules, both kinds, and a user validation rule.
	"rules": {yaml: func(e *env) string {
		return configYAML(issuerYAML(e.a, audKubegate, `  claimValidationRules:
  - claim: env
    requiredValue: prod
  - expression: "claims.exp - claims.iat <= 7200"
    message: the token lives longer than two hours
  claimMappings:
    username: {claim: sub, prefix: ""}
  userValidationRules:
  - expression: "!user.username.startsWith('system:')"
    message: "username must not start with system:"
  - expression: "user.groups.all(g, !g.startsWith('system:'))"
    message: "groups must not start with system:"`))
	}, ready: func(e *env) string { return e.sign(e.aES, e.claims(e.a, map[string]any{"env": "prod"}), nil) }},
	// Several audiences, any of which will do.
	"match-any": {yaml: func(e *env) string {
		return configYAML(issuerYAML(e.a, "    audiences: [kubegate, dashboard, ci]\n    audienceMatchPolicy: MatchAny\n", `  claimMappings:
    username: {claim: sub, prefix: ""}`))
	}},
	// Groups from a distributed claims endpoint, which both sides verify
	// with a verifier of its own made on first use.
	"distributed": {yaml: func(e *env) string {
		return configYAML(issuerYAML(e.a, audKubegate, `  claimMappings:
    username: {claim: sub, prefix: ""}
    groups: {claim: groups, prefix: "d:"}`))
	}, ready: func(e *env) string {
		return e.sign(e.aES, e.claims(e.a, distributed(e, "/claims/groups", "let-me-in")), nil)
	}},
	// The discovery document found at its own URL.
	"discovery-url": {yaml: func(e *env) string {
		return configYAML(issuerYAML(e.a, audKubegate+"    discoveryURL: "+e.a.URL+"/.well-known/openid-configuration\n", `  claimMappings:
    username: {claim: sub, prefix: ""}`))
	}},
	// The legacy flags and their defaults.
	"flags-default": {flags: func(e *env) jwt.OIDCFlags {
		f := jwt.DefaultOIDCFlags()
		f.IssuerURL, f.ClientID, f.CAFile, f.Set = e.a.URL, "kubegate", e.caFile, true
		return f
	}, ready: func(e *env) string { return e.sign(e.aRS, e.claims(e.a, nil), nil) }},
	"flags-email": {flags: func(e *env) jwt.OIDCFlags {
		f := jwt.DefaultOIDCFlags()
		f.IssuerURL, f.ClientID, f.CAFile, f.Set = e.a.URL, "kubegate", e.caFile, true
		f.UsernameClaim, f.SigningAlgs = "email", []string{"RS256", "ES256"}
		return f
	}},
	"flags-dash": {flags: func(e *env) jwt.OIDCFlags {
		f := jwt.DefaultOIDCFlags()
		f.IssuerURL, f.ClientID, f.CAFile, f.Set = e.a.URL, "kubegate", e.caFile, true
		f.UsernamePrefix, f.SigningAlgs = "-", []string{"ES256"}
		return f
	}},
	"flags-full": {flags: func(e *env) jwt.OIDCFlags {
		f := jwt.DefaultOIDCFlags()
		f.IssuerURL, f.ClientID, f.CAFile, f.Set = e.a.URL, "kubegate", e.caFile, true
		f.UsernameClaim, f.UsernamePrefix = "name", "oidc:"
		f.GroupsClaim, f.GroupsPrefix = "groups", "oidc:"
		f.RequiredClaims = map[string]string{"env": "prod"}
		f.SigningAlgs = []string{"ES256"}
		return f
	}, ready: func(e *env) string {
		return e.sign(e.aES, e.claims(e.a, map[string]any{"name": "ada", "env": "prod"}), nil)
	}},
}

// sign signs claims with k; it is called from issuer handlers too, away
// from a test's goroutine, and signing with a valid key does not fail.
func (e *env) sign(k *jwttest.Key, claims, headers map[string]any) string {
	s, err := jwttest.SignToken(k, claims, headers)
	if err != nil {
		panic(err)
	}
	return s
}

// distributed are the claims that send the groups claim to the endpoint
// at path of a's, with the access token.
func distributed(e *env, path, accessToken string) map[string]any {
	src := map[string]any{"endpoint": e.a.URL + path}
	if accessToken != "" {
		src["access_token"] = accessToken
	}
	return map[string]any{
		"groups": nil, "_claim_names": map[string]any{"groups": "src1"},
		"_claim_sources": map[string]any{"src1": src},
	}
}

func distributedCase(path, accessToken string) func(e *env) string {
	return func(e *env) string { return e.sign(e.aES, e.claims(e.a, distributed(e, path, accessToken)), nil) }
}

// unsigned joins a header and claims with the signature sig.
func unsigned(header, claims any, sig string) string {
	enc := func(v any) string {
		var b []byte
		if s, ok := v.(string); ok {
			b = []byte(s)
		} else {
			b, _ = json.Marshal(v)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(header) + "." + enc(claims) + "." + sig
}

// builtPair is one configuration built on both sides.
type builtPair struct {
	kubegate authn.Token
	kube     authenticator.Token
}

func buildPair(t *testing.T, e *env, name string, dc diffConfig) builtPair {
	t.Helper()
	o := fileconfig.Options{Flags: fileconfig.DefaultFlags()}
	var kube authenticator.Token
	if dc.flags != nil {
		f := dc.flags(e)
		o.OIDC = f
		got, ok, err := f.Authenticator()
		if err != nil || !ok {
			t.Fatalf("%s: OIDCFlags.Authenticator: ok %v err %v", name, ok, err)
		}
		want, _ := kubeFlagsAuthenticator(t, f)
		sortRules := func(rs []apiserver.ClaimValidationRule) {
			slices.SortFunc(rs, func(x, y apiserver.ClaimValidationRule) int { return strings.Compare(x.Claim, y.Claim) })
		}
		sortRules(want.ClaimValidationRules)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: OIDCFlags.Authenticator\n got %+v\nwant %+v", name, got, want)
		}
		if err := validation.ValidateAuthenticationConfiguration(kubeCompiler(),
			&apiserver.AuthenticationConfiguration{JWT: []apiserver.JWTAuthenticator{want}}, []string{saIssuer}).ToAggregate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		kube = kubeAuthenticator(t, []apiserver.JWTAuthenticator{want}, f.SigningAlgs)
	} else {
		data := []byte(dc.yaml(e))
		path := filepath.Join(t.TempDir(), name+".yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		o.AuthenticationConfigFile = path
		c, err := kubeLoad(data)
		if err != nil {
			t.Fatalf("%s: kube: %v", name, err)
		}
		kube = kubeAuthenticator(t, c.JWT, oidc.AllValidSigningAlgorithms())
	}
	ac, err := fileconfig.Load(t.Context(), o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("%s: kubegate: %v", name, err)
	}
	var p builtPair
	for _, tok := range ac.Tokens {
		if a, ok := tok.(*jwt.Authenticator); ok {
			if p.kubegate != nil {
				t.Fatalf("%s: kubegate: two JWT authenticators", name)
			}
			p.kubegate = a
		}
	}
	if p.kubegate == nil {
		t.Fatalf("%s: kubegate: no JWT authenticator among %d", name, len(ac.Tokens))
	}
	p.kube = kube
	// Both fetch the issuers' keys in the background: wait for a token the
	// configuration accepts to pass on both sides.
	ready := func(e *env) string { return e.sign(e.aES, e.claims(e.a, nil), nil) }
	if dc.ready != nil {
		ready = dc.ready
	}
	for _, tok := range strings.Fields(ready(e)) {
		testwait.For(t, 60*time.Second, name+": issuers' keys fetched", func() (bool, string) {
			g, k := kubegateOutcome(t, p.kubegate, tok), kubeOutcome(p.kube, tok)
			return g.OK && k.OK, fmt.Sprintf("kubegate %v, kube %v", g, k)
		})
	}
	return p
}

type diffCase struct {
	name   string
	config string
	token  func(e *env) string
	// wantOK is kube's answer, checked so that no case passes because both
	// sides refuse everything; wantName and wantGroups, when set, are
	// kube's user name and groups.
	wantOK     bool
	wantName   string
	wantGroups []string // checked when set
}

// signed makes a case's token: iss's standard claims changed by set,
// signed with k.
func signed(k func(e *env) *jwttest.Key, iss func(e *env) *jwttest.Issuer, set map[string]any, headers map[string]any) func(e *env) string {
	return func(e *env) string { return e.sign(k(e), e.claims(iss(e), set), headers) }
}

func keyARS(e *env) *jwttest.Key                { return e.aRS }
func keyAES(e *env) *jwttest.Key                { return e.aES }
func keyBES(e *env) *jwttest.Key                { return e.bES }
func issA(e *env) *jwttest.Issuer               { return e.a }
func issB(e *env) *jwttest.Issuer               { return e.b }
func ago(d time.Duration) int64                 { return time.Now().Add(-d).Unix() }
func ahead(d time.Duration) int64               { return time.Now().Add(d).Unix() }
func good(set map[string]any) func(*env) string { return signed(keyAES, issA, set, nil) }

var diffCases = []diffCase{
	// Validity in time; kube allows no leeway on exp and one minute on nbf.
	{name: "valid RS256", config: "prefixed", token: signed(keyARS, issA, nil, nil), wantOK: true, wantName: "a:u-1234"},
	{name: "valid ES256", config: "prefixed", token: good(nil), wantOK: true, wantName: "a:u-1234"},
	{name: "expired a minute ago", config: "prefixed", token: good(map[string]any{"exp": ago(time.Minute)})},
	{name: "expired a day ago", config: "prefixed", token: good(map[string]any{"exp": ago(24 * time.Hour), "iat": ago(25 * time.Hour)})},
	{name: "no exp", config: "prefixed", token: good(map[string]any{"exp": nil})},
	{name: "nbf within leeway", config: "prefixed", token: good(map[string]any{"nbf": ahead(30 * time.Second)}), wantOK: true},
	{name: "nbf beyond leeway", config: "prefixed", token: good(map[string]any{"nbf": ahead(10 * time.Minute)})},
	{name: "iat in the future", config: "prefixed", token: good(map[string]any{"iat": ahead(time.Hour)}), wantOK: true},
	{name: "exp as float", config: "prefixed", token: good(map[string]any{"exp": float64(ahead(time.Hour)) + 0.5}), wantOK: true},
	{name: "exp as string", config: "prefixed", token: good(map[string]any{"exp": fmt.Sprint(ahead(time.Hour))}), wantOK: true},
	{name: "expired, exp as string", config: "prefixed", token: good(map[string]any{"exp": fmt.Sprint(ago(time.Minute))})},
	// Audience and issuer.
	{name: "wrong audience", config: "prefixed", token: good(map[string]any{"aud": "someone-else"})},
	{name: "audience list with ours", config: "prefixed", token: good(map[string]any{"aud": []string{"x", "kubegate"}}), wantOK: true},
	{name: "audience list without ours", config: "prefixed", token: good(map[string]any{"aud": []string{"x", "y"}})},
	{name: "no audience", config: "prefixed", token: good(map[string]any{"aud": nil})},
	{name: "wrong issuer is not ours", config: "prefixed", token: good(map[string]any{"iss": "https://elsewhere.example.com"})},
	{name: "issuer with a trailing slash is not ours", config: "prefixed", token: func(e *env) string {
		return e.sign(e.aES, e.claims(e.a, map[string]any{"iss": e.a.URL + "/"}), nil)
	}},
	{name: "service-account issuer is not ours", config: "prefixed", token: good(map[string]any{"iss": saIssuer})},
	{name: "no issuer", config: "prefixed", token: good(map[string]any{"iss": nil})},
	{name: "issuer as number", config: "prefixed", token: good(map[string]any{"iss": 42})},
	// Keys and algorithms.
	{name: "unknown kid", config: "prefixed", token: func(e *env) string { return e.sign(e.ghost2, e.claims(e.a, nil), nil) }},
	{name: "known kid, other key", config: "prefixed", token: func(e *env) string { return e.sign(e.ghost, e.claims(e.a, nil), nil) }},
	{name: "no kid", config: "prefixed", token: signed(keyAES, issA, nil, map[string]any{"kid": nil}), wantOK: true},
	{name: "kid of the other key", config: "prefixed", token: signed(keyAES, issA, nil, map[string]any{"kid": "a-rs"})},
	{name: "b's key for a's issuer", config: "prefixed", token: signed(keyBES, issA, nil, nil)},
	{name: "alg none", config: "prefixed", token: func(e *env) string {
		return unsigned(map[string]any{"alg": "none", "typ": "JWT"}, e.claims(e.a, nil), "")
	}},
	{name: "alg none with kid", config: "prefixed", token: func(e *env) string {
		return unsigned(map[string]any{"alg": "none", "kid": "a-rs"}, e.claims(e.a, nil), "")
	}},
	{name: "HS256 keyed with the public key", config: "prefixed", token: func(e *env) string {
		tok := gojwt.NewWithClaims(gojwt.SigningMethodHS256, gojwt.MapClaims(e.claims(e.a, nil)))
		tok.Header["kid"] = "a-rs"
		s, err := tok.SignedString(e.aRSPublicPEM)
		if err != nil {
			panic(err)
		}
		return s
	}},
	{name: "header alg RS256 on an ES256 signature", config: "prefixed", token: func(e *env) string {
		s := strings.Split(e.sign(e.aES, e.claims(e.a, nil), nil), ".")
		return unsigned(map[string]any{"alg": "RS256", "kid": "a-es"}, e.claims(e.a, nil), s[2])
	}},
	{name: "tampered payload", config: "prefixed", token: func(e *env) string {
		s := strings.Split(e.sign(e.aES, e.claims(e.a, nil), nil), ".")
		s[1] = strings.Split(unsigned("", e.claims(e.a, map[string]any{"sub": "admin"}), ""), ".")[1]
		return strings.Join(s, ".")
	}},
	{name: "tampered signature", config: "prefixed", token: func(e *env) string {
		s := strings.Split(e.sign(e.aRS, e.claims(e.a, nil), nil), ".")
		b, _ := base64.RawURLEncoding.DecodeString(s[2])
		b[len(b)/2] ^= 0x40
		s[2] = base64.RawURLEncoding.EncodeToString(b)
		return strings.Join(s, ".")
	}},
	{name: "signature cut off", config: "prefixed", token: func(e *env) string {
		s := e.sign(e.aES, e.claims(e.a, nil), nil)
		return s[:strings.LastIndex(s, ".")+1]
	}},
	{name: "not a JWT", config: "prefixed", token: func(*env) string { return "abc.def" }},
	{name: "garbage segments", config: "prefixed", token: func(*env) string { return "a.b.c" }},
	// Claims to user: prefixes, groups, uid.
	{name: "group array", config: "prefixed", token: good(map[string]any{"groups": []string{"x", "y", "x"}}), wantOK: true, wantGroups: []string{"a-group:x", "a-group:y", "a-group:x"}},
	{name: "group string", config: "prefixed", token: good(map[string]any{"groups": "solo"}), wantOK: true, wantGroups: []string{"a-group:solo"}},
	{name: "group number", config: "prefixed", token: good(map[string]any{"groups": 7})},
	{name: "groups missing", config: "prefixed", token: good(map[string]any{"groups": nil}), wantOK: true},
	{name: "groups empty", config: "prefixed", token: good(map[string]any{"groups": []string{}}), wantOK: true},
	{name: "username claim missing", config: "prefixed", token: good(map[string]any{"sub": nil})},
	{name: "username claim a number", config: "prefixed", token: good(map[string]any{"sub": 12})},
	{name: "username claim empty", config: "prefixed", token: good(map[string]any{"sub": ""}), wantOK: true, wantName: "a:"},
	{name: "no prefix, name claim", config: "unprefixed", token: good(map[string]any{"name": "ada", "roles": []string{"r1"}}), wantOK: true, wantName: "ada"},
	{name: "no prefix, system name passes without a rule", config: "unprefixed", token: good(map[string]any{"name": "system:admin"}), wantOK: true, wantName: "system:admin"},
	{name: "unicode name", config: "unprefixed", token: good(map[string]any{"name": "ädå 名前"}), wantOK: true},
	// Email.
	{name: "email verified", config: "email", token: good(nil), wantOK: true, wantName: "ada@example.com"},
	{name: "email unverified", config: "email", token: good(map[string]any{"email_verified": false})},
	{name: "email_verified missing", config: "email", token: good(map[string]any{"email_verified": nil}), wantOK: true, wantName: "ada@example.com"},
	{name: "email_verified as string", config: "email", token: good(map[string]any{"email_verified": "true"})},
	{name: "email missing", config: "email", token: good(map[string]any{"email": nil})},
	// Several issuers.
	{name: "a's token, a's mapping", config: "two-issuers", token: good(nil), wantOK: true, wantName: "a:u-1234"},
	{name: "a's token with team: a ignores it", config: "two-issuers", token: good(map[string]any{"team": "red"}), wantOK: true, wantName: "a:u-1234"},
	{name: "b's token with team", config: "two-issuers", token: signed(keyBES, issB, map[string]any{"team": "blue"}, nil), wantOK: true, wantName: "b:u-1234"},
	{name: "b's token without team", config: "two-issuers", token: signed(keyBES, issB, nil, nil), wantOK: true, wantName: "b:u-1234"},
	{name: "b's issuer, a's key", config: "two-issuers", token: signed(keyAES, issB, nil, nil)},
	{name: "b's token, wrong audience", config: "two-issuers", token: signed(keyBES, issB, map[string]any{"aud": "x"}, nil)},
	{name: "third issuer is nobody's", config: "two-issuers", token: good(map[string]any{"iss": "https://third.example.com"})},
	// CEL.
	{name: "cel mappings", config: "cel", token: good(map[string]any{"preferred_username": "ada", "roles": []string{"dev", "ops"}, "tenant": "blue", "scopes": []string{"read", "write"}}), wantOK: true, wantName: "ada@corp"},
	{name: "cel username claim missing fails evaluation", config: "cel", token: good(map[string]any{"roles": "dev", "tenant": "blue"})},
	{name: "cel groups of the wrong type", config: "cel", token: good(map[string]any{"preferred_username": "ada", "roles": 3, "tenant": "blue"})},
	{name: "cel extra missing", config: "cel", token: good(map[string]any{"preferred_username": "ada", "roles": "dev"})},
	{name: "cel extra empty string", config: "cel", token: good(map[string]any{"preferred_username": "ada", "roles": "dev", "tenant": ""}), wantOK: true},
	// Validation rules.
	{name: "required claim present", config: "rules", token: good(map[string]any{"env": "prod"}), wantOK: true},
	{name: "required claim other value", config: "rules", token: good(map[string]any{"env": "dev"})},
	{name: "required claim missing", config: "rules", token: good(nil)},
	{name: "required claim not a string", config: "rules", token: good(map[string]any{"env": true})},
	{name: "claim rule expression false", config: "rules", token: good(map[string]any{"env": "prod", "exp": ahead(5 * time.Hour)})},
	{name: "user rule rejects system name", config: "rules", token: good(map[string]any{"env": "prod", "sub": "system:admin"})},
	{name: "user rule accepts system-like name", config: "rules", token: good(map[string]any{"env": "prod", "sub": "systemic"}), wantOK: true},
	// Audience match policy.
	{name: "match any: first", config: "match-any", token: good(nil), wantOK: true},
	{name: "match any: another", config: "match-any", token: good(map[string]any{"aud": "ci"}), wantOK: true},
	{name: "match any: list with one", config: "match-any", token: good(map[string]any{"aud": []string{"zz", "dashboard"}}), wantOK: true},
	{name: "match any: none", config: "match-any", token: good(map[string]any{"aud": []string{"zz", "yy"}})},
	{name: "discovery URL", config: "discovery-url", token: good(nil), wantOK: true},
	// Distributed and aggregated claims.
	{name: "distributed groups resolved", config: "distributed", token: distributedCase("/claims/groups", "let-me-in"), wantOK: true, wantGroups: []string{"d:from-source"}},
	{name: "distributed groups, refused access token", config: "distributed", token: distributedCase("/claims/groups", "wrong")},
	{name: "distributed groups, no access token", config: "distributed", token: distributedCase("/claims/groups", "")},
	{name: "distributed groups, source JWT for another audience", config: "distributed", token: distributedCase("/claims/wrong-audience", "let-me-in")},
	{name: "distributed groups, source JWT without groups", config: "distributed", token: distributedCase("/claims/no-groups", "let-me-in")},
	{name: "distributed groups, missing endpoint", config: "distributed", token: distributedCase("/claims/nothing-here", "let-me-in")},
	{name: "distributed groups next to a groups claim", config: "distributed", token: good(map[string]any{
		"_claim_names": map[string]any{"groups": "src1"}, "_claim_sources": map[string]any{"src1": map[string]any{"endpoint": "https://127.0.0.1:1/x"}},
	}), wantOK: true, wantGroups: []string{"d:dev", "d:ops"}},
	{name: "aggregated groups are not read", config: "distributed", token: good(map[string]any{
		"groups": nil, "_claim_names": map[string]any{"groups": "src1"}, "_claim_sources": map[string]any{"src1": map[string]any{"JWT": "e30.e30.e30"}},
	}), wantOK: true},
	// Distributed claims that cannot be resolved.
	{name: "distributed groups, unreachable source", config: "prefixed", token: good(map[string]any{
		"groups": nil, "_claim_names": map[string]any{"groups": "src1"},
		"_claim_sources": map[string]any{"src1": map[string]any{"endpoint": "https://127.0.0.1:1/groups"}},
	})},
	{name: "distributed groups, malformed names", config: "prefixed", token: good(map[string]any{
		"groups": nil, "_claim_names": "groups",
	})},
	{name: "distributed groups, no source", config: "prefixed", token: good(map[string]any{
		"groups": nil, "_claim_names": map[string]any{"groups": "src1"},
	})},
	// Legacy flags.
	{name: "flags: issuer# prefix for sub", config: "flags-default", token: signed(keyARS, issA, nil, nil), wantOK: true},
	{name: "flags: RS256 only by default", config: "flags-default", token: good(nil)},
	{name: "flags: email unprefixed", config: "flags-email", token: signed(keyARS, issA, nil, nil), wantOK: true, wantName: "ada@example.com"},
	{name: "flags: email unverified", config: "flags-email", token: good(map[string]any{"email_verified": false})},
	{name: "flags: dash prefix", config: "flags-dash", token: good(nil), wantOK: true, wantName: "u-1234"},
	{name: "flags: signing algs refuse RS256", config: "flags-dash", token: signed(keyARS, issA, nil, nil)},
	{name: "flags: prefixes and required claim", config: "flags-full", token: good(map[string]any{"name": "ada", "env": "prod"}), wantOK: true, wantName: "oidc:ada"},
	{name: "flags: required claim missing", config: "flags-full", token: good(map[string]any{"name": "ada"})},
	{name: "flags: required claim wrong", config: "flags-full", token: good(map[string]any{"name": "ada", "env": "qa"})},
	{name: "flags: wrong client id", config: "flags-full", token: good(map[string]any{"name": "ada", "env": "prod", "aud": "other"})},
}

// TestDifferentialAgainstKube_A8 runs every case through kubegate and
// through kube-apiserver's own assembly of k8s.io/apiserver, and requires
// the same user, groups, uid, extra, ok and error.
func TestDifferentialAgainstKube_A8(t *testing.T) {
	if len(diffCases) < 60 {
		t.Fatalf("%d cases, want at least 60", len(diffCases))
	}
	e := newEnv(t)
	built := map[string]builtPair{}
	names := slices.Sorted(maps.Keys(diffConfigs))
	for _, name := range names {
		built[name] = buildPair(t, e, name, diffConfigs[name])
	}
	used := map[string]bool{}
	for _, tc := range diffCases {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := built[tc.config]
			if !ok {
				t.Fatalf("no config %q", tc.config)
			}
			used[tc.config] = true
			tok := tc.token(e)
			got, want := kubegateOutcome(t, p.kubegate, tok), kubeOutcome(p.kube, tok)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("kubegate: %v\n    kube: %v", got, want)
			}
			if want.OK != tc.wantOK {
				t.Errorf("kube: %v, want ok=%v", want, tc.wantOK)
			}
			if tc.wantName != "" && want.Name != tc.wantName {
				t.Errorf("kube: name %q, want %q", want.Name, tc.wantName)
			}
			if tc.wantGroups != nil && !slices.Equal(want.Groups, tc.wantGroups) {
				t.Errorf("kube: groups %q, want %q", want.Groups, tc.wantGroups)
			}
			if tok != "" && strings.Contains(got.Err, tok) {
				t.Errorf("kubegate's error holds the token")
			}
		})
	}
	for _, name := range names {
		if !used[name] {
			t.Errorf("config %q has no case", name)
		}
	}
}

// TestInvalidConfigurationsAsKube_A8: a configuration file kube-apiserver
// refuses, kubegate refuses with kube's words, after the flag and the file,
// and the words name the field.
func TestInvalidConfigurationsAsKube_A8(t *testing.T) {
	const head = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n"
	one := func(issuer, rest string) string {
		return head + "jwt:\n- issuer:\n" + issuer + rest
	}
	const okIssuer = "    url: https://issuer.example.com\n    audiences: [kubegate]\n"
	const subMapping = "  claimMappings:\n    username: {claim: sub, prefix: \"\"}\n"
	cases := []struct {
		name, data string
		field      string // "" when kube's error names none
	}{
		{"empty file", "", ""},
		{"not yaml", "\t{[", ""},
		{"wrong apiVersion", "apiVersion: apiserver.config.k8s.io/v9\nkind: AuthenticationConfiguration\n", ""},
		{"wrong kind", "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n", ""},
		{"no apiVersion", "kind: AuthenticationConfiguration\n", ""},
		{"unknown field", one(okIssuer+"    foo: bar\n", subMapping), "jwt[0].issuer.foo"},
		{"unknown top-level field", head + "jwts: []\n", "jwts"},
		{"duplicate field", head + "jwt: []\njwt: []\n", "jwt"},
		{"bad URL", one("    url: \"https://exa mple.com\"\n    audiences: [kubegate]\n", subMapping), "jwt[0].issuer.url"},
		{"http issuer", one("    url: http://issuer.example.com\n    audiences: [kubegate]\n", subMapping), "jwt[0].issuer.url"},
		{"URL with a query", one("    url: https://issuer.example.com?x=1\n    audiences: [kubegate]\n", subMapping), "jwt[0].issuer.url"},
		{"no URL", one("    audiences: [kubegate]\n", subMapping), "jwt[0].issuer.url"},
		{"duplicate issuers", head + "jwt:\n- issuer:\n" + okIssuer + subMapping + "- issuer:\n" + okIssuer + subMapping, "jwt[1].issuer.url"},
		{"service-account issuer", one("    url: "+saIssuer+"\n    audiences: [kubegate]\n", subMapping), "jwt[0].issuer.url"},
		{"http discovery URL", one(okIssuer+"    discoveryURL: http://issuer.example.com/.well-known/openid-configuration\n", subMapping), "jwt[0].issuer.discoveryURL"},
		{"no audiences", one("    url: https://issuer.example.com\n", subMapping), "jwt[0].issuer.audiences"},
		{"duplicate audiences", one("    url: https://issuer.example.com\n    audiences: [a, a]\n    audienceMatchPolicy: MatchAny\n", subMapping), "jwt[0].issuer.audiences[1]"},
		{"several audiences, no policy", one("    url: https://issuer.example.com\n    audiences: [a, b]\n", subMapping), "jwt[0].issuer.audienceMatchPolicy"},
		{"unknown policy", one(okIssuer+"    audienceMatchPolicy: MatchAll\n", subMapping), "jwt[0].issuer.audienceMatchPolicy"},
		{"bad CA", one(okIssuer+"    certificateAuthority: not a pem\n", subMapping), "jwt[0].issuer.certificateAuthority"},
		{"no username", one(okIssuer, "  claimMappings: {}\n"), "jwt[0].claimMappings.username"},
		{"username claim without prefix", one(okIssuer, "  claimMappings:\n    username: {claim: sub}\n"), "jwt[0].claimMappings.username.prefix"},
		{"username claim and expression", one(okIssuer, "  claimMappings:\n    username: {claim: sub, prefix: \"\", expression: claims.sub}\n"), "jwt[0].claimMappings.username"},
		{"bad CEL", one(okIssuer, "  claimMappings:\n    username: {expression: \"claims.\"}\n"), "jwt[0].claimMappings.username.expression"},
		{"CEL reading user in a claim mapping", one(okIssuer, "  claimMappings:\n    username: {expression: user.username}\n"), "jwt[0].claimMappings.username.expression"},
		{"groups prefix with expression", one(okIssuer, "  claimMappings:\n    username: {expression: claims.sub}\n    groups: {expression: claims.g, prefix: x}\n"), "jwt[0].claimMappings.groups.prefix"},
		{"extra key without domain", one(okIssuer, "  claimMappings:\n    username: {expression: claims.sub}\n    extra:\n    - key: tenant\n      valueExpression: claims.t\n"), "jwt[0].claimMappings.extra[0].key"},
		{"extra key of kubernetes.io", one(okIssuer, "  claimMappings:\n    username: {expression: claims.sub}\n    extra:\n    - key: kubernetes.io/x\n      valueExpression: claims.t\n"), "jwt[0].claimMappings.extra[0].key"},
		{"extra without expression", one(okIssuer, "  claimMappings:\n    username: {expression: claims.sub}\n    extra:\n    - key: example.com/x\n"), "jwt[0].claimMappings.extra[0].valueExpression"},
		{"claim rule with claim and expression", one(okIssuer, "  claimValidationRules:\n  - {claim: env, requiredValue: prod, expression: \"true\"}\n"+subMapping), "jwt[0].claimValidationRules[0]"},
		{"claim rule bad CEL", one(okIssuer, "  claimValidationRules:\n  - {expression: \"claims.(\"}\n"+subMapping), "jwt[0].claimValidationRules[0].expression"},
		{"duplicate claim rule", one(okIssuer, "  claimValidationRules:\n  - {claim: env, requiredValue: a}\n  - {claim: env, requiredValue: b}\n"+subMapping), "jwt[0].claimValidationRules[1].claim"},
		{"user rule empty", one(okIssuer, subMapping+"  userValidationRules:\n  - {message: nope}\n"), "jwt[0].userValidationRules[0].expression"},
		{"user rule reading claims", one(okIssuer, subMapping+"  userValidationRules:\n  - {expression: \"claims.sub != ''\"}\n"), "jwt[0].userValidationRules[0].expression"},
		{"anonymous conditions while disabled", head + "anonymous:\n  enabled: false\n  conditions:\n  - path: /livez\n", "anonymous.conditions"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, kerr := kubeLoad([]byte(tc.data))
			if kerr == nil {
				t.Fatalf("kube accepts it")
			}
			path := filepath.Join(t.TempDir(), "authn.yaml")
			if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			o := fileconfig.Options{Flags: fileconfig.DefaultFlags()}
			o.AuthenticationConfigFile = path
			_, err := fileconfig.Load(t.Context(), o, slog.New(slog.DiscardHandler))
			// kubegate's error is kube's, after the flag and the file.
			if err == nil {
				t.Fatalf("kubegate accepts it; kube: %v", kerr)
			}
			got := err.Error()
			if !strings.HasPrefix(got, "--authentication-config") || !strings.Contains(got, path) ||
				!strings.HasSuffix(got, ": "+kerr.Error()) || strings.Count(got, "\n") != strings.Count(kerr.Error(), "\n") {
				t.Fatalf("kubegate: %s\n    want --authentication-config, %s, then: %v", got, path, kerr)
			}
			if tc.field != "" && !strings.Contains(err.Error(), tc.field) {
				t.Errorf("%v: names no %s", err, tc.field)
			}
			// jwt.ParseConfig and jwt.Validate say the same.
			c, err := jwt.ParseConfig([]byte(tc.data))
			if err == nil {
				err = jwt.Validate(c, []string{saIssuer})
			}
			if err == nil || err.Error() != kerr.Error() {
				t.Errorf("jwt.ParseConfig+Validate: %v\n    want: %v", err, kerr)
			}
		})
	}
	// The --oidc-* flags: the same validation, named after the flags.
	flagCases := []struct {
		name  string
		f     func(f *jwt.OIDCFlags)
		field string
	}{
		{"http issuer", func(f *jwt.OIDCFlags) { f.IssuerURL = "http://issuer.example.com" }, "jwt[0].issuer.url"},
		{"service-account issuer", func(f *jwt.OIDCFlags) { f.IssuerURL = saIssuer }, "jwt[0].issuer.url"},
		{"empty required claim", func(f *jwt.OIDCFlags) { f.RequiredClaims = map[string]string{"": "x"} }, "jwt[0].claimValidationRules[0]"},
	}
	for _, tc := range flagCases {
		t.Run("flags: "+tc.name, func(t *testing.T) {
			f := jwt.DefaultOIDCFlags()
			f.IssuerURL, f.ClientID, f.Set = "https://issuer.example.com", "kubegate", true
			tc.f(&f)
			ref, _ := kubeFlagsAuthenticator(t, f)
			kerr := validation.ValidateAuthenticationConfiguration(kubeCompiler(),
				&apiserver.AuthenticationConfiguration{JWT: []apiserver.JWTAuthenticator{ref}}, []string{saIssuer}).ToAggregate()
			if kerr == nil {
				t.Fatalf("kube accepts it")
			}
			o := fileconfig.Options{Flags: fileconfig.DefaultFlags()}
			o.OIDC = f
			_, err := fileconfig.Load(t.Context(), o, slog.New(slog.DiscardHandler))
			want := "--oidc-*: invalid authentication configuration: " + kerr.Error()
			if err == nil || err.Error() != want {
				t.Fatalf("kubegate: %v\n    want: %s", err, want)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("%v: names no %s", err, tc.field)
			}
		})
	}
}
