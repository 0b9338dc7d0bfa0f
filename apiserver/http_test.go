package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

func get(t *testing.T, url, accept string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}

func TestPodTable(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cs := ts.clientset(t, false)
	ctx := context.Background()
	if _, err := cs.CoreV1().Pods("default").Create(ctx, testPod("app"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Target: corev1.ObjectReference{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, hdr, body := get(t, ts.http.URL+"/api/v1/namespaces/default/pods?limit=500",
		"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
	// kube-apiserver names only the media type, not the Table (D.7).
	if code != http.StatusOK || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q, want 200 application/json", code, hdr.Get("Content-Type"))
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if got, want := strings.Join(cols, ","), "Name,Ready,Status,Restarts,Age,IP,Node,Nominated Node,Readiness Gates"; got != want {
		t.Errorf("columns = %s, want %s", got, want)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("rows = %d, want 1", len(table.Rows))
	}
	cells := table.Rows[0].Cells
	if cells[0] != "app" || cells[1] != "0/1" || cells[2] != "Pending" || cells[6] != "n1" {
		t.Errorf("row = %v, want app 0/1 Pending ... node n1", cells)
	}
	var pm metav1.PartialObjectMetadata
	if err := json.Unmarshal(table.Rows[0].Object.Raw, &pm); err != nil || pm.Kind != "PartialObjectMetadata" || pm.Namespace != "default" {
		t.Errorf("row object = %s (%v), want PartialObjectMetadata in default", table.Rows[0].Object.Raw, err)
	}

	// A second bind is refused.
	err := cs.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Target: corev1.ObjectReference{Name: "n2"}}, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `pod app is already assigned to node "n1"`) {
		t.Errorf("second bind: got %v, want 409 already assigned", err)
	}
	pod, _ := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
	if len(pod.Status.Conditions) != 1 || pod.Status.Conditions[0].Type != corev1.PodScheduled || pod.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("conditions = %+v, want PodScheduled=True", pod.Status.Conditions)
	}
}

func TestDiscoveryAndOpenAPI(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.ExternalAddress = "10.0.0.1:6443" })
	code, _, body := get(t, ts.http.URL+"/api", "")
	var av metav1.APIVersions
	if err := json.Unmarshal(body, &av); err != nil || code != http.StatusOK {
		t.Fatalf("/api: %d %v", code, err)
	}
	if len(av.ServerAddressByClientCIDRs) != 1 || av.ServerAddressByClientCIDRs[0].ServerAddress != "10.0.0.1:6443" || av.Versions[0] != "v1" {
		t.Errorf("/api = %s", body)
	}
	cs := ts.clientset(t, false)
	checkDiscoveredResources(t, cs)
	checkServerVersion(t, ts, cs)
	checkOpenAPIPodPatch(t, ts)
}

// checkDiscoveredResources: discovery lists resources and subresources of
// every group.
func checkDiscoveredResources(t *testing.T, cs *kubernetes.Clientset) {
	t.Helper()
	groups, resources, err := cs.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	have := map[string]bool{}
	for _, rl := range resources {
		for _, r := range rl.APIResources {
			have[rl.GroupVersion+" "+r.Name] = true
		}
	}
	for _, want := range []string{"v1 pods", "v1 pods/status", "v1 pods/binding", "v1 nodes/status", "coordination.k8s.io/v1 leases",
		"events.k8s.io/v1 events", "rbac.authorization.k8s.io/v1 clusterrolebindings"} {
		if !have[want] {
			t.Errorf("discovery lacks %s (have %d groups)", want, len(groups))
		}
	}
}

// checkServerVersion: /version answers kube-apiserver v1.37.2's fields,
// indented as it writes them.
func checkServerVersion(t *testing.T, ts *testServer, cs *kubernetes.Clientset) {
	t.Helper()
	// kube-apiserver v1.37.2's fields (D.7).
	v, err := cs.Discovery().ServerVersion()
	if err != nil || v.Major != "1" || v.Minor != "37" || v.GitVersion != "v1.37.2" || v.EmulationMajor != "1" || v.EmulationMinor != "37" ||
		v.MinCompatibilityMajor != "1" || v.MinCompatibilityMinor != "36" || v.GitTreeState != "clean" {
		t.Errorf("version = %#v, %v; want kube-apiserver v1.37.2's", v, err)
	}
	if _, _, body := get(t, ts.http.URL+"/version", ""); !strings.HasPrefix(string(body), "{\n  \"major\": \"1\",\n  \"minor\": \"37\",\n  \"emulationMajor\": \"1\",") {
		t.Errorf("/version = %s, want it indented as kube-apiserver writes it", body)
	}
}

// checkOpenAPIPodPatch: the OpenAPI v3 document of api/v1 describes a
// pod's PATCH with its kind and a fieldValidation parameter.
func checkOpenAPIPodPatch(t *testing.T, ts *testServer) {
	t.Helper()
	code, header, body := get(t, ts.http.URL+"/openapi/v3", "")
	if ct := header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
		t.Errorf("/openapi/v3 Content-Type = %q, want kube's text/plain; charset=utf-8", ct)
	}
	var root struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &root); err != nil || code != http.StatusOK {
		t.Fatalf("/openapi/v3: %d %v", code, err)
	}
	u := root.Paths["api/v1"].ServerRelativeURL
	if u == "" {
		t.Fatalf("/openapi/v3 lacks api/v1: %s", body)
	}
	_, _, body = get(t, ts.http.URL+u, "application/json")
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	var patch struct {
		GVK        map[string]string `json:"x-kubernetes-group-version-kind"`
		Parameters []struct{ Name string }
	}
	if err := json.Unmarshal(doc.Paths["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"], &patch); err != nil {
		t.Fatal(err)
	}
	hasFV := false
	for _, p := range patch.Parameters {
		hasFV = hasFV || p.Name == "fieldValidation"
	}
	if patch.GVK["kind"] != "Pod" || !hasFV {
		t.Errorf("pod PATCH operation = %+v, want GVK Pod and a fieldValidation parameter", patch)
	}
}

func TestFilterChain(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) {
		c.Authenticator = authn.RequestFunc(func(r *http.Request) (*authn.Response, bool, error) {
			if r.Header.Get("Authorization") != "Bearer good" {
				return nil, false, nil
			}
			return &authn.Response{User: authn.User{Name: "bob"}}, true, nil
		})
		c.Authorizer = authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
			if a.Verb == "get" && a.Resource == "pods" || !a.ResourceRequest {
				return authz.Allow, "", nil
			}
			return authz.NoOpinion, "", nil
		})
	})
	do := func(method, path, token string) (int, string) {
		req, _ := http.NewRequest(method, ts.http.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	for _, tc := range []struct {
		name, method, path, token string
		code                      int
		body                      string
	}{
		{"no credential", "GET", "/api/v1/namespaces/default/pods/x", "", 401,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`},
		{"forbidden list", "GET", "/api/v1/namespaces/default/pods", "good", 403,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden: User \"bob\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"","reason":"Forbidden","details":{"kind":"pods"},"code":403}`},
		{"allowed get of a missing pod", "GET", "/api/v1/namespaces/default/pods/x", "good", 404,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"pods"},"code":404}`},
		{"healthz", "GET", "/healthz", "good", 200, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(tc.method, tc.path, tc.token)
			if code != tc.code || body != tc.body {
				t.Errorf("got %d %s\nwant %d %s", code, body, tc.code, tc.body)
			}
		})
	}
}

func TestAuthenticationClearsIdentityHeaders(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) {
		c.IdentityHeaders = []authn.IdentityHeaders{authn.IdentityHeadersFunc(func(name string) bool {
			return strings.EqualFold(name, "X-Proxy-User")
		})}
	})
	var seen http.Header
	h := ts.withAuthentication(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r.Header.Clone() }))
	r := httptest.NewRequest("GET", "/api/v1/pods", nil)
	for _, k := range []string{"Authorization", "X-Remote-User", "X-Remote-Group", "X-Remote-Uid", "X-Remote-Extra-Scopes", "X-Proxy-User", "Accept"} {
		r.Header.Set(k, "v")
	}
	h.ServeHTTP(httptest.NewRecorder(), r)
	if seen == nil {
		t.Fatal("handler not reached")
	}
	for k := range seen {
		if k != "Accept" {
			t.Errorf("A.4 header %q reached the handler after authentication", k)
		}
	}
	if seen.Get("Accept") == "" {
		t.Error("Accept removed, want it kept")
	}
}
