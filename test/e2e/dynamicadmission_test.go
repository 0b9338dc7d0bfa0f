package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testwait"
)

const replicaLimitYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= 5"
    message: "at most 5 replicas"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit
spec:
  policyName: replica-limit
  validationActions: ["Deny"]
`

// e2eWebhook is an admission webhook run by the test over TLS, with a
// certificate for 127.0.0.1 and hooks.default.svc: /label labels what it
// is sent, /deny refuses it.
func e2eWebhook(t *testing.T) (srv *httptest.Server, caBundle string) {
	t.Helper()
	ca := testpki.NewCA(t, "e2e webhook CA")
	leaf := ca.Issue(t, testpki.Options{CN: "hooks.default.svc", DNSNames: []string{"hooks.default.svc"},
		IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		switch r.URL.Path {
		case "/label":
			pt := admissionv1.PatchTypeJSONPatch
			resp.PatchType = &pt
			resp.Patch = []byte(`[{"op":"add","path":"/metadata/labels/hooked","value":"yes"}]`)
		case "/deny":
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: "no " + review.Request.Name + " here"}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	}))
	// On every address, so that an endpoint of the machine's own (not
	// loopback, which an EndpointSlice may not name) reaches it too.
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener.Close()
	srv.Listener = l
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, base64.StdEncoding.EncodeToString(ca.CertPEM)
}

// hostIP is an IPv4 address of the machine that an EndpointSlice may
// name: not loopback, not link-local. Without one the test is skipped, or
// fails in CI.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("the machine has no address but loopback, which an EndpointSlice may not name")
	}
	t.Skip("the machine has no address but loopback, which an EndpointSlice may not name")
	return ""
}

// serviceAt is a Service NAME in default, port 443, whose one ready
// endpoint is ip:port.
func serviceAt(name string, port int, ip string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %[1]s, namespace: default}
spec:
  ports: [{name: https, port: 443, targetPort: %[2]d}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %[1]s-1
  namespace: default
  labels: {kubernetes.io/service-name: %[1]s}
addressType: IPv4
ports: [{name: https, port: %[2]d, protocol: TCP}]
endpoints: [{addresses: ["%[3]s"], conditions: {ready: true}}]
`, name, port, ip)
}

// webhookYAML is a webhook configuration of kind with one webhook named
// NAME.e2e.example.com for config maps labelled e2e=NAME.
func webhookYAML(kind, name, clientConfig, failurePolicy string) string {
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: %s
metadata:
  name: e2e-%s
webhooks:
- name: %s.e2e.example.com
  clientConfig: %s
  rules:
  - apiGroups: [""]
    apiVersions: ["v1"]
    operations: ["CREATE"]
    resources: ["configmaps"]
  objectSelector:
    matchLabels: {e2e: %s}
  failurePolicy: %s
  sideEffects: None
  admissionReviewVersions: ["v1"]
  timeoutSeconds: 5
`, kind, name, name, clientConfig, name, failurePolicy)
}

// TestDynamicAdmissionWithKubectl_D13 applies a ValidatingAdmissionPolicy
// and admission webhooks run by the test to `kubegate up`, and checks
// with kubectl what they refuse, change and let through.
func TestDynamicAdmissionWithKubectl_D13(t *testing.T) {
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0)
	defer c.stop(t)
	if res := c.kubectl(t, nil, "api-resources", "--api-group=admissionregistration.k8s.io", "--no-headers"); !strings.Contains(res.stdout, "validatingadmissionpolicies") {
		t.Skipf("the cluster does not serve admissionregistration.k8s.io: %s%s", res.stdout, res.stderr)
	}

	t.Run("a ValidatingAdmissionPolicy refuses a 6-replica Deployment", func(t *testing.T) {
		must(t, c.kubectl(t, []byte(replicaLimitYAML), "apply", "-f", "-"), "validatingadmissionpolicybinding.admissionregistration.k8s.io/replica-limit created")
		want := `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit' denied request: at most 5 replicas`
		testwait.For(t, 30*time.Second, "the policy in force", func() (bool, string) {
			res := c.kubectl(t, nil, "create", "deployment", "web", "--image=registry.example/web:1", "--replicas=6", "--dry-run=server")
			return strings.Contains(res.stderr, want), res.stdout + res.stderr
		})
		res := c.kubectl(t, nil, "create", "deployment", "web", "--image=registry.example/web:1", "--replicas=6")
		if res.code == 0 || strings.TrimSpace(res.stderr) != "error: failed to create deployment: "+want {
			t.Fatalf("create 6 replicas: exit %d, stderr %q; want the policy's refusal %q", res.code, res.stderr, want)
		}
		must(t, c.kubectl(t, nil, "create", "deployment", "web", "--image=registry.example/web:1", "--replicas=5"), "deployment.apps/web created")
		res = c.kubectl(t, nil, "scale", "deployment", "web", "--replicas=6")
		// The policy matches deployments, not their scale subresource.
		must(t, res, "deployment.apps/web scaled")
	})

	srv, caBundle := e2eWebhook(t)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	byURL := func(path string) string {
		return fmt.Sprintf(`{url: "https://127.0.0.1:%d%s", caBundle: %s}`, port, path, caBundle)
	}
	down := freePort(t)

	t.Run("a mutating webhook by URL labels a config map", func(t *testing.T) {
		must(t, c.kubectl(t, []byte(webhookYAML("MutatingWebhookConfiguration", "label", byURL("/label"), "Fail")), "apply", "-f", "-"), "created")
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: labelled\n  labels: {e2e: label}\n"
		testwait.For(t, 30*time.Second, "the webhook in force", func() (bool, string) {
			res := c.kubectl(t, []byte(cm), "create", "-f", "-", "--dry-run=server", "-o", "jsonpath={.metadata.labels.hooked}")
			return res.stdout == "yes", res.stdout + res.stderr
		})
		must(t, c.kubectl(t, []byte(cm), "create", "-f", "-"), "configmap/labelled created")
		must(t, c.kubectl(t, nil, "get", "configmap", "labelled", "-o", "jsonpath={.metadata.labels.hooked}"), "yes")
	})

	t.Run("a denying webhook reached through its Service refuses", func(t *testing.T) {
		svc := serviceAt("hooks", port, hostIP(t))
		must(t, c.kubectl(t, []byte(svc), "apply", "-f", "-"), "created")
		client := fmt.Sprintf(`{service: {namespace: default, name: hooks, path: /deny}, caBundle: %s}`, caBundle)
		must(t, c.kubectl(t, []byte(webhookYAML("ValidatingWebhookConfiguration", "deny", client, "Fail")), "apply", "-f", "-"), "created")
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: refused\n  labels: {e2e: deny}\n"
		want := `admission webhook "deny.e2e.example.com" denied the request: no refused here`
		testwait.For(t, 30*time.Second, "the webhook's refusal", func() (bool, string) {
			res := c.kubectl(t, []byte(cm), "create", "-f", "-")
			return res.code != 0 && strings.Contains(res.stderr, want), res.stdout + res.stderr
		})
	})

	t.Run("a webhook that is down: Ignore lets through, Fail refuses", func(t *testing.T) {
		downURL := fmt.Sprintf(`{url: "https://127.0.0.1:%d/", caBundle: %s}`, down, caBundle)
		must(t, c.kubectl(t, []byte(webhookYAML("ValidatingWebhookConfiguration", "ignore", downURL, "Ignore")), "apply", "-f", "-"), "created")
		must(t, c.kubectl(t, []byte(webhookYAML("ValidatingWebhookConfiguration", "fail", downURL, "Fail")), "apply", "-f", "-"), "created")
		failing := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: failing\n  labels: {e2e: fail}\n"
		testwait.For(t, 30*time.Second, "the failing webhook in force", func() (bool, string) {
			res := c.kubectl(t, []byte(failing), "create", "-f", "-")
			return res.code != 0 && strings.Contains(res.stderr, `Internal error occurred: failed calling webhook "fail.e2e.example.com"`), res.stdout + res.stderr
		})
		// Both configurations were written before the failing one was
		// seen in force, and are read from the same informers.
		ignored := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ignored\n  labels: {e2e: ignore}\n"
		must(t, c.kubectl(t, []byte(ignored), "create", "-f", "-"), "configmap/ignored created")
	})
}
