// Package webhook authenticates bearer tokens by asking a remote service,
// with kube-apiserver's webhook token authentication
// (--authentication-token-webhook-config-file, docs/kubernetes-behaviour.md
// A.9). It builds the authenticator of k8s.io/apiserver: a TokenReview of
// version v1 or v1beta1 is POSTed to the exact URL of the kubeconfig's
// cluster, with the kubeconfig's credentials, retried with kube's default
// backoff on transient errors; the identity and the audiences come from
// the answer. New wraps it in a cache that remembers successes and unknown
// tokens for the cache TTL and never remembers errors, as kube-apiserver
// does.
//
// The token is sent to the remote service and nowhere else: errors never
// contain it.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	kubewebhook "k8s.io/apiserver/plugin/pkg/authenticator/token/webhook"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/authn"
)

// Name is the Authenticator of the responses.
const Name = "webhook"

// The TokenReview versions the remote service may speak.
const (
	VersionV1      = "v1"      // authentication.k8s.io/v1
	VersionV1beta1 = "v1beta1" // authentication.k8s.io/v1beta1
)

// Defaults of kube-apiserver's flags.
const (
	// DefaultVersion is --authentication-token-webhook-version's default
	// in kube-apiserver.
	DefaultVersion = VersionV1beta1
	// DefaultCacheTTL is --authentication-token-webhook-cache-ttl's
	// default.
	DefaultCacheTTL = 2 * time.Minute
)

// Options configure New.
type Options struct {
	// ConfigFile is a kubeconfig: its current context's cluster is the
	// URL TokenReviews are POSTed to (used as is: it names the whole path)
	// and the CA that verifies it, its user the credential kubegate
	// presents. Required; read once, by New.
	ConfigFile string
	// Version is the TokenReview version sent and expected, VersionV1 or
	// VersionV1beta1; empty means DefaultVersion.
	Version string
	// APIAudiences are the audiences a token is taken to have when the
	// service answers for a review with audiences without naming any.
	APIAudiences []string
	// CacheTTL is how long a success or an unknown token is remembered;
	// zero or less: not at all. Errors are never remembered.
	CacheTTL time.Duration
	// RetryBackoff paces the retries of a review that failed in a way
	// worth retrying; nil means kube-apiserver's default (five attempts,
	// from 500 ms, by a factor of 1.5).
	RetryBackoff *wait.Backoff
	// Now is the cache's clock; nil means the monotonic clock.
	Now func() time.Time
}

// CheckVersion returns an error naming v unless it is a TokenReview
// version New can speak.
func CheckVersion(v string) error {
	switch v {
	case VersionV1, VersionV1beta1:
		return nil
	}
	return fmt.Errorf("unsupported authentication webhook version %q, supported versions are %q, %q", v, VersionV1, VersionV1beta1)
}

// New reads o.ConfigFile and returns the cached webhook authenticator.
func New(o Options) (authn.Token, error) {
	t, err := NewUncached(o)
	if err != nil {
		return nil, err
	}
	return authn.CacheTokens(t, authn.CacheOptions{SuccessTTL: o.CacheTTL, FailureTTL: o.CacheTTL, SkipErrors: true, Now: o.Now}), nil
}

// NewUncached is New without the cache: every lookup is a review.
func NewUncached(o Options) (*Authenticator, error) {
	if o.ConfigFile == "" {
		return nil, errors.New("a webhook configuration file is required")
	}
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	if err := CheckVersion(o.Version); err != nil {
		return nil, err
	}
	cfg, err := webhookutil.LoadKubeconfig(o.ConfigFile, nil)
	if err != nil {
		return nil, err
	}
	return newFromConfig(cfg, o)
}

// newFromConfig builds the authenticator for the REST client
// configuration cfg.
func newFromConfig(cfg *rest.Config, o Options) (*Authenticator, error) {
	backoff := kubewebhook.DefaultRetryBackoff()
	if o.RetryBackoff != nil {
		backoff = o.RetryBackoff
	}
	if backoff.Steps <= 0 {
		return nil, fmt.Errorf("number of webhook retry attempts must be greater than 0, but is: %d", backoff.Steps)
	}
	w, err := kubewebhook.New(cfg, o.Version, authenticator.Audiences(o.APIAudiences), *backoff)
	if err != nil {
		return nil, err
	}
	return &Authenticator{w: w}, nil
}

// Authenticator asks the remote service about every token, without a
// cache. It is safe for concurrent use.
type Authenticator struct {
	w authenticator.Token
}

var _ authn.Token = (*Authenticator)(nil)

// AuthenticateToken sends a TokenReview for token, with the audiences of
// ctx when it has any (authn.WithAudiences), and returns the user the
// answer names. A review answered with authenticated false and no error is
// an unknown token (nil, false, nil); one with an error, or that could not
// be made, is (nil, false, err). When ctx has audiences, the answer's
// audiences (or, if it names none, the API audiences) must intersect them,
// and the response carries the intersection.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authn.Response, bool, error) {
	if auds, ok := authn.AudiencesFrom(ctx); ok {
		ctx = authenticator.WithAudiences(ctx, auds)
	}
	resp, ok, err := a.w.AuthenticateToken(ctx, token)
	if err != nil {
		return nil, false, redact(err, token)
	}
	if !ok || resp == nil || resp.User == nil {
		return nil, false, nil
	}
	u := resp.User
	return &authn.Response{
		User: authn.User{
			Name:   u.GetName(),
			UID:    u.GetUID(),
			Groups: u.GetGroups(),
			Extra:  u.GetExtra(),
		},
		Audiences:     resp.Audiences,
		Authenticator: Name,
	}, true, nil
}

// redact returns err, or, when its text holds the token (a service may
// quote the request it was sent), an error with the token cut out of it.
func redact(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return redactedError{msg: strings.ReplaceAll(err.Error(), token, "[redacted]")}
}

type redactedError struct{ msg string }

func (e redactedError) Error() string { return e.msg }
