package manager

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/oauth2"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// ServiceAccountNamespace holds the service accounts controllers run as.
const ServiceAccountNamespace = metav1.NamespaceSystem

// Token lifetimes, as kube-controller-manager asks for them: an hour, and
// a fresh token once less than a fifth of it is left. A token the API
// server grants for less than tokenMinLifetime (a clock skew) is treated
// as lasting that long.
const (
	tokenExpirationSeconds = 3600
	tokenLeewayPercent     = 20
	tokenMinLifetime       = 10 * time.Minute
)

// clientBuilder gives each controller the configuration it talks to the
// API server with (docs/kubernetes-behaviour.md G.15). root is the
// manager's own identity; with service accounts, a controller's
// configuration carries no credentials of the manager's and authenticates
// with a bearer token the TokenRequest API issues for its service account
// in kube-system, requested through core, renewed before it expires and
// at once after a 401.
type clientBuilder struct {
	root            *rest.Config
	serviceAccounts bool
	core            kubernetes.Interface
	logger          *slog.Logger
	// retryDelay is the wait before a token request's first retry.
	retryDelay time.Duration

	mu     sync.Mutex
	tokens map[string]transport.ResettableTokenSource // by service account
}

// config returns the configuration of the component or controller name
// (its service account when it has one). The user agent ends in name, as
// kube-controller-manager's do; with service accounts it ends in the
// service account's user name instead.
func (b *clientBuilder) config(ctx context.Context, name, serviceAccount string) (*rest.Config, error) {
	if !b.serviceAccounts || serviceAccount == "" {
		return rest.AddUserAgent(rest.CopyConfig(b.root), name), nil
	}
	if _, err := b.ensureServiceAccount(ctx, serviceAccount); err != nil {
		return nil, fmt.Errorf("service account %s/%s: %w", ServiceAccountNamespace, serviceAccount, err)
	}
	cfg := rest.AnonymousClientConfig(b.root)
	rest.AddUserAgent(cfg, "system:serviceaccount:"+ServiceAccountNamespace+":"+serviceAccount)
	b.mu.Lock()
	ts, ok := b.tokens[serviceAccount]
	if !ok {
		ts = transport.NewCachedTokenSource(&tokenSource{b: b, serviceAccount: serviceAccount, ctx: ctx})
		b.tokens[serviceAccount] = ts
	}
	b.mu.Unlock()
	cfg.Wrap(transport.ResettableTokenSourceWrapTransport(ts))
	return cfg, nil
}

// ensureServiceAccount returns the service account, creating it (and its
// namespace, if that is missing and the manager may) when it does not
// exist.
func (b *clientBuilder) ensureServiceAccount(ctx context.Context, name string) (*corev1.ServiceAccount, error) {
	sas := b.core.CoreV1().ServiceAccounts(ServiceAccountNamespace)
	sa, err := sas.Get(ctx, name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return sa, err
	}
	namespaces := b.core.CoreV1().Namespaces()
	if _, err := namespaces.Get(ctx, ServiceAccountNamespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccountNamespace}}
		if _, err := namespaces.Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			b.logger.Warn("cannot create the controllers' namespace", "namespace", ServiceAccountNamespace, "err", err)
		}
	}
	sa, err = sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return sas.Get(ctx, name, metav1.GetOptions{})
	}
	return sa, err
}

// tokenRetryDelay is the wait before the first retry of a token request;
// it doubles before each next one, over tokenAttempts attempts in all.
// Run reads it once, into its clientBuilder.
var tokenRetryDelay = 500 * time.Millisecond

const tokenAttempts = 4

// tokenSource requests a service account's tokens.
type tokenSource struct {
	b              *clientBuilder
	serviceAccount string
	// ctx is the manager's run, which a token source outlives no more
	// than the configurations it serves do: once it is done, a pending
	// request and the wait before a retry end at once. (A token source
	// is asked for tokens without a context of the request's own.)
	ctx context.Context
}

// Token asks for a new token, retrying a few times over some seconds, and
// says it expires once the leeway before its real expiry begins.
func (s *tokenSource) Token() (*oauth2.Token, error) {
	var last error
	delay := s.b.retryDelay
	for attempt := range tokenAttempts {
		if attempt > 0 {
			t := time.NewTimer(delay)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return nil, s.failed(last)
			case <-t.C:
			}
			delay *= 2
		}
		tok, err := s.request(s.ctx)
		if err == nil {
			return tok, nil
		}
		last = err
		if s.ctx.Err() != nil {
			return nil, s.failed(err)
		}
		s.b.logger.Warn("cannot get a token for a controller's service account",
			"serviceAccount", ServiceAccountNamespace+"/"+s.serviceAccount, "err", err)
	}
	return nil, s.failed(last)
}

// failed is the error of a Token call that got no token, last failing
// with err.
func (s *tokenSource) failed(err error) error {
	if s.ctx.Err() != nil {
		err = fmt.Errorf("the controller manager is stopping: %w", context.Cause(s.ctx))
	}
	return fmt.Errorf("token for %s/%s: %w", ServiceAccountNamespace, s.serviceAccount, err)
}

func (s *tokenSource) request(ctx context.Context) (*oauth2.Token, error) {
	// The service account may have been deleted since the controller
	// started.
	if _, err := s.b.ensureServiceAccount(ctx, s.serviceAccount); err != nil {
		return nil, err
	}
	expiration := int64(tokenExpirationSeconds)
	tr, err := s.b.core.CoreV1().ServiceAccounts(ServiceAccountNamespace).CreateToken(ctx, s.serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration}},
		metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	lifetime := tr.Status.ExpirationTimestamp.Sub(now)
	if lifetime < tokenMinLifetime {
		lifetime = tokenMinLifetime
	}
	leeway := lifetime * tokenLeewayPercent / 100
	return &oauth2.Token{AccessToken: tr.Status.Token, TokenType: "Bearer", Expiry: now.Add(lifetime - leeway)}, nil
}
