package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/store/bolt"
)

// testServer is a Server on a bolt store in a temporary directory, behind an
// httptest server, with an authenticator that accepts everyone as an admin
// and an authorizer that allows everything.
type testServer struct {
	*Server
	store *bolt.Store
	http  *httptest.Server
}

type testOption func(*Config)

// servedResources, once served_test.go (an external test package, since
// apiserver/registry imports this one) has set it, returns the resources
// of apiserver/registry, so that every test server serves what kubegate
// serves.
var servedResources func() []*Resource

func newTestServer(t testing.TB, opts ...testOption) *testServer {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Store: st,
		Authenticator: authn.RequestFunc(func(r *http.Request) (*authn.Response, bool, error) {
			return &authn.Response{User: authn.User{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}}, true, nil
		}),
		Authorizer: authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
			return authz.Allow, "", nil
		}),
	}
	if servedResources != nil {
		cfg.Resources = servedResources()
	}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		s.Close()
		st.Close()
	})
	return &testServer{Server: s, store: st, http: hs}
}

// restConfig is a client config for the test server; protobuf selects
// protobuf as the content type.
func (ts *testServer) restConfig(protobuf bool) *rest.Config {
	c := &rest.Config{Host: ts.http.URL, QPS: -1}
	if protobuf {
		c.ContentType = "application/vnd.kubernetes.protobuf"
	}
	return c
}

func (ts *testServer) clientset(t testing.TB, protobuf bool) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(ts.restConfig(protobuf))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
