package apiserver

import (
	"context"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
)

// The Accept header kubectl 1.32 and client-go send to /api and /apis.
const aggregatedAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," +
	"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"

// discoveryCreator is a virtual resource for discovery tests; it creates
// nothing.
type discoveryCreator struct {
	obj        runtime.Object
	kind       string
	namespaced bool
}

func (c discoveryCreator) New() runtime.Object { return c.obj.DeepCopyObject() }
func (c discoveryCreator) Namespaced() bool    { return c.namespaced }
func (c discoveryCreator) Kind() string        { return c.kind }
func (c discoveryCreator) Create(context.Context, *CreateRequest) (runtime.Object, error) {
	return nil, fmt.Errorf("not served in this test")
}

// withDiscoveryCreators serves serviceaccounts/token and selfsubjectreviews,
// as apiserver/registry/authentication does.
func withDiscoveryCreators(c *Config) {
	c.Creators = map[string]Creator{
		"/v1/serviceaccounts/token":                   discoveryCreator{&authenticationv1.TokenRequest{}, "TokenRequest", true},
		"authentication.k8s.io/v1/selfsubjectreviews": discoveryCreator{&authenticationv1.SelfSubjectReview{}, "SelfSubjectReview", false},
	}
}

// getWith GETs url with extra request headers.
func getWith(t *testing.T, url string, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}

// resourceJSON finds the entry named name in a decoded list of resources
// and returns it re-encoded compactly, in the order of its fields.
func resourceJSON(t *testing.T, entries []json.RawMessage, field, name string) string {
	t.Helper()
	for _, e := range entries {
		var head map[string]any
		if err := json.Unmarshal(e, &head); err != nil {
			t.Fatal(err)
		}
		if head[field] == name {
			return string(e)
		}
	}
	t.Fatalf("no entry %s=%q", field, name)
	return ""
}

func TestAggregatedDiscoveryOfTheCoreGroup(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withDiscoveryCreators)
	code, hdr, body := getWith(t, ts.http.URL+"/api", map[string]string{"Accept": aggregatedAccept})
	if code != http.StatusOK {
		t.Fatalf("GET /api: %d %s", code, body)
	}
	if got, want := hdr.Get("Content-Type"), "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"; got != want {
		t.Errorf("Content-Type = %q, want %q", got, want)
	}
	if hdr.Get("Vary") != "Accept" || hdr.Get("Cache-Control") != "public" {
		t.Errorf("Vary = %q, Cache-Control = %q; want Accept, public", hdr.Get("Vary"), hdr.Get("Cache-Control"))
	}
	var doc struct {
		Kind, APIVersion string
		Metadata         json.RawMessage
		Items            []struct {
			Metadata json.RawMessage
			Versions []struct {
				Version   string
				Resources []json.RawMessage
				Freshness string
			}
		}
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Kind != "APIGroupDiscoveryList" || doc.APIVersion != "apidiscovery.k8s.io/v2" || len(doc.Items) != 1 ||
		string(doc.Items[0].Metadata) != "{}" || len(doc.Items[0].Versions) != 1 ||
		doc.Items[0].Versions[0].Version != "v1" || doc.Items[0].Versions[0].Freshness != "Current" {
		t.Fatalf("GET /api = %s, want one unnamed group with v1, Current", body)
	}
	// kube-apiserver v1.37.2's entries (B.6).
	rs := doc.Items[0].Versions[0].Resources
	for name, want := range map[string]string{
		"bindings":          `{"resource":"bindings","responseKind":{"group":"","version":"","kind":"Binding"},"scope":"Namespaced","singularResource":"binding","verbs":["create"]}`,
		"componentstatuses": `{"resource":"componentstatuses","responseKind":{"group":"","version":"","kind":"ComponentStatus"},"scope":"Cluster","singularResource":"componentstatus","verbs":["get","list"],"shortNames":["cs"]}`,
		"namespaces":        `{"resource":"namespaces","responseKind":{"group":"","version":"","kind":"Namespace"},"scope":"Cluster","singularResource":"namespace","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["ns"],"subresources":[{"subresource":"finalize","responseKind":{"group":"","version":"","kind":"Namespace"},"verbs":["update"]},{"subresource":"status","responseKind":{"group":"","version":"","kind":"Namespace"},"verbs":["get","patch","update"]}]}`,
		"pods":              `{"resource":"pods","responseKind":{"group":"","version":"","kind":"Pod"},"scope":"Namespaced","singularResource":"pod","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["po"],"categories":["all"],"subresources":[{"subresource":"attach","responseKind":{"group":"","version":"","kind":"PodAttachOptions"},"verbs":["create","get"]},{"subresource":"binding","responseKind":{"group":"","version":"","kind":"Binding"},"verbs":["create"]},{"subresource":"ephemeralcontainers","responseKind":{"group":"","version":"","kind":"Pod"},"verbs":["get","patch","update"]},{"subresource":"eviction","responseKind":{"group":"policy","version":"v1","kind":"Eviction"},"verbs":["create"]},{"subresource":"exec","responseKind":{"group":"","version":"","kind":"PodExecOptions"},"verbs":["create","get"]},{"subresource":"log","responseKind":{"group":"","version":"","kind":"Pod"},"verbs":["get"]},{"subresource":"portforward","responseKind":{"group":"","version":"","kind":"PodPortForwardOptions"},"verbs":["create","get"]},{"subresource":"proxy","responseKind":{"group":"","version":"","kind":"PodProxyOptions"},"verbs":["create","delete","get","patch","update"]},{"subresource":"resize","responseKind":{"group":"","version":"","kind":"Pod"},"verbs":["get","patch","update"]},{"subresource":"status","responseKind":{"group":"","version":"","kind":"Pod"},"verbs":["get","patch","update"]}]}`,
		"serviceaccounts":   `{"resource":"serviceaccounts","responseKind":{"group":"","version":"","kind":"ServiceAccount"},"scope":"Namespaced","singularResource":"serviceaccount","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["sa"],"subresources":[{"subresource":"token","responseKind":{"group":"authentication.k8s.io","version":"v1","kind":"TokenRequest"},"verbs":["create"]}]}`,
		"services":          `{"resource":"services","responseKind":{"group":"","version":"","kind":"Service"},"scope":"Namespaced","singularResource":"service","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["svc"],"categories":["all"],"subresources":[{"subresource":"proxy","responseKind":{"group":"","version":"","kind":"ServiceProxyOptions"},"verbs":["create","delete","get","patch","update"]},{"subresource":"status","responseKind":{"group":"","version":"","kind":"Service"},"verbs":["get","patch","update"]}]}`,
	} {
		if got := resourceJSON(t, rs, "resource", name); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	var names []string
	for _, r := range rs {
		var head struct{ Resource string }
		_ = json.Unmarshal(r, &head)
		names = append(names, head.Resource)
	}
	if got, want := strings.Join(names, " "), "bindings componentstatuses configmaps endpoints events limitranges namespaces nodes persistentvolumeclaims persistentvolumes pods podtemplates replicationcontrollers resourcequotas secrets serviceaccounts services"; got != want {
		t.Errorf("resources = %s, want %s", got, want)
	}
}

func TestAggregatedDiscoveryOfTheNamedGroups(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withDiscoveryCreators)
	code, _, body := getWith(t, ts.http.URL+"/apis", map[string]string{"Accept": aggregatedAccept})
	if code != http.StatusOK {
		t.Fatalf("GET /apis: %d %s", code, body)
	}
	var doc struct {
		Items []struct {
			Metadata struct{ Name string }
			Versions []struct {
				Version   string
				Resources []json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	var groups []string
	resources := map[string][]json.RawMessage{}
	for _, g := range doc.Items {
		groups = append(groups, g.Metadata.Name)
		resources[g.Metadata.Name] = g.Versions[0].Resources
	}
	// kube-apiserver's order: by group priority, not by name.
	if got, want := strings.Join(groups, " "), "apiregistration.k8s.io apps events.k8s.io authentication.k8s.io autoscaling batch certificates.k8s.io networking.k8s.io policy rbac.authorization.k8s.io storage.k8s.io admissionregistration.k8s.io apiextensions.k8s.io scheduling.k8s.io coordination.k8s.io node.k8s.io discovery.k8s.io resource.k8s.io flowcontrol.apiserver.k8s.io storagemigration.k8s.io"; got != want {
		t.Errorf("groups = %s, want %s", got, want)
	}
	for _, c := range []struct{ group, resource, want string }{
		{"apps", "replicasets", `{"resource":"replicasets","responseKind":{"group":"","version":"","kind":"ReplicaSet"},"scope":"Namespaced","singularResource":"replicaset","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["rs"],"categories":["all"],"subresources":[{"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"},"verbs":["get","patch","update"]},{"subresource":"status","responseKind":{"group":"","version":"","kind":"ReplicaSet"},"verbs":["get","patch","update"]}]}`},
		{"events.k8s.io", "events", `{"resource":"events","responseKind":{"group":"","version":"","kind":"Event"},"scope":"Namespaced","singularResource":"event","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["ev"]}`},
		{"authentication.k8s.io", "selfsubjectreviews", `{"resource":"selfsubjectreviews","responseKind":{"group":"","version":"","kind":"SelfSubjectReview"},"scope":"Cluster","singularResource":"selfsubjectreview","verbs":["create"]}`},
		{"coordination.k8s.io", "leases", `{"resource":"leases","responseKind":{"group":"","version":"","kind":"Lease"},"scope":"Namespaced","singularResource":"lease","verbs":["create","delete","deletecollection","get","list","patch","update","watch"]}`},
	} {
		if got := resourceJSON(t, resources[c.group], "resource", c.resource); got != c.want {
			t.Errorf("%s %s:\n got %s\nwant %s", c.group, c.resource, got, c.want)
		}
	}
}

func TestAggregatedDiscoveryETagAnswers304(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, path := range []string{"/api", "/apis"} {
		code, hdr, body := getWith(t, ts.http.URL+path, map[string]string{"Accept": aggregatedAccept})
		etag := hdr.Get("ETag")
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		// kube-apiserver's ETag: the SHA-512 of the document's JSON without
		// kind and apiVersion, upper-case hex, quoted.
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		bare := fmt.Sprintf(`{"metadata":%s,"items":%s}`, doc["metadata"], doc["items"])
		if want := strconv.Quote(fmt.Sprintf("%X", sha512.Sum512([]byte(bare)))); etag != want {
			t.Errorf("GET %s: ETag = %s, want %s", path, etag, want)
		}
		code, hdr, body = getWith(t, ts.http.URL+path, map[string]string{"Accept": aggregatedAccept, "If-None-Match": etag})
		if code != http.StatusNotModified || len(body) != 0 || hdr.Get("ETag") != etag {
			t.Errorf("GET %s with If-None-Match: %d, ETag %s, %d bytes; want 304, the same ETag, no body", path, code, hdr.Get("ETag"), len(body))
		}
		// Another encoding of the same document has the same ETag.
		code, hdr, _ = getWith(t, ts.http.URL+path, map[string]string{"Accept": "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
		if code != http.StatusOK || hdr.Get("ETag") != etag ||
			hdr.Get("Content-Type") != "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" {
			t.Errorf("GET %s as protobuf: %d, %s, %s", path, code, hdr.Get("Content-Type"), hdr.Get("ETag"))
		}
	}
}

func TestDiscoveryNegotiation(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const onlyThese = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	const routeRefusal = "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	for _, c := range []struct {
		name, path, accept string
		code               int
		contentType, kind  string // kind, or the message of a 406
	}{
		{"v2beta1 is no longer served", "/api", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", 406, "", onlyThese},
		{"aggregated wins over an earlier plain clause", "/apis", "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", 200,
			"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "APIGroupDiscoveryList"},
		{"q=0 does not rule out a clause", "/api", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0", 200,
			"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "APIGroupDiscoveryList"},
		{"yaml", "/apis", "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", 200,
			"application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", ""},
		{"plain JSON gets the legacy document", "/apis", "application/json", 200, "application/json", "APIGroupList"},
		{"/api is a route that refuses application/*", "/api", "application/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", 406, "", routeRefusal},
		{"/apis is not", "/apis", "application/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", 200,
			"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "APIGroupDiscoveryList"},
		{"/api/v1 is a route", "/api/v1", "text/html", 406, "", routeRefusal},
		{"/apis/GROUP/VERSION is a route", "/apis/apps/v1", "text/html", 406, "", routeRefusal},
		{"/apis/GROUP is not", "/apis/apps", "text/html", 406, "", onlyThese},
		{"no aggregated document for one group version", "/api/v1", aggregatedAccept, 200, "application/json", "APIResourceList"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, hdr, body := getWith(t, ts.http.URL+c.path, map[string]string{"Accept": c.accept})
			var st struct{ Kind, Message string }
			_ = json.Unmarshal(body, &st)
			if code != c.code {
				t.Fatalf("GET %s: %d %s, want %d", c.path, code, body, c.code)
			}
			if code == http.StatusNotAcceptable {
				if st.Message != c.kind {
					t.Errorf("message = %q, want %q", st.Message, c.kind)
				}
				return
			}
			if hdr.Get("Content-Type") != c.contentType || c.kind != "" && st.Kind != c.kind {
				t.Errorf("GET %s: %s %s, want %s %s", c.path, hdr.Get("Content-Type"), st.Kind, c.contentType, c.kind)
			}
		})
	}
}

func TestLegacyDiscoveryDocuments(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withDiscoveryCreators)
	var v1 struct {
		Kind         string
		APIVersion   *string
		GroupVersion string
		Resources    []json.RawMessage
	}
	_, _, body := get(t, ts.http.URL+"/api/v1", "")
	if err := json.Unmarshal(body, &v1); err != nil {
		t.Fatal(err)
	}
	// kube-apiserver's /api/v1 has a kind and no apiVersion.
	if v1.Kind != "APIResourceList" || v1.APIVersion != nil || v1.GroupVersion != "v1" {
		t.Errorf("/api/v1 = kind %q, apiVersion %v, groupVersion %q; want APIResourceList, none, v1", v1.Kind, v1.APIVersion, v1.GroupVersion)
	}
	for name, want := range map[string]string{
		"bindings":              `{"name":"bindings","singularName":"binding","namespaced":true,"kind":"Binding","verbs":["create"]}`,
		"namespaces":            `{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["ns"],"storageVersionHash":"Q3oi5N2YM8M="}`,
		"pods":                  `{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["po"],"categories":["all"],"storageVersionHash":"xPOwRZ+Yhw8="}`,
		"pods/binding":          `{"name":"pods/binding","singularName":"","namespaced":true,"kind":"Binding","verbs":["create"]}`,
		"pods/status":           `{"name":"pods/status","singularName":"","namespaced":true,"kind":"Pod","verbs":["get","patch","update"]}`,
		"serviceaccounts/token": `{"name":"serviceaccounts/token","singularName":"","namespaced":true,"group":"authentication.k8s.io","version":"v1","kind":"TokenRequest","verbs":["create"]}`,
		"services":              `{"name":"services","singularName":"service","namespaced":true,"kind":"Service","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["svc"],"categories":["all"],"storageVersionHash":"0/CO1lhkEBI="}`,
	} {
		if got := resourceJSON(t, v1.Resources, "name", name); got != want {
			t.Errorf("/api/v1 %s:\n got %s\nwant %s", name, got, want)
		}
	}
	// events.k8s.io events are stored as core events: the same hash.
	_, _, body = get(t, ts.http.URL+"/apis/events.k8s.io/v1", "")
	if got, want := string(body), `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"events.k8s.io/v1","resources":[{"name":"events","singularName":"event","namespaced":true,"kind":"Event","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["ev"],"storageVersionHash":"r2yiGXH7wu8="}]}`+"\n"; got != want {
		t.Errorf("/apis/events.k8s.io/v1:\n got %s\nwant %s", got, want)
	}
	var groups metav1.APIGroupList
	_, _, body = get(t, ts.http.URL+"/apis", "")
	if err := json.Unmarshal(body, &groups); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range groups.Groups {
		names = append(names, g.Name)
	}
	if got, want := strings.Join(names, " "), "apiregistration.k8s.io apps events.k8s.io authentication.k8s.io autoscaling batch certificates.k8s.io networking.k8s.io policy rbac.authorization.k8s.io storage.k8s.io admissionregistration.k8s.io apiextensions.k8s.io scheduling.k8s.io coordination.k8s.io node.k8s.io discovery.k8s.io resource.k8s.io flowcontrol.apiserver.k8s.io storagemigration.k8s.io"; got != want {
		t.Errorf("/apis groups = %s, want %s", got, want)
	}
}

func TestNamespacesCannotBeDeletedAsACollection(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	req, _ := http.NewRequest(http.MethodDelete, ts.http.URL+"/api/v1/namespaces", nil)
	req.Header.Set("Accept", "text/html") // the method is refused first
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusMethodNotAllowed || st.Reason != metav1.StatusReasonMethodNotAllowed ||
		st.Message != "the server does not allow this method on the requested resource" || !reflect.DeepEqual(st.Details, &metav1.StatusDetails{}) {
		t.Errorf("DELETE /api/v1/namespaces: %d %+v; want kube's 405", resp.StatusCode, st)
	}
	if _, err := ts.clientset(t, false).CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace default after the refused delete: %v", err)
	}
	// Nor does OpenAPI offer it (B.6).
	_, _, body := get(t, ts.http.URL+"/openapi/v3/api/v1", "application/json")
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	ns, nodes := doc.Paths["/api/v1/namespaces"], doc.Paths["/api/v1/nodes"]
	if ns["delete"] != nil || ns["get"] == nil || nodes["delete"] == nil {
		t.Errorf("OpenAPI: DELETE /api/v1/namespaces offered: %t, GET: %t, DELETE /api/v1/nodes: %t; want false, true, true",
			ns["delete"] != nil, ns["get"] != nil, nodes["delete"] != nil)
	}
}

func TestClientGoUsesAggregatedDiscovery(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withDiscoveryCreators)
	var mu sync.Mutex
	var paths []string
	cfg := ts.restConfig(false)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			paths = append(paths, r.URL.Path)
			mu.Unlock()
			return rt.RoundTrip(r)
		})
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	// One request each to /api and /apis: no per-group-version documents.
	mu.Lock()
	if got := strings.Join(paths, " "); got != "/api /apis" {
		t.Errorf("requests = %s, want /api /apis", got)
	}
	mu.Unlock()
	have := map[string]metav1.APIResource{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			have[l.GroupVersion+" "+r.Name] = r
		}
	}
	if r := have["v1 namespaces"]; strings.Join(r.Verbs, ",") != "create,delete,get,list,patch,update,watch" || r.SingularName != "namespace" {
		t.Errorf("v1 namespaces = %+v", r)
	}
	if r := have["v1 serviceaccounts/token"]; r.Group != "authentication.k8s.io" || r.Kind != "TokenRequest" {
		t.Errorf("v1 serviceaccounts/token = %+v", r)
	}
	if _, ok := have["v1 pods/binding"]; !ok {
		t.Errorf("no v1 pods/binding in %v", have)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
