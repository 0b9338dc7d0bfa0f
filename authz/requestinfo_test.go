package authz

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestNewRequestInfo(t *testing.T) {
	t.Parallel()
	type want struct {
		resource                                 bool
		verb, group, version, ns, res, sub, name string
		path                                     string
	}
	tests := []struct {
		name, method, url string
		want              want
		wantErr           bool
	}{
		{"C.1 get a pod", "GET", "/api/v1/namespaces/default/pods/app",
			want{resource: true, verb: "get", version: "v1", ns: "default", res: "pods", name: "app", path: "/api/v1/namespaces/default/pods/app"}, false},
		{"C.1 pod status subresource", "PUT", "/api/v1/namespaces/default/pods/app/status",
			want{resource: true, verb: "update", version: "v1", ns: "default", res: "pods", sub: "status", name: "app", path: "/api/v1/namespaces/default/pods/app/status"}, false},
		{"C.1 pods/binding is create on subresource binding", "POST", "/api/v1/namespaces/default/pods/app/binding",
			want{resource: true, verb: "create", version: "v1", ns: "default", res: "pods", sub: "binding", name: "app", path: "/api/v1/namespaces/default/pods/app/binding"}, false},
		{"C.1 GET without name is list", "GET", "/api/v1/namespaces/default/pods",
			want{resource: true, verb: "list", version: "v1", ns: "default", res: "pods", path: "/api/v1/namespaces/default/pods"}, false},
		{"C.1 list across namespaces", "GET", "/api/v1/pods",
			want{resource: true, verb: "list", version: "v1", res: "pods", path: "/api/v1/pods"}, false},
		{"C.1 watch=true is watch", "GET", "/api/v1/namespaces/default/pods?watch=true",
			want{resource: true, verb: "watch", version: "v1", ns: "default", res: "pods", path: "/api/v1/namespaces/default/pods"}, false},
		{"C.1 watch=1 is watch", "GET", "/api/v1/pods?watch=1",
			want{resource: true, verb: "watch", version: "v1", res: "pods", path: "/api/v1/pods"}, false},
		{"C.1 watch=yes is watch", "GET", "/api/v1/pods?watch=yes",
			want{resource: true, verb: "watch", version: "v1", res: "pods", path: "/api/v1/pods"}, false},
		{"C.1 watch=FALSE is list", "GET", "/api/v1/pods?watch=FALSE",
			want{resource: true, verb: "list", version: "v1", res: "pods", path: "/api/v1/pods"}, false},
		{"C.1 watch=0 is list", "GET", "/api/v1/pods?watch=0",
			want{resource: true, verb: "list", version: "v1", res: "pods", path: "/api/v1/pods"}, false},
		{"C.1 watch with bad limit still watch", "GET", "/api/v1/pods?watch=true&limit=x",
			want{resource: true, verb: "watch", version: "v1", res: "pods", path: "/api/v1/pods"}, false},
		{"C.1 HEAD is get", "HEAD", "/api/v1/namespaces/ns/configmaps/c",
			want{resource: true, verb: "get", version: "v1", ns: "ns", res: "configmaps", name: "c", path: "/api/v1/namespaces/ns/configmaps/c"}, false},
		{"C.1 POST is create", "POST", "/apis/apps/v1/namespaces/ns/deployments",
			want{resource: true, verb: "create", group: "apps", version: "v1", ns: "ns", res: "deployments", path: "/apis/apps/v1/namespaces/ns/deployments"}, false},
		{"C.1 PATCH is patch", "PATCH", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler",
			want{resource: true, verb: "patch", group: "coordination.k8s.io", version: "v1", ns: "kube-system", res: "leases", name: "kube-scheduler", path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"}, false},
		{"C.1 DELETE with name is delete", "DELETE", "/api/v1/namespaces/ns/pods/p",
			want{resource: true, verb: "delete", version: "v1", ns: "ns", res: "pods", name: "p", path: "/api/v1/namespaces/ns/pods/p"}, false},
		{"C.1 DELETE without name is deletecollection", "DELETE", "/api/v1/namespaces/ns/pods",
			want{resource: true, verb: "deletecollection", version: "v1", ns: "ns", res: "pods", path: "/api/v1/namespaces/ns/pods"}, false},
		{"C.1 namespaces/NAME is resource namespaces in that namespace", "GET", "/api/v1/namespaces/team",
			want{resource: true, verb: "get", version: "v1", ns: "team", res: "namespaces", name: "team", path: "/api/v1/namespaces/team"}, false},
		{"C.1 namespaces list", "GET", "/api/v1/namespaces",
			want{resource: true, verb: "list", version: "v1", res: "namespaces", path: "/api/v1/namespaces"}, false},
		{"C.1 namespace status subresource", "PUT", "/api/v1/namespaces/team/status",
			want{resource: true, verb: "update", version: "v1", ns: "team", res: "namespaces", sub: "status", name: "team", path: "/api/v1/namespaces/team/status"}, false},
		{"C.1 namespace finalize subresource", "PUT", "/api/v1/namespaces/team/finalize",
			want{resource: true, verb: "update", version: "v1", ns: "team", res: "namespaces", sub: "finalize", name: "team", path: "/api/v1/namespaces/team/finalize"}, false},
		{"C.1 cluster-scoped node status", "PATCH", "/api/v1/nodes/n1/status",
			want{resource: true, verb: "patch", version: "v1", res: "nodes", sub: "status", name: "n1", path: "/api/v1/nodes/n1/status"}, false},
		{"C.1 serviceaccounts token", "POST", "/api/v1/namespaces/default/serviceaccounts/default/token",
			want{resource: true, verb: "create", version: "v1", ns: "default", res: "serviceaccounts", sub: "token", name: "default", path: "/api/v1/namespaces/default/serviceaccounts/default/token"}, false},
		{"C.3 selfsubjectaccessreviews create", "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			want{resource: true, verb: "create", group: "authorization.k8s.io", version: "v1", res: "selfsubjectaccessreviews", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"}, false},
		{"C.1 old watch prefix", "GET", "/api/v1/watch/namespaces/ns/pods",
			want{resource: true, verb: "watch", version: "v1", ns: "ns", res: "pods", path: "/api/v1/watch/namespaces/ns/pods"}, false},
		{"C.1 old watch prefix with name", "GET", "/api/v1/watch/namespaces/ns/pods/p",
			want{resource: true, verb: "watch", version: "v1", ns: "ns", res: "pods", name: "p", path: "/api/v1/watch/namespaces/ns/pods/p"}, false},
		{"C.1 old proxy prefix takes no subresource", "GET", "/api/v1/proxy/namespaces/ns/pods/p/a/b",
			want{resource: true, verb: "proxy", version: "v1", ns: "ns", res: "pods", name: "p", path: "/api/v1/proxy/namespaces/ns/pods/p/a/b"}, false},
		{"C.1 fieldSelector metadata.name sets name on list", "GET", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dcfg",
			want{resource: true, verb: "list", version: "v1", ns: "ns", res: "configmaps", name: "cfg", path: "/api/v1/namespaces/ns/configmaps"}, false},
		{"C.1 fieldSelector metadata.name sets name on watch", "GET", "/api/v1/namespaces/ns/configmaps?watch=1&fieldSelector=metadata.name%3D%3Dcfg,status.phase%3DRunning",
			want{resource: true, verb: "watch", version: "v1", ns: "ns", res: "configmaps", name: "cfg", path: "/api/v1/namespaces/ns/configmaps"}, false},
		{"C.1 fieldSelector inequality sets no name", "GET", "/api/v1/pods?fieldSelector=metadata.name!%3Dcfg",
			want{resource: true, verb: "list", version: "v1", res: "pods", path: "/api/v1/pods"}, false},
		{"C.1 fieldSelector invalid path segment name sets no name", "GET", "/api/v1/pods?fieldSelector=metadata.name%3D..",
			want{resource: true, verb: "list", version: "v1", res: "pods", path: "/api/v1/pods"}, false},
		{"C.1 unparsable labelSelector drops the name", "GET", "/api/v1/pods?labelSelector=%3D%3D%3D&fieldSelector=metadata.name%3Dx",
			want{resource: true, verb: "list", version: "v1", res: "pods", path: "/api/v1/pods"}, false},
		{"C.1 extra segments are kept in parts only", "GET", "/api/v1/namespaces/ns/pods/p/log/extra",
			want{resource: true, verb: "get", version: "v1", ns: "ns", res: "pods", sub: "log", name: "p", path: "/api/v1/namespaces/ns/pods/p/log/extra"}, false},
		{"C.1 trailing slash ignored", "GET", "/api/v1/namespaces/ns/pods/",
			want{resource: true, verb: "list", version: "v1", ns: "ns", res: "pods", path: "/api/v1/namespaces/ns/pods/"}, false},
		{"C.1 unknown method has empty verb", "OPTIONS", "/api/v1/pods/x",
			want{resource: true, verb: "", version: "v1", res: "pods", name: "x", path: "/api/v1/pods/x"}, false},

		{"C.1 /healthz is non-resource", "GET", "/healthz",
			want{verb: "get", path: "/healthz"}, false},
		{"C.1 /version is non-resource", "GET", "/version",
			want{verb: "get", path: "/version"}, false},
		{"C.1 /api is non-resource", "GET", "/api",
			want{verb: "get", path: "/api"}, false},
		{"C.1 /api/v1 is non-resource", "GET", "/api/v1",
			want{verb: "get", path: "/api/v1"}, false},
		{"C.1 /apis/G/V is non-resource", "GET", "/apis/apps/v1",
			want{verb: "get", path: "/apis/apps/v1"}, false},
		{"C.1 non-resource POST keeps method verb", "POST", "/metrics",
			want{verb: "post", path: "/metrics"}, false},
		{"C.1 non-resource PUT keeps method verb", "PUT", "/openapi/v3",
			want{verb: "put", path: "/openapi/v3"}, false},
		{"C.1 other prefix is non-resource", "GET", "/apix/v1/pods",
			want{verb: "get", path: "/apix/v1/pods"}, false},
		{"C.1 root", "GET", "/",
			want{verb: "get", path: "/"}, false},

		{"hostile watch prefix alone", "GET", "/api/v1/watch",
			want{resource: true, verb: "get", version: "v1", path: "/api/v1/watch"}, true},
		{"hostile empty namespace segment", "GET", "/api/v1/namespaces//pods",
			want{resource: true, verb: "list", version: "v1", ns: "", res: "pods", path: "/api/v1/namespaces//pods"}, false},
		{"hostile dot-dot segments are not resolved", "GET", "/api/v1/namespaces/../pods/x",
			want{resource: true, verb: "get", version: "v1", ns: "..", res: "pods", name: "x", path: "/api/v1/namespaces/../pods/x"}, false},
		{"hostile many slashes", "GET", "//api//v1//pods",
			want{resource: true, verb: "list", version: "", res: "v1", name: "", sub: "pods", path: "//api//v1//pods"}, false},
		{"hostile encoded slash stays in name", "GET", "/api/v1/namespaces/ns/pods/a%2Fb",
			want{resource: true, verb: "get", version: "v1", ns: "ns", res: "pods", name: "a", sub: "b", path: "/api/v1/namespaces/ns/pods/a/b"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(tt.method, tt.url, nil)
			ri, err := NewRequestInfo(r)
			if (err != nil) != tt.wantErr {
				t.Fatalf("NewRequestInfo(%s %s) error = %v, want error %v", tt.method, tt.url, err, tt.wantErr)
			}
			got := want{ri.IsResourceRequest, ri.Verb, ri.APIGroup, ri.APIVersion, ri.Namespace, ri.Resource, ri.Subresource, ri.Name, ri.Path}
			if got != tt.want {
				t.Errorf("NewRequestInfo(%s %s)\n got %+v\nwant %+v", tt.method, tt.url, got, tt.want)
			}
		})
	}
}

func TestRequestInfoAttributes(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("GET", "/apis/apps/v1/namespaces/ns/deployments/d/scale", nil)
	ri, err := NewRequestInfo(r)
	if err != nil {
		t.Fatal(err)
	}
	u := testUser("bob")
	got := ri.Attributes(u)
	want := Attributes{User: u, Verb: "get", Namespace: "ns", APIGroup: "apps", APIVersion: "v1", Resource: "deployments",
		Subresource: "scale", Name: "d", ResourceRequest: true, Path: "/apis/apps/v1/namespaces/ns/deployments/d/scale"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Attributes() = %+v, want %+v", got, want)
	}
	ctx := WithRequestInfo(r.Context(), ri)
	if back, ok := RequestInfoFrom(ctx); !ok || back != ri {
		t.Errorf("RequestInfoFrom(WithRequestInfo(ri)) = %v, %v; want ri, true", back, ok)
	}
	if _, ok := RequestInfoFrom(r.Context()); ok {
		t.Error("RequestInfoFrom(empty context) ok = true, want false")
	}
}

func FuzzRequestInfo(f *testing.F) {
	for _, s := range []string{
		"/api/v1/namespaces/default/pods/app/status",
		"/apis/apps/v1/watch/namespaces/x/deployments?watch=true",
		"/api/v1/namespaces?fieldSelector=metadata.name%3Dx",
		"/api/v1/watch",
		"/api/v1/proxy/",
		"/api/v1/namespaces//",
		"/healthz",
		"//",
		"/apis/a/b/c/d/e/f/g/h",
		"/api/v1/pods?labelSelector=a+in+(b",
	} {
		for _, m := range []string{"GET", "POST", "DELETE", "PATCH"} {
			f.Add(m, s)
		}
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		r, err := http.NewRequest(method, "http://x"+target, nil)
		if err != nil {
			return
		}
		ri, err := NewRequestInfo(r)
		if ri == nil {
			t.Fatal("NewRequestInfo returned nil RequestInfo")
		}
		if err != nil {
			return
		}
		if ri.IsResourceRequest {
			if len(ri.Parts) == 0 || ri.Resource != ri.Parts[0] {
				t.Fatalf("resource %q not the first of parts %q", ri.Resource, ri.Parts)
			}
			if ri.APIPrefix != "api" && ri.APIPrefix != "apis" {
				t.Fatalf("resource request with prefix %q", ri.APIPrefix)
			}
		} else if ri.Verb != strings.ToLower(r.Method) {
			t.Fatalf("non-resource verb %q for method %q", ri.Verb, method)
		}
	})
}

func BenchmarkNewRequestInfo(b *testing.B) {
	for _, bc := range []struct{ name, method, url string }{
		{"get", "GET", "/api/v1/namespaces/default/pods/app"},
		{"create", "POST", "/api/v1/namespaces/default/pods/app/binding"},
		{"watch", "GET", "/api/v1/namespaces/default/pods?watch=true&resourceVersion=10&allowWatchBookmarks=true"},
		{"nonresource", "GET", "/healthz"},
		{"hostile-long", "GET", "/api/v1/namespaces/" + strings.Repeat("a/", 2000)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest(bc.method, bc.url, nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NewRequestInfo(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
