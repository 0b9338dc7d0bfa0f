package aggregator_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclientset "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/apiserver/aggregator"
	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testwait"
)

// backend is an aggregated API server that records what it was sent.
type backend struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []*http.Request
}

func (b *backend) requests() []*http.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*http.Request(nil), b.seen...)
}

// startBackend serves example.com/v1 (widgets) with a certificate of
// serverCA for NAME.NAMESPACE.svc, and wants a client certificate of
// clientCA.
func startBackend(t *testing.T, serverCA, clientCA *testpki.Cert, dnsName string) *backend {
	t.Helper()
	b := &backend{}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Remote-User") != "system:kube-aggregator" {
			b.mu.Lock()
			b.seen = append(b.seen, r)
			b.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/example.com/v1/namespaces/default/widgets/moved":
			http.Redirect(w, r, "https://collector.invalid/widgets", http.StatusFound)
		case "/apis/example.com/v1":
			_ = json.NewEncoder(w).Encode(&metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
					{Name: "widgets", SingularName: "widget", Namespaced: true, Kind: "Widget", Verbs: metav1.Verbs{"get", "list"}}}})
		default:
			_, _ = io.WriteString(w, `{"kind":"WidgetList","apiVersion":"example.com/v1","items":[]}`)
		}
	}))
	serving := serverCA.Issue(t, testpki.Options{CN: "widgets", DNSNames: []string{dnsName},
		EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	pair, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	b.srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCA.Pool()}
	b.srv.StartTLS()
	t.Cleanup(b.srv.Close)
	return b
}

// resolver sends every service to one address, or fails.
type resolver struct{ host atomic.Pointer[string] }

func (r *resolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	h := r.host.Load()
	if h == nil {
		return nil, errors.New("no endpoint")
	}
	return &url.URL{Scheme: "https", Host: *h}, nil
}

type cluster struct {
	api      *apiservertest.Server
	apis     aggregatorclientset.Interface
	serverCA *testpki.Cert
	backend  *backend
	resolver *resolver
}

var (
	alice = authn.User{Name: "alice", UID: "uid-1", Groups: []string{"readers", authn.AllAuthenticated},
		Extra: map[string][]string{"scopes": {"a", "b"}}}
	bob = authn.User{Name: "bob", Groups: []string{authn.AllAuthenticated}}
)

// startCluster runs an API server whose aggregator proxies the
// APIServices of kube-system/widgets to a backend; alice may read
// example.com, bob nothing.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	serverCA, frontProxyCA := testpki.NewCA(t, "widgets-ca"), testpki.NewCA(t, "front-proxy-ca")
	certFile, keyFile := frontProxyCA.Issue(t, testpki.Options{CN: "front-proxy-client"}).WriteFiles(t, t.TempDir(), "front-proxy-client")
	c := &cluster{serverCA: serverCA, resolver: &resolver{}}
	c.backend = startBackend(t, serverCA, frontProxyCA, "widgets.kube-system.svc")
	host := strings.TrimPrefix(c.backend.srv.URL, "https://")
	c.resolver.host.Store(&host)
	agg, err := aggregator.New(aggregator.Options{ProxyClientCertFile: certFile, ProxyClientKeyFile: keyFile, Resolver: c.resolver})
	if err != nil {
		t.Fatal(err)
	}
	rules := authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		if a.User.Name == "alice" && a.APIGroup == "example.com" {
			return authz.Allow, "", nil
		}
		return authz.NoOpinion, "", nil
	})
	c.api = apiservertest.Start(t, apiservertest.WithAggregator(agg),
		apiservertest.WithUsers(map[string]authn.User{"alice-token": alice, "bob-token": bob}, rules))
	stop, err := agg.Start(context.Background(), c.api.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	if c.apis, err = aggregatorclientset.NewForConfig(c.api.Config); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.api.Client.CoreV1().Services("kube-system").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.api.Client.DiscoveryV1().EndpointSlices("kube-system").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "widgets-1", Labels: map[string]string{discoveryv1.LabelServiceName: "widgets"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](443)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// register writes the APIService of example.com/v1 for the widgets
// service with spec changed by edit.
func (c *cluster) register(t *testing.T, edit func(*apiregistrationv1.APIServiceSpec)) {
	t.Helper()
	ctx := context.Background()
	spec := apiregistrationv1.APIServiceSpec{Group: "example.com", Version: "v1", GroupPriorityMinimum: 100, VersionPriority: 100,
		Service: &apiregistrationv1.ServiceReference{Namespace: "kube-system", Name: "widgets"}, CABundle: c.serverCA.CertPEM}
	if edit != nil {
		edit(&spec)
	}
	old, err := c.apis.ApiregistrationV1().APIServices().Get(ctx, "v1.example.com", metav1.GetOptions{})
	if err == nil {
		old.Spec = spec
		_, err = c.apis.ApiregistrationV1().APIServices().Update(ctx, old, metav1.UpdateOptions{})
	} else {
		_, err = c.apis.ApiregistrationV1().APIServices().Create(ctx, &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: "v1.example.com"}, Spec: spec}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// waitAvailable waits for the APIService's Available condition to have
// status and reason.
func (c *cluster) waitAvailable(t *testing.T, status apiregistrationv1.ConditionStatus, reason string) {
	t.Helper()
	testwait.For(t, 30*time.Second, "Available "+string(status)+" "+reason, func() (bool, string) {
		api, err := c.apis.ApiregistrationV1().APIServices().Get(context.Background(), "v1.example.com", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range api.Status.Conditions {
			if cond.Type == apiregistrationv1.Available {
				return cond.Status == status && cond.Reason == reason, string(cond.Status) + " " + cond.Reason + ": " + cond.Message
			}
		}
		return false, "no condition"
	})
}

// get sends GET path with token and extra headers; it returns the status
// and the body.
func (c *cluster) get(t *testing.T, token, path string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.api.Config.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestProxyToAPIServiceWithService_I3(t *testing.T) {
	c := startCluster(t)
	c.register(t, nil)
	c.waitAvailable(t, apiregistrationv1.ConditionTrue, "Passed")

	t.Run("the user goes in X-Remote-* and the client's own are dropped", func(t *testing.T) {
		before := len(c.backend.requests())
		code, body := c.get(t, "alice-token", "/apis/example.com/v1/namespaces/default/widgets?labelSelector=a%3Db",
			http.Header{"X-Remote-User": {"mallory"}, "X-Remote-Group": {"system:masters"}, "X-Remote-Extra-Scopes": {"all"}})
		if code != http.StatusOK || !strings.Contains(body, "WidgetList") {
			t.Fatalf("got %d %s, want 200 and the backend's list", code, body)
		}
		seen := c.backend.requests()[before:]
		if len(seen) != 1 {
			t.Fatalf("the backend got %d requests, want 1", len(seen))
		}
		checkForwarded(t, seen[0])
	})

	t.Run("authorization comes before the proxy", func(t *testing.T) {
		before := len(c.backend.requests())
		code, body := c.get(t, "bob-token", "/apis/example.com/v1/namespaces/default/widgets", nil)
		if code != http.StatusForbidden || !strings.Contains(body, `User \"bob\" cannot list resource \"widgets\" in API group \"example.com\"`) {
			t.Errorf("got %d %s, want kube's 403", code, body)
		}
		if n := len(c.backend.requests()) - before; n != 0 {
			t.Errorf("the backend got %d requests of a refused user", n)
		}
	})

	t.Run("a redirect of the backend is refused with a 502", func(t *testing.T) {
		// A client that followed it would take its request, and maybe its
		// credential, wherever the aggregated server says.
		req, err := http.NewRequest(http.MethodGet, c.api.Config.Host+"/apis/example.com/v1/namespaces/default/widgets/moved", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer alice-token")
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Location") != "" ||
			string(body) != "the backend attempted to redirect this request, which is not permitted" {
			t.Errorf("got %d, Location %q, %q; want kube's 502 and no Location", resp.StatusCode, resp.Header.Get("Location"), body)
		}
	})

	t.Run("discovery lists the remote group", func(t *testing.T) {
		disc, err := kubernetes.NewForConfig(c.api.Config)
		if err != nil {
			t.Fatal(err)
		}
		testwait.For(t, 30*time.Second, "example.com/v1 widgets in discovery", func() (bool, string) {
			rl, err := disc.Discovery().ServerResourcesForGroupVersion("example.com/v1")
			if err != nil {
				return false, err.Error()
			}
			_, lists, err := disc.Discovery().ServerGroupsAndResources()
			if err != nil {
				return false, err.Error()
			}
			for _, l := range lists {
				if l.GroupVersion == "example.com/v1" && len(l.APIResources) == 1 && l.APIResources[0].Name == "widgets" {
					return len(rl.APIResources) == 1, ""
				}
			}
			return false, "not in aggregated discovery"
		})
		code, body := c.get(t, "", "/apis/example.com", nil)
		if code != http.StatusOK || !strings.Contains(body, `"preferredVersion":{"groupVersion":"example.com/v1","version":"v1"}`) {
			t.Errorf("/apis/example.com: got %d %s", code, body)
		}
		code, body = c.get(t, "", "/apis", nil)
		if code != http.StatusOK || !strings.HasSuffix(strings.TrimSpace(body), `{"name":"example.com","versions":[{"groupVersion":"example.com/v1","version":"v1"}],"preferredVersion":{"groupVersion":"example.com/v1","version":"v1"}}]}`) {
			t.Errorf("/apis: got %d %s, want example.com last (priority 100)", code, body)
		}
	})

}

func TestAPIServiceAvailability_I3(t *testing.T) {
	c := startCluster(t)
	c.register(t, nil)
	c.waitAvailable(t, apiregistrationv1.ConditionTrue, "Passed")

	t.Run("a CA bundle that does not verify the server fails discovery and answers 503", func(t *testing.T) {
		other := testpki.NewCA(t, "other")
		c.register(t, func(s *apiregistrationv1.APIServiceSpec) { s.CABundle = other.CertPEM })
		c.waitAvailable(t, apiregistrationv1.ConditionFalse, "FailedDiscoveryCheck")
		code, body := c.get(t, "alice-token", "/apis/example.com/v1/namespaces/default/widgets", nil)
		if code != http.StatusServiceUnavailable || strings.TrimSpace(body) != "service unavailable" {
			t.Errorf("got %d %q, want 503 service unavailable", code, body)
		}
	})

	t.Run("insecureSkipTLSVerify passes without a CA bundle", func(t *testing.T) {
		c.register(t, func(s *apiregistrationv1.APIServiceSpec) { s.CABundle, s.InsecureSkipTLSVerify = nil, true })
		c.waitAvailable(t, apiregistrationv1.ConditionTrue, "Passed")
		if code, body := c.get(t, "alice-token", "/apis/example.com/v1/namespaces/default/widgets", nil); code != http.StatusOK {
			t.Errorf("got %d %s, want 200", code, body)
		}
	})

	t.Run("no endpoint answers 503", func(t *testing.T) {
		host := c.resolver.host.Swap(nil)
		t.Cleanup(func() { c.resolver.host.Store(host) })
		code, body := c.get(t, "alice-token", "/apis/example.com/v1/namespaces/default/widgets", nil)
		if code != http.StatusServiceUnavailable || strings.TrimSpace(body) != "service unavailable" {
			t.Errorf("got %d %q, want 503 service unavailable", code, body)
		}
	})

	t.Run("a missing service is ServiceNotFound", func(t *testing.T) {
		c.register(t, func(s *apiregistrationv1.APIServiceSpec) {
			s.Service = &apiregistrationv1.ServiceReference{Namespace: "kube-system", Name: "gone"}
		})
		c.waitAvailable(t, apiregistrationv1.ConditionFalse, "ServiceNotFound")
	})
}

// checkForwarded checks what the backend got for alice's request.
func checkForwarded(t *testing.T, r *http.Request) {
	t.Helper()
	if got := r.Header.Values("X-Remote-User"); len(got) != 1 || got[0] != "alice" {
		t.Errorf("X-Remote-User: got %q, want [alice]", got)
	}
	if got := r.Header.Values("X-Remote-Group"); strings.Join(got, ",") != "readers,system:authenticated" {
		t.Errorf("X-Remote-Group: got %q, want alice's groups", got)
	}
	if got := r.Header.Values("X-Remote-Extra-Scopes"); strings.Join(got, ",") != "a,b" {
		t.Errorf("X-Remote-Extra-Scopes: got %q, want [a b]", got)
	}
	if got := r.Header.Get("X-Remote-Uid"); got != "uid-1" {
		t.Errorf("X-Remote-Uid: got %q, want uid-1", got)
	}
	if got := r.Header.Get("Authorization"); got != "" {
		t.Errorf("the client's credential reached the backend: %q", got)
	}
	if got := r.TLS.PeerCertificates[0].Subject.CommonName; got != "front-proxy-client" {
		t.Errorf("client certificate CN: got %q, want front-proxy-client", got)
	}
	if got := r.URL.RawQuery; got != "labelSelector=a%3Db" {
		t.Errorf("query: got %q, want labelSelector=a%%3Db", got)
	}
}
