package customresource_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/apiserver/customresource"
)

// getOpenAPIV2 returns the definitions and paths of /openapi/v2 and its
// ETag.
func getOpenAPIV2(t *testing.T, srv *apiservertest.Server) (defs, paths map[string]any, etag string) {
	t.Helper()
	hc, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(srv.Config.Host + "/openapi/v2")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi/v2: %d %s", resp.StatusCode, body)
	}
	var doc struct {
		Definitions map[string]any `json:"definitions"`
		Paths       map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Definitions, doc.Paths, resp.Header.Get("ETag")
}

// /openapi/v2 carries the definitions and paths of the custom resources
// served, from the moment they are served until they are not, even when
// it was read before; its ETag changes only with them (B.7).
func TestOpenAPIV2FollowsCustomResources_B7(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	const kind, path = "com.example.stable.v1.CronTab", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"
	defs, _, before := getOpenAPIV2(t, srv)
	if _, ok := defs[kind]; ok {
		t.Fatalf("%s defined before its CRD is served", kind)
	}
	if _, _, again := getOpenAPIV2(t, srv); again != before {
		t.Errorf("ETag changed from %s to %s with nothing served anew", before, again)
	}

	c := crd(t, "Namespaced")
	rs, err := customresource.Resources(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.API.SetResources(customresource.Owner(c), rs); err != nil {
		t.Fatal(err)
	}
	defs, paths, served := getOpenAPIV2(t, srv)
	def, ok := defs[kind].(map[string]any)
	if !ok {
		t.Fatalf("%s not defined once served", kind)
	}
	if gvk, _ := json.Marshal(def["x-kubernetes-group-version-kind"]); string(gvk) != `[{"group":"stable.example.com","kind":"CronTab","version":"v1"}]` {
		t.Errorf("%s x-kubernetes-group-version-kind: got %s", kind, gvk)
	}
	if _, ok := paths[path]; !ok {
		t.Errorf("no path %s once served", path)
	}
	if _, ok := defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta_v2"]; ok {
		t.Error("the custom document's ObjectMeta was renamed, not merged with the typed kinds'")
	}
	if served == before {
		t.Errorf("ETag %s unchanged once a CRD is served", served)
	}
	// The same resources installed again change nothing.
	rs, _ = customresource.Resources(c)
	if err := srv.API.SetResources(customresource.Owner(c), rs); err != nil {
		t.Fatal(err)
	}
	if _, _, again := getOpenAPIV2(t, srv); again != served {
		t.Errorf("ETag changed from %s to %s when the same CRD was installed again", served, again)
	}

	if err := srv.API.SetResources(customresource.Owner(c), nil); err != nil {
		t.Fatal(err)
	}
	defs, paths, _ = getOpenAPIV2(t, srv)
	if _, ok := defs[kind]; ok {
		t.Errorf("%s still defined once no longer served", kind)
	}
	if _, ok := paths[path]; ok {
		t.Errorf("path %s still there once no longer served", path)
	}
}

// A CRD whose v2 definition name is a built-in kind's (group
// core.api.k8s.io, kind Pod: io.k8s.api.core.v1.Pod) keeps a definition
// of its own in /openapi/v2, renamed as kube-apiserver's merge renames it,
// and its paths point at it; the built-in Pod's is unchanged (B.7).
func TestOpenAPIV2RenamesACRDDefinitionNamedLikeABuiltIn_B7(t *testing.T) {
	srv := apiservertest.Start(t)
	const fakePods = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: pods.core.api.k8s.io
  annotations: {api-approved.kubernetes.io: "unapproved, test"}
spec:
  group: core.api.k8s.io
  scope: Namespaced
  names: {plural: pods, singular: pod, kind: Pod, listKind: PodList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {evil: {type: string}}}
status:
  acceptedNames: {plural: pods, singular: pod, kind: Pod, listKind: PodList}
  storedVersions: [v1]
`
	var c apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(fakePods), &c); err != nil {
		t.Fatal(err)
	}
	rs, err := customresource.Resources(&c)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.API.SetResources(customresource.Owner(&c), rs); err != nil {
		t.Fatal(err)
	}
	defs, paths, _ := getOpenAPIV2(t, srv)
	item, _ := paths["/apis/core.api.k8s.io/v1/namespaces/{namespace}/pods/{name}"].(map[string]any)
	get, _ := item["get"].(map[string]any)
	resp, _ := get["responses"].(map[string]any)
	ok200, _ := resp["200"].(map[string]any)
	sch, _ := ok200["schema"].(map[string]any)
	ref, _ := sch["$ref"].(string)
	if ref != "#/definitions/io.k8s.api.core.v1.Pod_v2" {
		t.Errorf("the CRD's GET answers %q, want the renamed #/definitions/io.k8s.api.core.v1.Pod_v2", ref)
	}
	def, _ := defs[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any)
	if props, _ := json.Marshal(def["properties"]); !strings.Contains(string(props), `"evil"`) {
		t.Errorf("the CRD's definition %s has properties %s, want the CRD's spec.evil", ref, props)
	}
	pod, _ := defs["io.k8s.api.core.v1.Pod"].(map[string]any)
	if props, _ := json.Marshal(pod["properties"]); !strings.Contains(string(props), "io.k8s.api.core.v1.PodSpec") {
		t.Errorf("the built-in Pod's definition has properties %s, want its PodSpec", props)
	}
}
