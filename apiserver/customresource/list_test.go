package customresource_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/apiserver/customresource"
)

// listJSON returns the body of a JSON LIST of the default namespace's
// crontabs.
func listJSON(t *testing.T, srv *apiservertest.Server, query string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.Config.Host+"/apis/stable.example.com/v1/namespaces/default/crontabs"+query, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("list: %d %s %v", resp.StatusCode, body, err)
	}
	return body
}

// A JSON LIST of custom resources is written as encoding/json writes the
// decoded list (keys sorted, items with their apiVersion and kind, HTML
// characters escaped), the same bytes when the items' encodings are
// reused, and read by the definition's current schema once it changes
// (I.2).
func TestJSONListOfCustomResources_I2(t *testing.T) {
	srv := apiservertest.Start(t)
	c := crd(t, "Namespaced")
	props := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	replicas := props.Properties["replicas"]
	replicas.Default = nil
	props.Properties["replicas"] = replicas
	props.XValidations = nil // its rule needs replicas
	c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = props
	install := func(c *apiextensionsv1.CustomResourceDefinition) {
		rs, err := customresource.Resources(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.API.SetResources(customresource.Owner(c), rs); err != nil {
			t.Fatal(err)
		}
	}
	install(c)
	dc, _ := dynamic.NewForConfig(srv.Config)
	ri := dc.Resource(crontabsGVR).Namespace("default")
	ctx := context.Background()
	for _, name := range []string{"a", "b", "c"} {
		if _, err := ri.Create(ctx, crontab(name, map[string]any{"cronSpec": "* * * * *", "image": "a<b>&c"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	first := listJSON(t, srv, "")
	// The decoded list, encoded by encoding/json.
	var decoded any
	d := json.NewDecoder(bytes.NewReader(first))
	d.UseNumber()
	if err := d.Decode(&decoded); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.NewEncoder(&want).Encode(decoded); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, want.Bytes()) {
		t.Errorf("LIST:\n%s\nwant encoding/json's encoding of the list:\n%s", first, want.Bytes())
	}
	items := decoded.(map[string]any)["items"].([]any)
	if len(items) != 3 || items[0].(map[string]any)["kind"] != "CronTab" || items[0].(map[string]any)["apiVersion"] != "stable.example.com/v1" {
		t.Fatalf("items: %v", items)
	}
	if again := listJSON(t, srv, ""); !bytes.Equal(again, first) {
		t.Errorf("second LIST:\n%s\nwant the first:\n%s", again, first)
	}
	// A page has the continue token and the remaining count, sorted.
	page := listJSON(t, srv, "?limit=1")
	var p struct {
		Metadata map[string]any `json:"metadata"`
		Items    []any          `json:"items"`
	}
	if err := json.Unmarshal(page, &p); err != nil || len(p.Items) != 1 || p.Metadata["continue"] == nil || p.Metadata["remainingItemCount"] != float64(2) {
		t.Errorf("page of 1: %s (%v)", page, err)
	}

	install(crd(t, "Namespaced")) // replicas defaults to 1 again
	var after struct {
		Items []struct {
			Spec map[string]any `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal(listJSON(t, srv, ""), &after); err != nil || len(after.Items) != 3 {
		t.Fatalf("LIST after the schema changed: %v", err)
	}
	for i, it := range after.Items {
		if it.Spec["replicas"] != float64(1) {
			t.Errorf("item %d after the schema changed: spec %v, want replicas defaulted to 1", i, it.Spec)
		}
	}
}
