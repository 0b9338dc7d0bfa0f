// Package bootstrap authenticates bootstrap tokens, as kube-apiserver does
// with --enable-bootstrap-token-auth (docs/kubernetes-behaviour.md A.10).
//
// A bootstrap token has the form ID.SECRET, six and sixteen characters of
// [a-z0-9]. It is valid while the Secret "bootstrap-token-ID" in
// kube-system, of type bootstrap.kubernetes.io/token, holds the same ID and
// SECRET, is not being deleted, has not expired and is marked for
// authentication. The user is system:bootstrap:ID in the group
// system:bootstrappers plus the Secret's auth-extra-groups.
//
// Like kube-apiserver, the authenticator answers "not my kind of
// credential" (nil, false, nil) for every token it refuses, logging why at
// debug level, so that a later authenticator may still accept it; only a
// failed lookup (other than "not found") is an error.
//
// The package imports only the standard library and authn: Secrets reach
// it through a Getter, backed by an API server's store or, in the gateway,
// by reads from its upstream.
package bootstrap

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kubegate/kubegate/authn"
)

// Name is the value of authn.Response.Authenticator for bootstrap tokens.
const Name = "bootstrap"

// The names kube-apiserver and kubeadm give a bootstrap token's Secret,
// its data keys, and its user and groups.
const (
	// Namespace holds every bootstrap token Secret.
	Namespace = "kube-system"
	// SecretPrefix followed by the token ID is the Secret's name.
	SecretPrefix = "bootstrap-token-"
	// SecretType is the only Secret type looked at.
	SecretType = "bootstrap.kubernetes.io/token"

	TokenIDKey     = "token-id"
	TokenSecretKey = "token-secret"
	// ExpirationKey holds an RFC 3339 time; absent means never.
	ExpirationKey  = "expiration"
	DescriptionKey = "description"
	// ExtraGroupsKey holds a comma-separated list of groups, each
	// matching GroupPattern.
	ExtraGroupsKey = "auth-extra-groups"
	// UsagePrefix followed by a usage ("signing", "authentication") is
	// the key marking the token for that usage with the value "true".
	UsagePrefix = "usage-bootstrap-"
	// UsageAuthenticationKey must be "true" for the token to authenticate.
	UsageAuthenticationKey = UsagePrefix + "authentication"

	// UserPrefix followed by the token ID is the user name.
	UserPrefix = "system:bootstrap:"
	// Group is every bootstrap token's group.
	Group = "system:bootstrappers"
	// GroupPattern is what each extra group must match.
	GroupPattern = `\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z`
)

// Usages are the usages a bootstrap token may be marked for.
var Usages = []string{"signing", "authentication"}

// ErrNotFound is what a Getter returns (or wraps) for a missing Secret.
var ErrNotFound = errors.New("not found")

var groupRE = regexp.MustCompile(GroupPattern)

// Secret is a stored Secret as the authenticator needs it.
type Secret struct {
	Namespace, Name string
	Type            string
	// Data is the Secret's data; nil means it has none.
	Data map[string][]byte
	// DeletionTimestamp is when deletion of the Secret was requested;
	// zero means it is not being deleted.
	DeletionTimestamp time.Time
}

// Getter reads Secrets. Implementations must be safe for concurrent use.
type Getter interface {
	// GetSecretData returns the Secret namespace/name, or an error
	// wrapping ErrNotFound if there is none.
	GetSecretData(ctx context.Context, namespace, name string) (Secret, error)
}

// GetterFunc adapts a function to Getter.
type GetterFunc func(ctx context.Context, namespace, name string) (Secret, error)

// GetSecretData calls f.
func (f GetterFunc) GetSecretData(ctx context.Context, namespace, name string) (Secret, error) {
	return f(ctx, namespace, name)
}

// Options configure an Authenticator.
type Options struct {
	// Logger receives one debug line per refused token, naming the
	// Secret and never the token; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock expirations are compared against; nil means
	// time.Now.
	Now func() time.Time
}

// Authenticator authenticates bootstrap tokens against Secrets in
// kube-system. It is safe for concurrent use.
type Authenticator struct {
	getter Getter
	logger *slog.Logger
	now    func() time.Time
}

var (
	_ authn.Token = (*Authenticator)(nil)
	_ Getter      = GetterFunc(nil)
)

// New returns an Authenticator reading Secrets through g.
func New(g Getter, o Options) *Authenticator {
	if g == nil {
		panic("bootstrap: nil Getter")
	}
	a := &Authenticator{getter: g, logger: o.Logger, now: o.Now}
	if a.logger == nil {
		a.logger = slog.Default()
	}
	if a.now == nil {
		a.now = time.Now
	}
	return a
}

// AuthenticateToken implements authn.Token (A.10).
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authn.Response, bool, error) {
	id, secret, ok := ParseToken(token)
	if !ok {
		return nil, false, nil
	}
	name := SecretName(id)
	s, err := a.getter.GetSecretData(ctx, Namespace, name)
	if errors.Is(err, ErrNotFound) {
		a.logger.Debug("no secret for bootstrap token", "secret", Namespace+"/"+name)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("bootstrap token: look up secret %s/%s: %w", Namespace, name, err)
	}
	refuse := func(why string) (*authn.Response, bool, error) {
		a.logger.Debug("bootstrap token refused", "secret", Namespace+"/"+name, "reason", why)
		return nil, false, nil
	}
	switch {
	case s.Namespace != "" && s.Namespace != Namespace, s.Name != "" && s.Name != name:
		// A getter answering for another object is a wiring mistake;
		// refuse rather than trust it.
		return refuse("the lookup answered with secret " + s.Namespace + "/" + s.Name)
	case !s.DeletionTimestamp.IsZero():
		return refuse("the secret is being deleted")
	case s.Type != SecretType || s.Data == nil:
		return refuse("the secret is not of type " + SecretType)
	case subtle.ConstantTimeCompare(s.Data[TokenSecretKey], []byte(secret)) != 1:
		return refuse("wrong " + TokenSecretKey)
	case string(s.Data[TokenIDKey]) != id:
		return refuse("wrong " + TokenIDKey)
	}
	if why, expired := Expired(s.Data, a.now()); expired {
		return refuse(why)
	}
	if string(s.Data[UsageAuthenticationKey]) != "true" {
		return refuse("not marked " + UsageAuthenticationKey + "=true")
	}
	groups, err := Groups(string(s.Data[ExtraGroupsKey]))
	if err != nil {
		return refuse(err.Error())
	}
	return &authn.Response{
		User:          authn.User{Name: UserPrefix + id, Groups: groups},
		Authenticator: Name,
	}, true, nil
}

// ParseToken splits a bootstrap token into its ID and secret; ok is false
// unless token matches \A([a-z0-9]{6})\.([a-z0-9]{16})\z.
func ParseToken(token string) (id, secret string, ok bool) {
	if len(token) != 6+1+16 || token[6] != '.' {
		return "", "", false
	}
	for i := 0; i < len(token); i++ {
		if i != 6 && !tokenChar(token[i]) {
			return "", "", false
		}
	}
	return token[:6], token[7:], true
}

func tokenChar(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// SecretName is the name of the Secret holding the token with this ID.
func SecretName(id string) string { return SecretPrefix + id }

// Expired reports whether the expiration in a token Secret's data has
// passed at now, and why. A missing expiration never passes; one that is
// not an RFC 3339 time counts as passed.
func Expired(data map[string][]byte, now time.Time) (why string, expired bool) {
	v, ok := data[ExpirationKey]
	if !ok || len(v) == 0 {
		return "", false
	}
	exp, err := time.Parse(time.RFC3339, string(v))
	if err != nil {
		return "unparseable " + ExpirationKey + " (counted as expired)", true
	}
	if !exp.After(now) {
		return "expired at " + string(v), true
	}
	return "", false
}

// ValidateGroup checks an extra group's name against GroupPattern.
func ValidateGroup(name string) error {
	if !groupRE.MatchString(name) {
		return fmt.Errorf("bootstrap group %q is invalid (must match %s)", name, GroupPattern)
	}
	return nil
}

// Groups returns the groups of a token whose auth-extra-groups value is
// extra: Group and the extra groups, sorted and without duplicates. Any
// invalid extra group is an error.
func Groups(extra string) ([]string, error) {
	groups := []string{Group}
	if extra != "" {
		for g := range strings.SplitSeq(extra, ",") {
			if err := ValidateGroup(g); err != nil {
				return nil, fmt.Errorf("%s: %w", ExtraGroupsKey, err)
			}
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	return slices.Compact(groups), nil
}

// tokenChars are the characters of a generated token.
const tokenChars = "0123456789abcdefghijklmnopqrstuvwxyz"

// GenerateToken returns a new random token ID and secret from
// crypto/rand.
func GenerateToken() (id, secret string, err error) {
	b := make([]byte, 0, 6+16)
	buf := make([]byte, 64)
	for len(b) < cap(b) {
		if _, err := rand.Read(buf); err != nil {
			return "", "", fmt.Errorf("generate bootstrap token: %w", err)
		}
		for _, c := range buf {
			// 252 = 7*36: rejecting larger bytes keeps every
			// character equally likely.
			if c < 252 && len(b) < cap(b) {
				b = append(b, tokenChars[c%36])
			}
		}
	}
	return string(b[:6]), string(b[6:]), nil
}

// TokenSpec describes a token Secret to create.
type TokenSpec struct {
	ID, Secret  string
	Description string
	// Expires is when the token stops working; zero means never.
	Expires time.Time
	// Usages mark the token, for example "signing" and "authentication".
	Usages []string
	// Groups are the extra groups, each matching GroupPattern.
	Groups []string
}

// Data returns the Secret data kubeadm writes for spec.
func (spec TokenSpec) Data() map[string][]byte {
	data := map[string][]byte{
		TokenIDKey:     []byte(spec.ID),
		TokenSecretKey: []byte(spec.Secret),
	}
	if spec.Description != "" {
		data[DescriptionKey] = []byte(spec.Description)
	}
	if !spec.Expires.IsZero() {
		data[ExpirationKey] = []byte(spec.Expires.UTC().Format(time.RFC3339))
	}
	for _, u := range spec.Usages {
		data[UsagePrefix+u] = []byte("true")
	}
	if len(spec.Groups) > 0 {
		data[ExtraGroupsKey] = []byte(strings.Join(spec.Groups, ","))
	}
	return data
}
