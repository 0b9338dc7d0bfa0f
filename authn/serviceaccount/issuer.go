package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// Expiration defaults and limits of the TokenRequest API, in seconds.
const (
	// DefaultExpirationSeconds is used when a request gives none.
	DefaultExpirationSeconds = 60 * 60
	// MinExpirationSeconds is the shortest lifetime a request may ask for.
	MinExpirationSeconds = 10 * 60
	// MaxExpirationSeconds is the longest lifetime a request may ask for.
	MaxExpirationSeconds = 1 << 32
	// WarnOnlyExpirationSeconds is the lifetime kubelets ask for when they
	// want a pod token whose real lifetime is extended (see
	// IssuerOptions.ExtendExpiration).
	WarnOnlyExpirationSeconds = 60*60 + 7
	// ExtendedExpirationSeconds is the real lifetime of such a token.
	ExtendedExpirationSeconds = 365 * 24 * 60 * 60
)

// FieldError is a TokenRequest validation failure, worded as the API server
// words it; it maps to 422 Unprocessable Entity.
type FieldError struct {
	Field  string // e.g. "spec.expirationSeconds"
	Value  any
	Detail string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: Invalid value: %v: %s", e.Field, e.Value, e.Detail)
}

// ErrConflictingBinding is returned when a request binds a token to a
// Secret and also to a pod or node.
var ErrConflictingBinding = errors.New("a token cannot be bound to a secret and also to a pod or node")

// IssuerOptions configure an Issuer.
type IssuerOptions struct {
	// Issuer is the iss claim of bound tokens (the first
	// --service-account-issuer). Required.
	Issuer string
	// APIAudiences are the audiences a request gets when it names none.
	// Empty means []string{Issuer}.
	APIAudiences []string
	// MaxExpiration caps the lifetime a request may ask for, with a
	// warning (--service-account-max-token-expiration). Zero means no cap
	// beyond MaxExpirationSeconds.
	MaxExpiration time.Duration
	// ExtendExpiration gives a pod-bound token requested for exactly
	// WarnOnlyExpirationSeconds, for API audiences only, a real lifetime of
	// one year with a warnafter at the requested time
	// (--service-account-extend-token-expiration, true in kube-apiserver).
	ExtendExpiration bool
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
}

// Issuer signs service-account tokens with one private key: RS256 for RSA
// keys, ES256, ES384 or ES512 for ECDSA keys on P-256, P-384 or P-521. The
// kid header is KeyID of the public key. It is safe for concurrent use.
type Issuer struct {
	cur  atomic.Pointer[signingKey]
	opts IssuerOptions
}

// signingKey is the key an Issuer signs with, replaced whole by Load.
type signingKey struct {
	key    crypto.Signer
	method jwt.SigningMethod
	kid    string
}

// NewIssuer returns an Issuer signing with key.
func NewIssuer(key crypto.Signer, opts IssuerOptions) (*Issuer, error) {
	if opts.Issuer == "" {
		return nil, errors.New("service account issuer is required")
	}
	sk, err := newSigningKey(key)
	if err != nil {
		return nil, err
	}
	if len(opts.APIAudiences) == 0 {
		opts.APIAudiences = []string{opts.Issuer}
	}
	opts.APIAudiences = slices.Clone(opts.APIAudiences)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	i := &Issuer{opts: opts}
	i.cur.Store(sk)
	return i, nil
}

// Load parses a PEM private key (ParsePrivateKeyPEM) and signs every
// later token with it; on error the current key stays. It is a
// filewatch.LoadFunc for --service-account-signing-key-file, so that the
// key can be rotated (docs/kubernetes-behaviour.md H.6).
func (i *Issuer) Load(data []byte) error {
	key, err := ParsePrivateKeyPEM(data)
	if err != nil {
		return err
	}
	sk, err := newSigningKey(key)
	if err != nil {
		return err
	}
	i.cur.Store(sk)
	return nil
}

func newSigningKey(key crypto.Signer) (*signingKey, error) {
	var method jwt.SigningMethod
	switch k := key.(type) {
	case *rsa.PrivateKey:
		method = jwt.SigningMethodRS256
	case *ecdsa.PrivateKey:
		switch ecAlgorithm(k.Curve) {
		case "ES256":
			method = jwt.SigningMethodES256
		case "ES384":
			method = jwt.SigningMethodES384
		case "ES512":
			method = jwt.SigningMethodES512
		default:
			return nil, fmt.Errorf("service account signing key: unsupported curve %s", k.Curve.Params().Name)
		}
	default:
		return nil, fmt.Errorf("service account signing key: unsupported key type %T", key)
	}
	kid, err := KeyID(key.Public())
	if err != nil {
		return nil, err
	}
	return &signingKey{key: key, method: method, kid: kid}, nil
}

// KeyID returns the kid of tokens this Issuer signs.
func (i *Issuer) KeyID() string { return i.cur.Load().kid }

// Algorithm returns the JWS algorithm this Issuer signs with.
func (i *Issuer) Algorithm() string { return i.cur.Load().method.Alg() }

// PublicKey returns the public half of the signing key.
func (i *Issuer) PublicKey() crypto.PublicKey { return i.cur.Load().key.Public() }

// ObjectRef names an object a token is bound to.
type ObjectRef struct {
	Name string
	UID  string
}

// TokenRequest asks for a bound token, as the TokenRequest API does.
type TokenRequest struct {
	// Namespace, Name and UID identify the service account. Required.
	Namespace string
	Name      string
	UID       string
	// Audiences of the token. Empty means the API audiences.
	Audiences []string
	// ExpirationSeconds is the requested lifetime. Zero means
	// DefaultExpirationSeconds.
	ExpirationSeconds int64
	// Pod, Secret and Node bind the token to an object; nil means not
	// bound to one. A pod-bound token may carry the pod's Node too. A
	// Secret binding excludes the other two.
	Pod    *ObjectRef
	Secret *ObjectRef
	Node   *ObjectRef
}

// IssuedToken is a signed bound token with what the TokenRequest status
// reports about it.
type IssuedToken struct {
	Token string
	// Audiences the token carries.
	Audiences []string
	// ExpirationSeconds is the requested lifetime after any cap; the API
	// echoes it in spec.expirationSeconds.
	ExpirationSeconds int64
	// ExpirationTimestamp is the issue time plus ExpirationSeconds
	// (status.expirationTimestamp). An extended token's real exp is later.
	ExpirationTimestamp time.Time
	// Warnings for the client, such as a shortened expiration.
	Warnings []string
}

// Issue validates req, applies the defaults and limits of the TokenRequest
// API and signs a bound token. Validation failures are *FieldError.
func (i *Issuer) Issue(req TokenRequest) (*IssuedToken, error) {
	if req.Namespace == "" || req.Name == "" {
		return nil, errors.New("token request: service account namespace and name are required")
	}
	if req.Secret != nil && (req.Pod != nil || req.Node != nil) {
		return nil, ErrConflictingBinding
	}
	exp := req.ExpirationSeconds
	if exp == 0 {
		exp = DefaultExpirationSeconds
	}
	if exp < MinExpirationSeconds {
		return nil, &FieldError{Field: "spec.expirationSeconds", Value: exp, Detail: "may not specify a duration less than 10 minutes"}
	}
	if exp > MaxExpirationSeconds {
		return nil, &FieldError{Field: "spec.expirationSeconds", Value: exp, Detail: "may not specify a duration larger than 2^32 seconds"}
	}
	out := &IssuedToken{}
	if max := int64(i.opts.MaxExpiration / time.Second); max > 0 && exp > max {
		out.Warnings = append(out.Warnings, fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", exp, max))
		exp = max
	}
	auds := req.Audiences
	if len(auds) == 0 {
		auds = i.opts.APIAudiences
	}
	auds = slices.Clone(auds)

	lifetime, warnAfter := exp, int64(0)
	if i.opts.ExtendExpiration && req.Pod != nil && exp == WarnOnlyExpirationSeconds && i.allAPIAudiences(auds) {
		lifetime, warnAfter = ExtendedExpirationSeconds, exp
	}

	now := i.opts.Now().Truncate(time.Second)
	kc := &kubeClaims{
		Namespace:      req.Namespace,
		ServiceAccount: ref{Name: req.Name, UID: req.UID},
		Pod:            refOf(req.Pod),
		Secret:         refOf(req.Secret),
		Node:           refOf(req.Node),
	}
	if warnAfter != 0 {
		kc.WarnAfter = jwt.NewNumericDate(now.Add(time.Duration(warnAfter) * time.Second))
	}
	c := &claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    i.opts.Issuer,
			Subject:   Username(req.Namespace, req.Name),
			Audience:  auds,
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Duration(lifetime) * time.Second)),
			NotBefore: jwt.NewNumericDate(now),
			IssuedAt:  jwt.NewNumericDate(now),
			ID:        uuid.NewString(),
		},
		Kubernetes: kc,
	}
	tok, err := i.sign(c)
	if err != nil {
		return nil, err
	}
	out.Token = tok
	out.Audiences = auds
	out.ExpirationSeconds = exp
	out.ExpirationTimestamp = now.Add(time.Duration(exp) * time.Second)
	return out, nil
}

// IssueLegacy signs a legacy token for the service account namespace/name
// (UID uid) stored in Secret secretName: issuer LegacyIssuer, no audience,
// no expiry. Such tokens are valid until the Secret or the service account
// is deleted.
func (i *Issuer) IssueLegacy(namespace, name, uid, secretName string) (string, error) {
	if namespace == "" || name == "" || uid == "" || secretName == "" {
		return "", errors.New("legacy token: namespace, service account name, uid and secret name are required")
	}
	return i.sign(&claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:  LegacyIssuer,
			Subject: Username(namespace, name),
		},
		LegacyNamespace:  namespace,
		LegacySecretName: secretName,
		LegacySAName:     name,
		LegacySAUID:      uid,
	})
}

func (i *Issuer) sign(c *claims) (string, error) {
	sk := i.cur.Load()
	t := jwt.NewWithClaims(sk.method, c)
	// kube-apiserver's tokens carry alg and kid only.
	t.Header = map[string]any{"alg": sk.method.Alg(), "kid": sk.kid}
	s, err := t.SignedString(sk.key)
	if err != nil {
		return "", fmt.Errorf("sign service account token: %w", err)
	}
	return s, nil
}

func (i *Issuer) allAPIAudiences(auds []string) bool {
	for _, a := range auds {
		if !slices.Contains(i.opts.APIAudiences, a) {
			return false
		}
	}
	return len(auds) > 0
}

func refOf(o *ObjectRef) *ref {
	if o == nil {
		return nil
	}
	return &ref{Name: o.Name, UID: o.UID}
}
