// Package apiservertest runs kubegate's API server in process for the
// tests of its API clients (controllers, nodes, the scheduler): on a bolt
// store in a temporary directory, with the server's admission chain
// (unless WithAdmission) and default service accounts (unless
// WithoutDefaultServiceAccounts), admitting every request as a cluster
// admin.
package apiservertest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/pem"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/admission"
	"github.com/kubegate/kubegate/apiserver/registry"
	"github.com/kubegate/kubegate/apiserver/registry/authentication"
	"github.com/kubegate/kubegate/apiserver/registry/authorization"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	authnx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/store"
	"github.com/kubegate/kubegate/store/bolt"
)

// Server is a running API server.
type Server struct {
	// Config reaches the server, unthrottled, as a cluster admin.
	Config *rest.Config
	// Client is a clientset made from Config.
	Client kubernetes.Interface
	// API is the server itself, for what only its methods do (installing
	// resources at run time).
	API *apiserver.Server
}

// Option changes how Start runs the server.
type Option func(*options)

type options struct {
	noServiceAccounts, tokens bool
	users                     map[string]authn.User
	clientCA                  []byte
	authorizer                authz.Authorizer
	// admission replaces the server's chain when admissionSet.
	admission    []apiserver.Admission
	admissionSet bool
	now          func() time.Time
	aggregator   apiserver.Aggregator
}

// WithUsers authenticates a request whose bearer token is a key of users
// as that user (any other request is still the cluster admin), authorizes
// every request with authorizer after system:masters, as kubegate
// apiserver chains them, and serves subjectaccessreviews answered by
// that chain.
func WithUsers(users map[string]authn.User, authorizer authz.Authorizer) Option {
	return func(o *options) { o.users, o.authorizer = users, authorizer }
}

// WithClientCA serves over TLS and authenticates a request with a client
// certificate that caPEM verifies as authn/x509 does (CN the user, O the
// groups, and system:authenticated), as kubegate apiserver's
// --client-ca-file does; a request without one is authenticated as
// before. Server.Config trusts the server's certificate.
func WithClientCA(caPEM []byte) Option {
	return func(o *options) { o.clientCA = caPEM }
}

// WithoutDefaultServiceAccounts runs the server as kube-apiserver runs:
// no namespace gets a default service account unless a controller (the
// serviceaccount controller) makes it.
func WithoutDefaultServiceAccounts() Option {
	return func(o *options) { o.noServiceAccounts = true }
}

// WithAdmission admits requests with plugins, in order, in place of the
// server's admission chain (admission.Chain); with none, a request is
// stored as it comes, as by an API server run without admission plugins.
func WithAdmission(plugins ...apiserver.Admission) Option {
	return func(o *options) { o.admission, o.admissionSet = plugins, true }
}

// WithClock gives the server now as its clock in place of time.Now: the
// creation times it sets and the ages its tables show.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// WithAggregator serves the group versions of APIServices with a service
// through agg (I.3).
func WithAggregator(agg apiserver.Aggregator) Option {
	return func(o *options) { o.aggregator = agg }
}

// WithTokenReviews serves serviceaccounts/token (TokenRequest, signed
// with a key made for the server, issuer and audience
// TokenIssuer) and tokenreviews, which authenticate the tokens it issues
// as kubegate apiserver does.
func WithTokenReviews() Option {
	return func(o *options) { o.tokens = true }
}

// TokenIssuer is the issuer and API audience of the tokens a server
// started WithTokenReviews issues.
const TokenIssuer = "https://kubernetes.default.svc.cluster.local"

// Start runs the server until the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var creators map[string]apiserver.Creator
	if o.tokens {
		if creators, err = tokenCreators(st); err != nil {
			st.Close()
			t.Fatal(err)
		}
	}
	authorizer := authz.Authorizer(authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
		return authz.Allow, "", nil
	}))
	if o.authorizer != nil {
		authorizer = authz.Union(authz.PrivilegedGroups(authz.SystemMasters), o.authorizer)
		if creators == nil {
			creators = map[string]apiserver.Creator{}
		}
		maps.Copy(creators, authentication.Creators(authentication.Config{}))
		maps.Copy(creators, authorization.Creators(authorization.Config{Authorizer: authorizer}))
	}
	var certs *authnx509.Authenticator
	if o.clientCA != nil {
		if certs, err = authnx509.New(o.clientCA, authnx509.Options{CacheSize: -1}); err != nil {
			st.Close()
			t.Fatal(err)
		}
	}
	chain := admission.Chain(st)
	if o.admissionSet {
		chain = o.admission
	}
	srv, err := apiserver.New(apiserver.Config{
		Store:     st,
		Resources: registry.Resources(),
		Creators:  creators,
		Authenticator: authn.RequestFunc(func(r *http.Request) (*authn.Response, bool, error) {
			if certs != nil {
				if resp, ok, err := certs.AuthenticateRequest(r); ok || err != nil {
					return resp, ok, err
				}
			}
			if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				if u, ok := o.users[token]; ok {
					return &authn.Response{User: u}, true, nil
				}
			}
			return &authn.Response{User: authn.User{Name: "admin", Groups: []string{"system:masters", authn.AllAuthenticated}}}, true, nil
		}),
		Authorizer: authorizer,
		Admission:  chain,
		Now:        o.now,
		Logger:     slog.New(slog.DiscardHandler),
		Aggregator: o.aggregator,
	})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sas := &admission.ServiceAccounts{Store: st, Logger: slog.New(slog.DiscardHandler)}
	if err := startUnless(ctx, o.noServiceAccounts, sas); err != nil {
		cancel()
		srv.Close()
		st.Close()
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv.Handler())
	if o.clientCA != nil {
		hs.EnableHTTP2 = true
		hs.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
		hs.StartTLS()
	} else {
		hs.Start()
	}
	t.Cleanup(func() {
		cancel()
		hs.CloseClientConnections()
		hs.Close()
		srv.Close()
		st.Close()
	})
	cfg := &rest.Config{Host: hs.URL, QPS: -1}
	if o.clientCA != nil {
		cfg.CAData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw})
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Server{Config: cfg, Client: cs, API: srv}
}

// Run runs run(ctx) in the background until the test ends, then checks
// that it returned nil.
func Run(t testing.TB, run func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
}

// startUnless starts the default service accounts job unless skip.
func startUnless(ctx context.Context, skip bool, sas *admission.ServiceAccounts) error {
	if skip {
		return nil
	}
	return sas.Start(ctx)
}

// tokenCreators returns the TokenRequest and TokenReview endpoints of
// WithTokenReviews.
func tokenCreators(st store.Store) (map[string]apiserver.Creator, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	auds := []string{TokenIssuer}
	issuer, err := serviceaccount.NewIssuer(key, serviceaccount.IssuerOptions{Issuer: TokenIssuer, APIAudiences: auds})
	if err != nil {
		return nil, err
	}
	sa, err := serviceaccount.New(serviceaccount.Options{Issuers: auds, Audiences: auds, Getter: authentication.Getter{Store: st}},
		[]crypto.PublicKey{key.Public()})
	if err != nil {
		return nil, err
	}
	tokens := authn.New(authn.Config{Tokens: []authn.Token{sa}})
	return authentication.Creators(authentication.Config{Tokens: tokens, APIAudiences: auds, Issuer: issuer}), nil
}
