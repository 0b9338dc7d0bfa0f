package metrics_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	listersv1 "k8s.io/client-go/listers/core/v1"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclientset "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/requestheader"
	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/nodesim"
	"github.com/kubegate/kubegate/nodesim/metrics"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 700_000_000, time.UTC)

func container(name, cpu, memory string) corev1.Container {
	c := corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}
	if cpu != "" {
		c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		c.Resources.Requests[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return c
}

func pod(ns, name, node string, phase corev1.PodPhase, annotations map[string]string, cs ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name[:3]}, Annotations: annotations},
		Spec: corev1.PodSpec{NodeName: node, Containers: cs}, Status: corev1.PodStatus{Phase: phase}}
}

func node(name string, simulated, ready bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": "a"}}}
	if simulated {
		n.Labels[nodesim.InstanceTypeLabel] = nodesim.InstanceType
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
	return n
}

type fixture struct {
	addr   string
	caPEM  []byte
	client *testpki.Cert // front-proxy-client
	other  *testpki.Cert // a certificate of the front-proxy CA with another CN
}

// serve runs a metrics server over the pods and nodes below.
func serve(t *testing.T) *fixture {
	t.Helper()
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, p := range []*corev1.Pod{
		pod("default", "web-1", "n1", corev1.PodRunning, nil, container("a", "200m", "100Mi"), container("b", "", "")),
		pod("default", "web-2", "n1", corev1.PodRunning,
			map[string]string{metrics.CPUUsageAnnotation: "150%", metrics.MemoryUsageAnnotation: "300Mi"}, container("a", "200m", "100Mi")),
		pod("default", "web-3", "", corev1.PodPending, nil, container("a", "200m", "100Mi")),
		pod("other", "job-1", "n2", corev1.PodRunning, map[string]string{metrics.CPUUsageAnnotation: "lots"}, container("a", "1", "1Gi")),
		pod("other", "job-2", "n2", corev1.PodSucceeded, nil, container("a", "1", "1Gi")),
	} {
		if err := pods.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []*corev1.Node{node("n1", true, true), node("n2", true, true), node("n3", false, true), node("n4", true, false)} {
		if err := nodes.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	frontCA := testpki.NewCA(t, "front-proxy-ca")
	ro := requestheader.Default()
	ro.AllowedNames = []string{"front-proxy-client"}
	auth, err := requestheader.New(frontCA.CertPEM, ro)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := metrics.New(listersv1.NewPodLister(pods), listersv1.NewNodeLister(nodes), auth, metrics.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	cert, caPEM, err := metrics.ServingCert(now)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l, cert) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &fixture{addr: l.Addr().String(), caPEM: caPEM,
		client: frontCA.Issue(t, testpki.Options{CN: "front-proxy-client"}), other: frontCA.Issue(t, testpki.Options{CN: "mallory"})}
}

// clientset reaches the server as the aggregator does: the CA bundle and
// server name of the APIService, cert, and the user in X-Remote-User.
func (f *fixture) clientset(t *testing.T, cert *testpki.Cert, protobuf bool) *metricsclientset.Clientset {
	t.Helper()
	cfg := &restclient.Config{Host: "https://" + f.addr, TLSClientConfig: restclient.TLSClientConfig{
		CAData: f.caPEM, ServerName: metrics.ServiceName + "." + metrics.Namespace + ".svc"}}
	if cert != nil {
		cfg.CertData, cfg.KeyData = cert.CertPEM, cert.KeyPEM
	}
	if protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return transport.NewAuthProxyRoundTripper("alice", "", []string{"system:authenticated"}, nil, rt)
	})
	cs, err := metricsclientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func wantUsage(t *testing.T, what string, got corev1.ResourceList, cpu, memory string) {
	t.Helper()
	if q := got[corev1.ResourceCPU]; q.Cmp(resource.MustParse(cpu)) != 0 {
		t.Errorf("%s cpu: got %s, want %s", what, q.String(), cpu)
	}
	if q := got[corev1.ResourceMemory]; q.Cmp(resource.MustParse(memory)) != 0 {
		t.Errorf("%s memory: got %s, want %s", what, q.String(), memory)
	}
}

func TestResourceMetricsOfSimulatedNodes_I4(t *testing.T) {
	f := serve(t)
	ctx := context.Background()
	for _, protobuf := range []bool{false, true} {
		name := "json"
		if protobuf {
			name = "protobuf"
		}
		t.Run(name, func(t *testing.T) {
			cs := f.clientset(t, f.client, protobuf).MetricsV1beta1()
			nodes, err := cs.NodeMetricses().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes.Items) != 2 || nodes.Items[0].Name != "n1" || nodes.Items[1].Name != "n2" {
				t.Fatalf("nodes: got %+v, want n1 and n2 (simulated and Ready)", nodes.Items)
			}
			n1 := nodes.Items[0]
			// base 100m/512Mi + web-1 (100m/50Mi + 5m/8Mi) + web-2 (300m/300Mi)
			wantUsage(t, "n1", n1.Usage, "505m", "870Mi")
			// base + job-1 at the default 50% (its annotation does not parse)
			wantUsage(t, "n2", nodes.Items[1].Usage, "600m", "1024Mi")
			if !n1.Timestamp.Time.Equal(now.Truncate(time.Second)) || n1.Window.Duration != 15*time.Second {
				t.Errorf("n1 sample: got %v over %v, want %v over 15s", n1.Timestamp, n1.Window.Duration, now.Truncate(time.Second))
			}
			if n1.Labels["zone"] != "a" {
				t.Errorf("n1 labels: got %v, want the node's", n1.Labels)
			}
			if _, err := cs.NodeMetricses().Get(ctx, "n3", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("n3 (not simulated): got %v, want NotFound", err)
			}

			pods, err := cs.PodMetricses("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != 2 || pods.Items[0].Name != "web-1" || pods.Items[1].Name != "web-2" {
				t.Fatalf("pods: got %+v, want the running web-1 and web-2", pods.Items)
			}
			w1 := pods.Items[0].Containers
			if len(w1) != 2 {
				t.Fatalf("web-1 containers: got %+v", w1)
			}
			wantUsage(t, "web-1/a", w1[0].Usage, "100m", "50Mi")
			wantUsage(t, "web-1/b (no requests)", w1[1].Usage, "5m", "8Mi")
			wantUsage(t, "web-2/a", pods.Items[1].Containers[0].Usage, "300m", "300Mi")

			all, err := cs.PodMetricses("").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(all.Items) != 3 || all.Items[2].Namespace != "other" || all.Items[2].Name != "job-1" {
				t.Errorf("all pods: got %d items, want web-1, web-2 and other/job-1", len(all.Items))
			}
			one, err := cs.PodMetricses("other").Get(ctx, "job-1", metav1.GetOptions{})
			if err != nil || one.Namespace != "other" {
				t.Fatalf("get other/job-1: %v %+v", err, one)
			}
			for _, name := range []string{"web-3", "job-2", "nope"} {
				if _, err := cs.PodMetricses("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("%s: got %v, want NotFound", name, err)
				}
			}
		})
	}
}

func TestResourceMetricsNeedTheFrontProxy_I4(t *testing.T) {
	f := serve(t)
	ctx := context.Background()
	for name, cert := range map[string]*testpki.Cert{"no client certificate": nil, "a CN not allowed": f.other} {
		t.Run(name, func(t *testing.T) {
			_, err := f.clientset(t, cert, false).MetricsV1beta1().NodeMetricses().List(ctx, metav1.ListOptions{})
			if !apierrors.IsUnauthorized(err) {
				t.Errorf("got %v, want 401", err)
			}
		})
	}
	t.Run("health needs nothing", func(t *testing.T) {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(f.caPEM)
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
		resp, err := c.Get("https://" + f.addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("got %d, want 200", resp.StatusCode)
		}
	})
}

func TestUsageAnnotations_I4(t *testing.T) {
	for _, tc := range []struct {
		cpu, memory         string
		wantCPU, wantMemory string
	}{
		{"", "", "100m", "128Mi"},
		{"200%", "25%", "400m", "64Mi"},
		{"750m", "1Gi", "750m", "1Gi"},
		{"-5%", "-1Gi", "100m", "128Mi"},
		{"0%", "0", "0", "0"},
	} {
		t.Run(tc.cpu+","+tc.memory, func(t *testing.T) {
			pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			ann := map[string]string{}
			if tc.cpu != "" {
				ann[metrics.CPUUsageAnnotation] = tc.cpu
			}
			if tc.memory != "" {
				ann[metrics.MemoryUsageAnnotation] = tc.memory
			}
			_ = pods.Add(pod("default", "web-1", "n1", corev1.PodRunning, ann, container("a", "200m", "256Mi")))
			nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			srv, err := metrics.New(listersv1.NewPodLister(pods), listersv1.NewNodeLister(nodes), allowAll{}, metrics.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rec := newRecorder()
			req, _ := http.NewRequest(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web-1", nil)
			srv.ServeHTTP(rec, req)
			var m metricsv1beta1.PodMetrics
			rec.decode(t, &m)
			wantUsage(t, "web-1/a", m.Containers[0].Usage, tc.wantCPU, tc.wantMemory)
		})
	}
}

// allowAll authenticates every request as the aggregator.
type allowAll struct{}

func (allowAll) AuthenticateRequest(*http.Request) (*authn.Response, bool, error) {
	return &authn.Response{User: authn.User{Name: "system:kube-aggregator"}}, true, nil
}

type recorder struct{ *httptest.ResponseRecorder }

func newRecorder() recorder { return recorder{httptest.NewRecorder()} }

func (r recorder) decode(t *testing.T, into any) {
	t.Helper()
	if r.Code != http.StatusOK {
		t.Fatalf("got %d %s, want 200", r.Code, r.Body)
	}
	if err := json.Unmarshal(r.Body.Bytes(), into); err != nil {
		t.Fatal(err)
	}
}
