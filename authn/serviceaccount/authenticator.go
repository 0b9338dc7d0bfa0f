// Package serviceaccount issues and verifies Kubernetes service-account
// tokens (signed JWTs) with kube-apiserver's semantics.
//
// Issuer signs bound tokens (TokenRequest: audiences, expiry, binding to a
// pod, secret or node) and legacy Secret-based tokens. Authenticator
// verifies both kinds against a reloadable set of public keys and maps them
// to the user system:serviceaccount:NS:NAME in the groups
// system:serviceaccounts and system:serviceaccounts:NS.
//
// Only RS256, RS384, RS512, ES256, ES384 and ES512 signatures are accepted:
// never "none" and never HMAC. A token whose payload does not name one of
// the accepted issuers is "not mine", so that other token authenticators
// may try it; once the issuer matches, every failure is an error. Errors
// never contain the token.
package serviceaccount

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kubegate/kubegate/authn"
)

// Name is the value of authn.Response.Authenticator for tokens verified here.
const Name = "serviceaccount"

// MaxTokenSize is the longest token the authenticator will parse. Real
// tokens are one to two kilobytes; anything longer is refused before any
// decoding.
const MaxTokenSize = 64 << 10

// DefaultLeeway is the clock skew allowed on exp, nbf and iat, and the grace
// after a bound object's deletion, as in kube-apiserver.
const DefaultLeeway = 60 * time.Second

// ErrTokenTooLarge is returned for tokens longer than MaxTokenSize.
var ErrTokenTooLarge = fmt.Errorf("service account token is longer than %d bytes", MaxTokenSize)

// validMethods are the only JWS algorithms accepted.
var validMethods = []string{"RS256", "RS384", "RS512", "ES256", "ES384", "ES512"}

// Options configure an Authenticator.
type Options struct {
	// Issuers are the accepted iss values of bound tokens
	// (--service-account-issuer, repeatable). At least one is required.
	// Legacy tokens (iss LegacyIssuer) are always accepted as well.
	Issuers []string
	// Audiences are the API audiences (--api-audiences): a token's aud
	// must intersect them, and a token without aud is taken to have them.
	// A caller may ask for other audiences with authn.WithAudiences (as a
	// TokenReview with spec.audiences does). Empty means Issuers.
	Audiences []string
	// Leeway is the clock skew allowed on exp, nbf and iat. Zero means
	// DefaultLeeway.
	Leeway time.Duration
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// Getter, when set, is asked for the objects a token names, and the
	// token is rejected if they are gone or re-created: always for bound
	// tokens, and for legacy tokens unless SkipLegacyLookup is set. Nil
	// means tokens are trusted on signature and claims alone.
	Getter Getter
	// SkipLegacyLookup turns the Getter check off for legacy tokens
	// (--service-account-lookup=false).
	SkipLegacyLookup bool
}

// Authenticator verifies service-account tokens. It is safe for concurrent
// use; SetKeys and Load replace the keys atomically.
type Authenticator struct {
	opts    Options
	issuers map[string]bool
	parser  *jwt.Parser
	keys    atomic.Pointer[keySet]
}

var _ authn.Token = (*Authenticator)(nil)

// New returns an Authenticator verifying with keys (see SetKeys).
func New(opts Options, keys []crypto.PublicKey) (*Authenticator, error) {
	if len(opts.Issuers) == 0 {
		return nil, errors.New("at least one service account issuer is required")
	}
	for _, iss := range opts.Issuers {
		if iss == "" {
			return nil, errors.New("service account issuer must not be empty")
		}
	}
	opts.Issuers = slices.Clone(opts.Issuers)
	if len(opts.Audiences) == 0 {
		opts.Audiences = opts.Issuers
	}
	opts.Audiences = slices.Clone(opts.Audiences)
	if opts.Leeway == 0 {
		opts.Leeway = DefaultLeeway
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a := &Authenticator{
		opts:    opts,
		issuers: map[string]bool{LegacyIssuer: true},
		// Claims are validated by validate, with kube's messages.
		parser: jwt.NewParser(jwt.WithValidMethods(validMethods), jwt.WithoutClaimsValidation()),
	}
	for _, iss := range opts.Issuers {
		a.issuers[iss] = true
	}
	if err := a.SetKeys(keys); err != nil {
		return nil, err
	}
	return a, nil
}

// NewFromFiles returns an Authenticator verifying with the keys in the PEM
// files at paths (--service-account-key-file, repeatable).
func NewFromFiles(opts Options, paths ...string) (*Authenticator, error) {
	keys, err := ReadPublicKeysFiles(paths...)
	if err != nil {
		return nil, err
	}
	return New(opts, keys)
}

// SetKeys atomically replaces the verification keys: RSA public keys, or
// ECDSA public keys on P-256, P-384 or P-521. An empty list or an
// unsupported key is an error and leaves the current keys in force.
func (a *Authenticator) SetKeys(keys []crypto.PublicKey) error {
	ks, err := newKeySet(keys)
	if err != nil {
		return err
	}
	a.keys.Store(ks)
	return nil
}

// Load parses data with ParsePublicKeysPEM and, if it holds at least one
// key, atomically replaces the verification keys with them. Otherwise the
// current keys stay in force.
func (a *Authenticator) Load(data []byte) error {
	keys, err := ParsePublicKeysPEM(data)
	if err != nil {
		return fmt.Errorf("service account keys: %w", err)
	}
	return a.SetKeys(keys)
}

// LoadFiles reads every file at paths and, if each holds at least one key,
// atomically replaces the verification keys with all of them.
func (a *Authenticator) LoadFiles(paths ...string) error {
	keys, err := ReadPublicKeysFiles(paths...)
	if err != nil {
		return err
	}
	return a.SetKeys(keys)
}

// KeyIDs returns the key IDs of the current verification keys, in order.
func (a *Authenticator) KeyIDs() []string {
	ks := a.keys.Load()
	ids := make([]string, len(ks.keys))
	for i := range ks.keys {
		ids[i] = ks.keys[i].kid
	}
	return ids
}

// errNotMine is returned by the key function for a token of another
// issuer; AuthenticateToken turns it into "not mine".
var errNotMine = errors.New("not a service account token")

// AuthenticateToken verifies token. See the package documentation for
// which tokens are "not mine".
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authn.Response, bool, error) {
	if len(token) > MaxTokenSize {
		return nil, false, ErrTokenTooLarge
	}
	if strings.Count(token, ".") != 2 || strings.HasPrefix(token, "{") {
		return nil, false, nil
	}
	ks := a.keys.Load()
	var c claims
	t, err := a.parser.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		if !a.issuers[c.Issuer] {
			return nil, errNotMine
		}
		return ks.keysFor(t)
	})
	if err != nil {
		if errors.Is(err, errNotMine) || !a.hasIssuer(token) {
			return nil, false, nil
		}
		return nil, false, describe(t, err)
	}
	return a.validate(ctx, &c, token)
}

// hasIssuer reports whether token's payload names an accepted issuer. It is
// only used when parsing failed, to tell "not mine" from "mine and bad" as
// kube-apiserver does: a payload that does not decode is not mine.
func (a *Authenticator) hasIssuer(token string) bool {
	_, rest, _ := strings.Cut(token, ".")
	payload, _, _ := strings.Cut(rest, ".")
	data, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return false
	}
	var c struct {
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return false
	}
	return a.issuers[c.Issuer]
}

// keysFor returns the keys that may verify t: those whose kid equals t's,
// or every key when t has no kid, keeping only keys of t's algorithm.
func (ks *keySet) keysFor(t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		// RFC 7515: critical extensions we do not understand mean reject.
		return nil, errCrit
	}
	alg := t.Method.Alg()
	kid, hasKid := t.Header["kid"]
	kidStr, _ := kid.(string)
	if hasKid && kidStr == "" {
		return nil, errBadKid
	}
	var first any
	var set jwt.VerificationKeySet
	for i := range ks.keys {
		k := &ks.keys[i]
		if (hasKid && k.kid != kidStr) || !k.accepts(alg) {
			continue
		}
		switch {
		case first == nil:
			first = k.pub
		case len(set.Keys) == 0:
			set.Keys = append(set.Keys, first, k.pub)
		default:
			set.Keys = append(set.Keys, k.pub)
		}
	}
	switch {
	case first == nil:
		return nil, errNoKeysFound
	case len(set.Keys) == 0:
		return first, nil
	}
	return set, nil
}

// keyError is a key-selection failure; its message is safe to return.
type keyError string

func (e keyError) Error() string { return string(e) }

const (
	errNoKeysFound = keyError("invalid signature, no keys found")
	errBadKid      = keyError("service account token has an invalid kid header")
	errCrit        = keyError("service account token has an unsupported crit header")
)

// describe turns a parse error into a message that names the problem and
// nothing of the token's content.
func describe(t *jwt.Token, err error) error {
	var ke keyError
	switch {
	case errors.As(err, &ke):
		return ke
	case errors.Is(err, jwt.ErrTokenMalformed):
		return errors.New("service account token is malformed")
	case t == nil || t.Method == nil:
		return errors.New("service account token names no supported signing algorithm")
	case !slices.Contains(validMethods, t.Method.Alg()):
		return fmt.Errorf("service account token signing algorithm %s is not allowed", t.Method.Alg())
	}
	return errors.New("service account token has an invalid signature")
}

// validate checks the claims of a token whose signature verified and maps
// it to a user.
func (a *Authenticator) validate(ctx context.Context, c *claims, token string) (*authn.Response, bool, error) {
	// A token without aud (legacy tokens) is taken to have the API
	// audiences; it must fit the audiences the caller asks for, which
	// default to the API audiences too.
	target, ok := authn.AudiencesFrom(ctx)
	if !ok {
		target = a.opts.Audiences
	}
	tokenAuds := []string(c.Audience)
	if len(tokenAuds) == 0 {
		tokenAuds = a.opts.Audiences
	}
	auds := intersect(tokenAuds, target)
	if len(auds) == 0 {
		return nil, false, fmt.Errorf("service account token audiences %q is invalid for the target audiences %q", tokenAuds, target)
	}
	if c.Issuer == LegacyIssuer {
		return a.validateLegacy(ctx, c, token, auds)
	}
	return a.validateBound(ctx, c, auds)
}

func (a *Authenticator) validateLegacy(ctx context.Context, c *claims, token string, auds []string) (*authn.Response, bool, error) {
	switch {
	case c.Subject == "":
		return nil, false, errors.New("service account token: sub claim is missing")
	case c.LegacyNamespace == "":
		return nil, false, errors.New("service account token: namespace claim is missing")
	case c.LegacySecretName == "":
		return nil, false, errors.New("service account token: secret name claim is missing")
	case c.LegacySAName == "":
		return nil, false, errors.New("service account token: service account name claim is missing")
	case c.LegacySAUID == "":
		return nil, false, errors.New("service account token: service account uid claim is missing")
	}
	ns, name, err := SplitUsername(c.Subject)
	if err != nil || ns != c.LegacyNamespace || name != c.LegacySAName {
		return nil, false, errors.New("service account token: sub claim is invalid")
	}
	if a.opts.Getter != nil && !a.opts.SkipLegacyLookup {
		if err := checkLegacy(ctx, a.opts.Getter, c, token); err != nil {
			return nil, false, err
		}
	}
	return response(ns, name, c.LegacySAUID, auds, nil), true, nil
}

func (a *Authenticator) validateBound(ctx context.Context, c *claims, auds []string) (*authn.Response, bool, error) {
	now := a.opts.Now()
	lw := a.opts.Leeway
	switch {
	case c.NotBefore != nil && now.Add(lw).Before(c.NotBefore.Time):
		return nil, false, errors.New("service account token is not valid yet")
	case c.ExpiresAt != nil && now.Add(-lw).After(c.ExpiresAt.Time):
		return nil, false, errors.New("service account token has expired")
	case c.IssuedAt != nil && now.Add(lw).Before(c.IssuedAt.Time):
		return nil, false, errors.New("service account token is issued in the future")
	}
	kc := c.Kubernetes
	if kc == nil || kc.Namespace == "" || kc.ServiceAccount.Name == "" {
		return nil, false, errors.New("service account token: kubernetes.io namespace and service account claims are missing")
	}
	if a.opts.Getter != nil {
		if err := checkBound(ctx, a.opts.Getter, kc, now, lw); err != nil {
			return nil, false, err
		}
	}
	var extra map[string][]string
	add := func(k, v string) {
		if extra == nil {
			extra = make(map[string][]string, 4)
		}
		extra[k] = []string{v}
	}
	if p := kc.Pod; p != nil && p.Name != "" && p.UID != "" {
		add(PodNameKey, p.Name)
		add(PodUIDKey, p.UID)
	}
	if n := kc.Node; n != nil && n.Name != "" {
		add(NodeNameKey, n.Name)
		if n.UID != "" {
			add(NodeUIDKey, n.UID)
		}
	}
	if c.ID != "" {
		add(authn.CredentialIDKey, "JTI="+c.ID)
	}
	return response(kc.Namespace, kc.ServiceAccount.Name, kc.ServiceAccount.UID, auds, extra), true, nil
}

func response(ns, name, uid string, auds []string, extra map[string][]string) *authn.Response {
	user := Username(ns, name)
	groups := make([]string, 2, 3)
	groups[0], groups[1] = AllServiceAccountsGroup, GroupPrefix+ns
	return &authn.Response{
		User: authn.User{
			Name: user,
			UID:  uid,
			// The chain adds system:authenticated to the groups of every
			// service account; adding it here spares cached responses a
			// copy per request.
			Groups: authn.AddAuthenticated(user, groups),
			Extra:  extra,
		},
		Audiences:     auds,
		Authenticator: Name,
	}
}

// intersect returns the members of a that are in b, in a's order.
func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
