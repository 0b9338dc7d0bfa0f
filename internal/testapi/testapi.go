// Package testapi runs kubegate's API server in process for the tests of
// its API clients (controllers, nodes, the scheduler): on a bolt store in
// a temporary directory, with the server's admission chain and default
// service accounts (unless WithoutDefaultServiceAccounts), admitting every
// request as a cluster admin.
package testapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/admission"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/store/bolt"
)

// Server is a running API server.
type Server struct {
	// Config reaches the server, unthrottled, as a cluster admin.
	Config *rest.Config
	// Client is a clientset made from Config.
	Client kubernetes.Interface
}

// Option changes how Start runs the server.
type Option func(*options)

type options struct{ noServiceAccounts bool }

// WithoutDefaultServiceAccounts runs the server as kube-apiserver runs:
// no namespace gets a default service account unless a controller (the
// serviceaccount controller) makes it.
func WithoutDefaultServiceAccounts() Option {
	return func(o *options) { o.noServiceAccounts = true }
}

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
	srv, err := apiserver.New(apiserver.Config{
		Store: st,
		Authenticator: authn.RequestFunc(func(*http.Request) (*authn.Response, bool, error) {
			return &authn.Response{User: authn.User{Name: "admin", Groups: []string{"system:masters", authn.AllAuthenticated}}}, true, nil
		}),
		Authorizer: authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
			return authz.Allow, "", nil
		}),
		Admission: admission.Chain(st),
		Logger:    slog.New(slog.DiscardHandler),
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
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		cancel()
		hs.CloseClientConnections()
		hs.Close()
		srv.Close()
		st.Close()
	})
	cfg := &rest.Config{Host: hs.URL, QPS: -1}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Server{Config: cfg, Client: cs}
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
