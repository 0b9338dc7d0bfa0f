package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testwait"
)

const metricsWait = 60 * time.Second

const loadDeploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: load, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: load}}
  template:
    metadata: {labels: {app: load}}
    spec:
      containers:
      - name: app
        image: registry.example/app:1
        resources: {requests: {cpu: 200m, memory: 128Mi}}
`

// waitOutput runs kubectl args until its output has every one of want.
func (c *upCluster) waitOutput(t *testing.T, what string, want []string, args ...string) string {
	t.Helper()
	var out string
	testwait.For(t, metricsWait, what, func() (bool, string) {
		res := c.kubectl(t, nil, args...)
		out = res.stdout
		if res.code != 0 {
			return false, res.stderr
		}
		for _, w := range want {
			if !strings.Contains(res.stdout, w) {
				return false, res.stdout
			}
		}
		return true, ""
	})
	return out
}

// topLoad waits until `kubectl top pod -l app=load` shows both pods of
// the load Deployment using cpu and memory.
func topLoad(t *testing.T, c *upCluster, cpu, memory string) {
	t.Helper()
	testwait.For(t, metricsWait, "both load pods at "+cpu+" and "+memory, func() (bool, string) {
		res := c.kubectl(t, nil, "top", "pod", "-l", "app=load", "--no-headers")
		lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
		if res.code != 0 || len(lines) != 2 {
			return false, res.stdout + res.stderr
		}
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) != 3 || f[1] != cpu || f[2] != memory {
				return false, res.stdout
			}
		}
		return true, ""
	})
}

func TestKubectlTopOnSimulatedNodes_I4(t *testing.T) {
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0, "--nodes", "3")
	c.waitOutput(t, "the metrics APIService Available", []string{"True"},
		"get", "apiservice", "v1beta1.metrics.k8s.io", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
	// A node without pods uses its base: 100m and 512Mi.
	c.waitOutput(t, "kubectl top nodes", []string{"node-1", "node-2", "node-3", "100m", "512Mi"}, "top", "nodes")
	raw := c.waitOutput(t, "the raw NodeMetricsList", []string{`"kind":"NodeMetricsList"`, `"name":"node-1"`},
		"get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes")
	if !strings.Contains(raw, `"apiVersion":"metrics.k8s.io/v1beta1"`) {
		t.Errorf("raw list: %s", raw)
	}
	c.waitOutput(t, "metrics.k8s.io in api-resources", []string{"NodeMetrics", "PodMetrics"}, "api-resources", "--api-group=metrics.k8s.io")

	must(t, c.kubectl(t, []byte(loadDeploymentYAML), "apply", "-f", "-"), "created")
	// Half of each request by default.
	c.waitOutput(t, "kubectl top pods -A", []string{"default", "load-", "100m", "64Mi"}, "top", "pods", "-A")
	topLoad(t, c, "100m", "64Mi")

	// The load rises when the pods say so.
	must(t, c.kubectl(t, nil, "annotate", "pods", "-l", "app=load", "--overwrite",
		"nodesim.kubegate.io/cpu-usage=300%", "nodesim.kubegate.io/memory-usage=200Mi"), "annotated")
	topLoad(t, c, "600m", "200Mi")
	// And the nodes carry it: 1.2 cores over the base in all.
	testwait.For(t, metricsWait, "the nodes' usage to sum the pods'", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes")
		return strings.Count(res.stdout, `"cpu":"700m"`) == 2 || strings.Count(res.stdout, `"cpu":"1300m"`) == 1, res.stdout
	})
}

// headerRecorder is an aggregated API server that keeps the headers of
// what it was sent.
type headerRecorder struct {
	mu   sync.Mutex
	seen []http.Header
}

func (h *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/apis/e2e.example.com/v1" {
		_, _ = io.WriteString(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"e2e.example.com/v1","resources":[{"name":"things","singularName":"thing","namespaced":false,"kind":"Thing","verbs":["get","list"]}]}`)
		return
	}
	h.mu.Lock()
	h.seen = append(h.seen, r.Header.Clone())
	h.mu.Unlock()
	_, _ = io.WriteString(w, `{"kind":"ThingList","apiVersion":"e2e.example.com/v1","metadata":{},"items":[]}`)
}

func (h *headerRecorder) last() http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.seen) == 0 {
		return nil
	}
	return h.seen[len(h.seen)-1]
}

func TestAggregatedServerSeesOnlyTheAuthenticatedUser_I3(t *testing.T) {
	requireTool(t, "kubectl")
	ip := hostIP(t)
	ca := testpki.NewCA(t, "e2e aggregated CA")
	leaf := ca.Issue(t, testpki.Options{CN: "things.default.svc", DNSNames: []string{"things.default.svc"},
		EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	rec := &headerRecorder{}
	srv := httptest.NewUnstartedServer(rec)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener.Close()
	srv.Listener = l
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port := l.Addr().(*net.TCPAddr).Port

	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0)
	objs := serviceAt("things", port, ip) + fmt.Sprintf(`---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.e2e.example.com}
spec:
  group: e2e.example.com
  version: v1
  groupPriorityMinimum: 100
  versionPriority: 100
  service: {namespace: default, name: things}
  caBundle: %s
`, base64.StdEncoding.EncodeToString(ca.CertPEM))
	must(t, c.kubectl(t, []byte(objs), "apply", "-f", "-"), "created")
	c.waitOutput(t, "the APIService Available", []string{"True"},
		"get", "apiservice", "v1.e2e.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
	whoami := c.kubectl(t, nil, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	if whoami.code != 0 || whoami.stdout == "" {
		t.Fatalf("kubectl auth whoami: %+v", whoami)
	}

	cfg, err := clientcmd.BuildConfigFromFlags(c.server, filepath.Join(c.dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := restclient.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, c.server+"/apis/e2e.example.com/v1/things", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Remote-User", "mallory")
	req.Header.Set("X-Remote-Group", "evil-group")
	req.Header.Set("X-Remote-Extra-Scopes", "everything")
	resp, err := (&http.Client{Transport: rt, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "ThingList") {
		t.Fatalf("got %d %s, want the aggregated server's list", resp.StatusCode, body)
	}
	h := rec.last()
	if got := h.Values("X-Remote-User"); len(got) != 1 || got[0] != whoami.stdout {
		t.Errorf("X-Remote-User: got %q, want only %q", got, whoami.stdout)
	}
	for _, g := range h.Values("X-Remote-Group") {
		if g == "evil-group" {
			t.Errorf("the client's X-Remote-Group reached the aggregated server: %q", h.Values("X-Remote-Group"))
		}
	}
	if got := h.Values("X-Remote-Extra-Scopes"); len(got) != 0 {
		t.Errorf("the client's X-Remote-Extra-Scopes reached the aggregated server: %q", got)
	}
}
