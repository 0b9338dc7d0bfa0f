// Package jwt authenticates JSON Web Tokens from OpenID Connect providers
// and other issuers, as kube-apiserver's --authentication-config jwt[]
// authenticators and its --oidc-* flags do (docs/kubernetes-behaviour.md
// A.8). Each issuer is verified by kube's own authenticator from
// k8s.io/apiserver: discovery and keys fetched over TLS and refreshed on
// an unknown key, audiences, claim validation rules and claim mappings in
// CEL, user validation rules. This package reads the configuration,
// converts the legacy flags, combines the issuers as kube-apiserver does
// and swaps them when the configuration file changes.
package jwt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"

	"github.com/kubegate/kubegate/authn"
)

// Name is the Response.Authenticator of a JWT authenticator's success.
const Name = "jwt"

// Options are what the JWT authenticators take besides their
// configuration.
type Options struct {
	// SigningAlgs are the accepted JOSE algorithms; empty means every
	// algorithm kube accepts, as with --authentication-config (the
	// --oidc-signing-algs flag defaults to RS256).
	SigningAlgs []string
	// DisallowedIssuers are the service-account issuers, which no JWT
	// authenticator may claim.
	DisallowedIssuers []string
	// Logger receives reload messages; nil means slog.Default().
	Logger *slog.Logger
	// HealthPoll is how often a new configuration's issuers are checked
	// before it replaces the old one; zero means 10 s, as kube-apiserver.
	HealthPoll time.Duration
	// Retire is how long a replaced configuration's authenticators keep
	// running for requests already using them; zero means a minute.
	Retire time.Duration
}

// Authenticator is the union of one configuration's JWT authenticators:
// the first whose issuer matches a token's decides it, and a token of no
// configured issuer is not its to decide. It implements authn.Token.
type Authenticator struct {
	lifecycle context.Context
	opts      Options
	cur       atomic.Pointer[built]
}

type built struct {
	token  authenticator.Token
	health []func() error
	cancel context.CancelFunc
}

var _ authn.Token = (*Authenticator)(nil)

// New builds the authenticators of jwts. They fetch their issuers' keys in
// the background until lifecycle is done; until an issuer's keys are in,
// its tokens fail and the others' do not.
func New(lifecycle context.Context, jwts []apiserver.JWTAuthenticator, o Options) (*Authenticator, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.HealthPoll <= 0 {
		o.HealthPoll = 10 * time.Second
	}
	if o.Retire <= 0 {
		o.Retire = time.Minute
	}
	if len(o.SigningAlgs) == 0 {
		o.SigningAlgs = oidc.AllValidSigningAlgorithms()
	}
	a := &Authenticator{lifecycle: lifecycle, opts: o}
	b, err := a.build(jwts)
	if err != nil {
		return nil, err
	}
	a.cur.Store(b)
	return a, nil
}

func (a *Authenticator) build(jwts []apiserver.JWTAuthenticator) (*built, error) {
	ctx, cancel := context.WithCancel(a.lifecycle)
	b := &built{cancel: cancel}
	var ts []authenticator.Token
	for i, j := range jwts {
		var ca oidc.CAContentProvider
		if j.Issuer.CertificateAuthority != "" {
			p, err := dynamiccertificates.NewStaticCAContent("jwt-issuer", []byte(j.Issuer.CertificateAuthority))
			if err != nil {
				cancel()
				return nil, fmt.Errorf("jwt[%d].issuer.certificateAuthority: %w", i, err)
			}
			ca = p
		}
		t, err := oidc.New(ctx, oidc.Options{
			JWTAuthenticator:     j,
			CAContentProvider:    ca,
			Compiler:             compiler(),
			SupportedSigningAlgs: a.opts.SigningAlgs,
			DisallowedIssuers:    a.opts.DisallowedIssuers,
		})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("jwt[%d]: %w", i, err)
		}
		ts = append(ts, t)
		b.health = append(b.health, t.HealthCheck)
	}
	// As in kube-apiserver, the first authenticator to fail stops the
	// search: issuers are distinct, so only one can own a token.
	b.token = tokenunion.NewFailOnError(ts...)
	return b, nil
}

// healthy reports the first issuer whose keys could not be fetched.
func (b *built) healthy() error {
	var errs []error
	for _, h := range b.health {
		if err := h(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Update replaces the authenticators with those of jwts once every new
// issuer has answered, as kube-apiserver does on a reload; the old ones
// keep serving until then, and for a while after for requests already
// using them. It blocks until the new issuers are healthy or ctx is done,
// and returns an error, leaving the old ones in force, if they never are.
func (a *Authenticator) Update(ctx context.Context, jwts []apiserver.JWTAuthenticator) error {
	b, err := a.build(jwts)
	if err != nil {
		return err
	}
	var last error
	werr := wait.PollUntilContextCancel(ctx, a.opts.HealthPoll, true, func(context.Context) (bool, error) {
		last = b.healthy()
		return last == nil, nil
	})
	if last != nil || werr != nil {
		b.cancel()
		return errors.Join(last, werr)
	}
	old := a.cur.Swap(b)
	time.AfterFunc(a.opts.Retire, old.cancel)
	return nil
}

// AuthenticateToken verifies token with the authenticator of its issuer.
// A token of no configured issuer, or that is no JWT, is not its own:
// (nil, false, nil).
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authn.Response, bool, error) {
	resp, ok, err := a.cur.Load().token.AuthenticateToken(ctx, token)
	if err != nil || !ok {
		return nil, false, err
	}
	u := resp.User
	out := &authn.Response{Authenticator: Name, User: authn.User{
		Name: u.GetName(), UID: u.GetUID(), Groups: slices.Clone(u.GetGroups()),
	}}
	if extra := u.GetExtra(); len(extra) > 0 {
		out.User.Extra = maps.Clone(extra)
	}
	return out, true, nil
}
