package customresource_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"k8s.io/client-go/rest"

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
