package inspect

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const (
	// legacyIssuer is the fixed issuer of secret-based service-account
	// tokens.
	legacyIssuer    = "kubernetes/serviceaccount"
	saUserPrefix    = "system:serviceaccount:"
	credentialIDKey = "authentication.kubernetes.io/credential-id"
)

// Token types.
const (
	TokenBound  = "bound service-account token"
	TokenLegacy = "legacy service-account token"
	TokenOther  = "JWT (not a Kubernetes service-account token)"
)

// JWT describes a compact JWS. The signature itself is never reported.
type JWT struct {
	Header    map[string]any `json:"header"`
	Claims    map[string]any `json:"claims"`
	Type      string         `json:"type"` // TokenBound, TokenLegacy or TokenOther
	Issuer    string         `json:"issuer,omitempty"`
	Audiences []string       `json:"audiences,omitempty"`
	IssuedAt  *time.Time     `json:"issuedAt,omitempty"`
	NotBefore *time.Time     `json:"notBefore,omitempty"`
	Expires   *time.Time     `json:"expires,omitempty"` // nil: never expires
	Validity
	// Identity is the service account kube-apiserver would authenticate
	// the token as; nil when it is not a service-account token.
	Identity *Identity `json:"identity,omitempty"`
	// Signature is nil when no verification keys were given.
	Signature *Verification `json:"signature,omitempty"`
}

func decodeSegment(name, seg string) (map[string]any, error) {
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return nil, fmt.Errorf("JWT %s is not unpadded base64url: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("JWT %s is not a JSON object", name)
	}
	if dec.More() {
		return nil, fmt.Errorf("JWT %s has data after its JSON object", name)
	}
	return m, nil
}

func inspectJWT(token string, opts *Options, now time.Time) (*JWT, error) {
	segs := strings.Split(token, ".")
	if len(segs) != 3 {
		return nil, fmt.Errorf("JWT has %d segments, want 3 (header.payload.signature)", len(segs))
	}
	header, err := decodeSegment("header", segs[0])
	if err != nil {
		return nil, err
	}
	claims, err := decodeSegment("payload", segs[1])
	if err != nil {
		return nil, err
	}
	j := &JWT{Header: header, Claims: claims}
	j.Issuer, _ = claims["iss"].(string)
	switch aud := claims["aud"].(type) {
	case string:
		j.Audiences = []string{aud}
	case []any:
		for _, a := range aud {
			if s, ok := a.(string); ok {
				j.Audiences = append(j.Audiences, s)
			}
		}
	}
	for _, d := range []struct {
		claim string
		dst   **time.Time
	}{{"iat", &j.IssuedAt}, {"nbf", &j.NotBefore}, {"exp", &j.Expires}} {
		if v, ok := claims[d.claim]; ok {
			t, err := numericDate(v)
			if err != nil {
				return nil, fmt.Errorf("JWT claim %q: %w", d.claim, err)
			}
			*d.dst = &t
		}
	}
	_, bound := claims["kubernetes.io"].(map[string]any)
	switch {
	case j.Issuer == legacyIssuer:
		j.Type = TokenLegacy
		j.Identity = legacyIdentity(claims)
	case bound:
		j.Type = TokenBound
		j.Identity = boundIdentity(claims)
	default:
		j.Type = TokenOther
	}
	switch {
	case j.Type == TokenLegacy:
		j.Validity = Validity{Status: "no expiry", TimeLeft: "never expires (kube-apiserver does not time-check legacy tokens)"}
	case j.Expires == nil:
		j.Validity = Validity{Status: "no expiry", TimeLeft: "no exp claim"}
	default:
		var nbf time.Time
		if j.NotBefore != nil {
			nbf = *j.NotBefore
		}
		j.Validity = validity(nbf, *j.Expires, now)
	}
	if opts.Keys != nil {
		j.Signature = verifyJWS(segs, header, opts.Keys, opts.KeysName)
	}
	return j, nil
}

// numericDate converts a JSON NumericDate (seconds, possibly fractional).
func numericDate(v any) (time.Time, error) {
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, fmt.Errorf("not a number")
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.Abs(f) > 1e11 {
		return time.Time{}, fmt.Errorf("not a NumericDate: %s", n)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

func saIdentity(sub, ns string) *Identity {
	id := &Identity{User: sub, Groups: []string{}}
	parts := strings.Split(strings.TrimPrefix(sub, saUserPrefix), ":")
	if !strings.HasPrefix(sub, saUserPrefix) || len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		id.Problems = append(id.Problems, fmt.Sprintf("sub %q is not system:serviceaccount:NAMESPACE:NAME: kube-apiserver rejects the token", sub))
		return id
	}
	id.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + parts[0]}
	if ns != parts[0] {
		id.Problems = append(id.Problems, fmt.Sprintf("namespace claim %q does not match sub: kube-apiserver rejects the token", ns))
	}
	return id
}

func legacyIdentity(c map[string]any) *Identity {
	str := func(k string) string { s, _ := c["kubernetes.io/serviceaccount/"+k].(string); return s }
	sub, _ := c["sub"].(string)
	id := saIdentity(sub, str("namespace"))
	id.UID = str("service-account.uid")
	for _, k := range []string{"namespace", "secret.name", "service-account.name", "service-account.uid"} {
		if str(k) == "" {
			id.Problems = append(id.Problems, fmt.Sprintf("claim kubernetes.io/serviceaccount/%s is missing: kube-apiserver rejects the token", k))
		}
	}
	return id
}

func boundIdentity(c map[string]any) *Identity {
	k8s, _ := c["kubernetes.io"].(map[string]any)
	obj := func(name string) (string, string) {
		m, _ := k8s[name].(map[string]any)
		n, _ := m["name"].(string)
		u, _ := m["uid"].(string)
		return n, u
	}
	sub, _ := c["sub"].(string)
	ns, _ := k8s["namespace"].(string)
	id := saIdentity(sub, ns)
	_, id.UID = obj("serviceaccount")
	extra := map[string][]string{}
	if n, u := obj("pod"); n != "" && u != "" {
		extra["authentication.kubernetes.io/pod-name"] = []string{n}
		extra["authentication.kubernetes.io/pod-uid"] = []string{u}
	}
	if n, u := obj("node"); n != "" {
		extra["authentication.kubernetes.io/node-name"] = []string{n}
		if u != "" {
			extra["authentication.kubernetes.io/node-uid"] = []string{u}
		}
	}
	if jti, _ := c["jti"].(string); jti != "" {
		extra[credentialIDKey] = []string{"JTI=" + jti}
	}
	if len(extra) > 0 {
		id.Extra = extra
	}
	return id
}

// verifyJWS checks the signature as kube-apiserver does: when the header
// names a kid only keys with that kid are tried, otherwise every key; the
// algorithm must suit the key type.
func verifyJWS(segs []string, header map[string]any, keys []crypto.PublicKey, against string) *Verification {
	if against == "" {
		against = fmt.Sprintf("%d key(s)", len(keys))
	}
	v := &Verification{Against: against}
	alg, _ := header["alg"].(string)
	kid, _ := header["kid"].(string)
	sig, err := base64.RawURLEncoding.DecodeString(segs[2])
	if err != nil {
		v.Reason = "signature is not unpadded base64url"
		return v
	}
	method := jwt.GetSigningMethod(alg)
	tried := 0
	var lastErr error
	for _, k := range keys {
		if id, err := keyID(k); kid != "" && (err != nil || id != kid) {
			continue
		}
		tried++
		if method == nil || !slices.Contains(algsFor(k), alg) {
			lastErr = fmt.Errorf("algorithm %q cannot be used with a %s key", alg, keyInfo(k))
			continue
		}
		if err := method.Verify(segs[0]+"."+segs[1], sig, k); err != nil {
			lastErr = err
			continue
		}
		v.Verified = true
		return v
	}
	switch {
	case tried == 0:
		v.Reason = fmt.Sprintf("invalid signature, no keys found: no key has kid %q", kid)
	case tried == 1:
		v.Reason = "invalid signature: " + lastErr.Error()
	default:
		v.Reason = fmt.Sprintf("invalid signature: no key among %d verifies it (last: %v)", tried, lastErr)
	}
	return v
}

func algsFor(k crypto.PublicKey) []string {
	switch k.(type) {
	case *rsa.PublicKey:
		return []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	case *ecdsa.PublicKey:
		return []string{"ES256", "ES384", "ES512"}
	}
	return nil
}
