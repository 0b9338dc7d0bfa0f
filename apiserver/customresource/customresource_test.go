package customresource_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/apiserver/customresource"
)

// crontabs is the CRD of kube's documentation, with a default, a CEL rule,
// the status subresource, printer columns and a selectable field.
const crontabs = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: SCOPE
  names: {plural: crontabs, singular: crontab, kind: CronTab, listKind: CronTabList, shortNames: [ct], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}, scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}}
    selectableFields: [{jsonPath: .spec.image}]
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.replicas <= 10"
              message: "at most 10 replicas"
            properties:
              cronSpec: {type: string, pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'}
              image: {type: string}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer}}}
              replicas: {type: integer, minimum: 1, default: 1}
          status:
            type: object
            properties:
              lastRun: {type: string}
              replicas: {type: integer}
              selector: {type: string}
status:
  acceptedNames: {plural: crontabs, singular: crontab, kind: CronTab, listKind: CronTabList, shortNames: [ct], categories: [all]}
  storedVersions: [v1]
`

var crontabsGVR = schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}

func crd(t *testing.T, scope string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var c apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(strings.Replace(crontabs, "SCOPE", scope, 1)), &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// start serves the crontabs of scope on a new server.
func start(t *testing.T, scope string) (*apiservertest.Server, dynamic.ResourceInterface) {
	t.Helper()
	srv := apiservertest.Start(t)
	c := crd(t, scope)
	rs, err := customresource.Resources(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.API.SetResources(customresource.Owner(c), rs); err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	var ri dynamic.ResourceInterface = dc.Resource(crontabsGVR)
	if scope == "Namespaced" {
		ri = dc.Resource(crontabsGVR).Namespace("default")
	}
	return srv, ri
}

func crontab(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "stable.example.com/v1", "kind": "CronTab",
		"metadata": map[string]any{"name": name}, "spec": spec}}
}

func TestVerbsOfBothScopes_I2(t *testing.T) {
	for _, scope := range []string{"Namespaced", "Cluster"} {
		t.Run(scope, func(t *testing.T) {
			_, ri := start(t, scope)
			ctx := context.Background()
			created, err := ri.Create(ctx, crontab("a", map[string]any{"cronSpec": "* * * * */5", "image": "img"}), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if (created.GetNamespace() == "default") != (scope == "Namespaced") || created.GetGeneration() != 1 {
				t.Errorf("created: namespace %q generation %d", created.GetNamespace(), created.GetGeneration())
			}
			got, err := ri.Get(ctx, "a", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			spec := got.Object["spec"].(map[string]any)
			spec["image"] = "img2"
			updated, err := ri.Update(ctx, got, metav1.UpdateOptions{})
			if err != nil || updated.GetGeneration() != 2 {
				t.Fatalf("update: generation %d, %v; want 2", updated.GetGeneration(), err)
			}
			labelled, err := ri.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
			if err != nil || labelled.GetGeneration() != 2 {
				t.Fatalf("label patch: generation %d, %v; want 2 (metadata does not count)", labelled.GetGeneration(), err)
			}
			list, err := ri.List(ctx, metav1.ListOptions{FieldSelector: "spec.image=img2"})
			if err != nil || len(list.Items) != 1 {
				t.Fatalf("list by spec.image: got %v, %v", list, err)
			}
			if err := ri.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := ri.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("after delete: got %v, want 404", err)
			}
		})
	}
}

func TestPruningAndDefaulting_I2(t *testing.T) {
	srv, ri := start(t, "Namespaced")
	body := `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"p"},"spec":{"cronSpec":"* * * * *","junk":1},"extra":true}`
	req, _ := http.NewRequest(http.MethodPost, srv.Config.Host+"/apis/stable.example.com/v1/namespaces/default/crontabs", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: got %d %s", resp.StatusCode, data)
	}
	warnings := strings.Join(resp.Header.Values("Warning"), "\n")
	for _, want := range []string{`unknown field \"extra\"`, `unknown field \"spec.junk\"`} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings %q lack %s", warnings, want)
		}
	}
	got, err := ri.Get(context.Background(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Object["extra"]; ok {
		t.Error("extra was not pruned")
	}
	spec := got.Object["spec"].(map[string]any)
	if _, ok := spec["junk"]; ok {
		t.Error("spec.junk was not pruned")
	}
	if spec["replicas"] != int64(1) {
		t.Errorf("spec.replicas: got %v, want the default 1", spec["replicas"])
	}

	req, _ = http.NewRequest(http.MethodPost, srv.Config.Host+"/apis/stable.example.com/v1/namespaces/default/crontabs?fieldValidation=Strict",
		strings.NewReader(strings.Replace(body, `"p"`, `"q"`, 1)))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(data), `strict decoding error: unknown field \"extra\"`) {
		t.Errorf("strict create: got %d %s", resp.StatusCode, data)
	}
}

func TestSchemaAndCELErrors_I2(t *testing.T) {
	_, ri := start(t, "Namespaced")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		spec map[string]any
		want []string
	}{
		{"pattern", map[string]any{"cronSpec": "nope"}, []string{`spec.cronSpec: Invalid value: "nope": spec.cronSpec in body should match`}},
		{"minimum", map[string]any{"replicas": int64(0)}, []string{`spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1`}},
		{"type", map[string]any{"replicas": "x"}, []string{`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`}},
		{"cel", map[string]any{"replicas": int64(11)}, []string{`spec: Invalid value: at most 10 replicas`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ri.Create(ctx, crontab("bad-"+tc.name, tc.spec), metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want 422", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("got %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

func TestStatusSubresource_I2(t *testing.T) {
	_, ri := start(t, "Namespaced")
	ctx := context.Background()
	c := crontab("s", map[string]any{"cronSpec": "* * * * *"})
	c.Object["status"] = map[string]any{"lastRun": "never"}
	created, err := ri.Create(ctx, c, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := created.Object["status"]; ok {
		t.Errorf("a create kept the status: %v", created.Object["status"])
	}
	created.Object["status"] = map[string]any{"lastRun": "now"}
	st, err := ri.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Object["status"].(map[string]any)["lastRun"] != "now" || st.GetGeneration() != 1 {
		t.Errorf("status update: got %v generation %d", st.Object["status"], st.GetGeneration())
	}
	st.Object["status"] = map[string]any{"lastRun": "later"}
	st.Object["spec"].(map[string]any)["image"] = "i"
	up, err := ri.Update(ctx, st, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if up.Object["status"].(map[string]any)["lastRun"] != "now" || up.GetGeneration() != 2 {
		t.Errorf("update: got status %v generation %d, want the status kept and generation 2", up.Object["status"], up.GetGeneration())
	}
}

func TestTable_I2(t *testing.T) {
	srv, ri := start(t, "Namespaced")
	if _, err := ri.Create(context.Background(), crontab("t", map[string]any{"cronSpec": "* * * * *", "replicas": int64(3)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.Config.Host+"/apis/stable.example.com/v1/namespaces/default/crontabs", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "Name,Spec,Replicas,Age" {
		t.Errorf("columns: got %v, want Name,Spec,Replicas,Age", names)
	}
	if len(table.Rows) != 1 || table.Rows[0].Cells[0] != "t" || table.Rows[0].Cells[1] != "* * * * *" || table.Rows[0].Cells[2] != float64(3) {
		t.Errorf("rows: got %+v", table.Rows)
	}
}

func TestDeprecatedVersionAndUnservedVersion_I2(t *testing.T) {
	c := crd(t, "Namespaced")
	v2 := c.Spec.Versions[0]
	v2.Name, v2.Storage, v2.Served = "v2", false, false
	c.Spec.Versions[0].Deprecated = true
	c.Spec.Versions = append(c.Spec.Versions, v2)
	rs, err := customresource.Resources(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].GVR.Version != "v1" {
		t.Fatalf("got %d resources, want v1 alone", len(rs))
	}
	if rs[0].Deprecation != "stable.example.com/v1 CronTab is deprecated" {
		t.Errorf("deprecation: got %q", rs[0].Deprecation)
	}
	c.Spec.Versions[0].DeprecationWarning = ptr.To("use v2")
	rs, _ = customresource.Resources(c)
	if rs[0].Deprecation != "use v2" {
		t.Errorf("deprecation: got %q, want use v2", rs[0].Deprecation)
	}
}

func TestScaleSubresource_I2(t *testing.T) {
	srv, ri := start(t, "Namespaced")
	ctx := context.Background()
	c, err := ri.Create(ctx, crontab("sc", map[string]any{"cronSpec": "* * * * *", "replicas": int64(2)}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Object["status"] = map[string]any{"replicas": int64(2), "selector": "app=x"}
	if _, err := ri.UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	scales := srv.Client.AppsV1().RESTClient() // any REST client reaches the path
	var sc autoscalingv1.Scale
	if err := scales.Get().AbsPath("/apis/stable.example.com/v1/namespaces/default/crontabs/sc/scale").Do(ctx).Into(&sc); err != nil {
		t.Fatal(err)
	}
	if sc.Spec.Replicas != 2 || sc.Status.Replicas != 2 || sc.Status.Selector != "app=x" {
		t.Fatalf("scale: got %+v", sc)
	}
	var patched autoscalingv1.Scale
	if err := scales.Patch(types.MergePatchType).AbsPath("/apis/stable.example.com/v1/namespaces/default/crontabs/sc/scale").
		Body([]byte(`{"spec":{"replicas":5}}`)).Do(ctx).Into(&patched); err != nil {
		t.Fatal(err)
	}
	got, err := ri.Get(ctx, "sc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := got.Object["spec"].(map[string]any)["replicas"]; n != int64(5) || got.GetGeneration() != 2 || patched.Spec.Replicas != 5 {
		t.Errorf("after scaling to 5: spec.replicas %v generation %d scale %d", n, got.GetGeneration(), patched.Spec.Replicas)
	}
	err = scales.Patch(types.MergePatchType).AbsPath("/apis/stable.example.com/v1/namespaces/default/crontabs/sc/scale").
		Body([]byte(`{"spec":{"replicas":11}}`)).Do(ctx).Error()
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "at most 10 replicas") {
		t.Errorf("scaling to 11: got %v, want the CEL rule's 422", err)
	}
}

func TestServerSideApply_I2(t *testing.T) {
	_, ri := start(t, "Namespaced")
	ctx := context.Background()
	applied, err := ri.Apply(ctx, "ssa", crontab("ssa", map[string]any{"cronSpec": "* * * * *", "image": "a"}), metav1.ApplyOptions{FieldManager: "one"})
	if err != nil {
		t.Fatal(err)
	}
	mf := applied.GetManagedFields()
	if len(mf) != 1 || mf[0].Manager != "one" || mf[0].Operation != metav1.ManagedFieldsOperationApply ||
		!strings.Contains(mf[0].FieldsV1.GetRawString(), `"f:image"`) {
		t.Fatalf("managedFields: got %+v", mf)
	}
	// The default of spec.replicas is filled and owned by no applier.
	if applied.Object["spec"].(map[string]any)["replicas"] != int64(1) {
		t.Errorf("spec.replicas: got %v, want the default", applied.Object["spec"])
	}
	_, err = ri.Apply(ctx, "ssa", crontab("ssa", map[string]any{"image": "b"}), metav1.ApplyOptions{FieldManager: "two"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "one": .spec.image`) {
		t.Fatalf("second applier: got %v, want a conflict on .spec.image", err)
	}
	forced, err := ri.Apply(ctx, "ssa", crontab("ssa", map[string]any{"image": "b"}), metav1.ApplyOptions{FieldManager: "two", Force: true})
	if err != nil || forced.Object["spec"].(map[string]any)["image"] != "b" {
		t.Fatalf("forced apply: got %v, %v", forced, err)
	}
}

// A list the schema makes a map merges the items of two appliers, as the
// type converter built from the schema says, where a deduced one would
// make it atomic.
func TestApplyMergesListMaps_I2(t *testing.T) {
	_, ri := start(t, "Namespaced")
	ctx := context.Background()
	port := func(name string) map[string]any { return map[string]any{"name": name, "port": int64(80)} }
	if _, err := ri.Apply(ctx, "lm", crontab("lm", map[string]any{"ports": []any{port("a")}}), metav1.ApplyOptions{FieldManager: "one"}); err != nil {
		t.Fatal(err)
	}
	got, err := ri.Apply(ctx, "lm", crontab("lm", map[string]any{"ports": []any{port("b")}}), metav1.ApplyOptions{FieldManager: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if ports := got.Object["spec"].(map[string]any)["ports"].([]any); len(ports) != 2 {
		t.Errorf("ports: got %v, want a and b", ports)
	}
}

// Two served versions with conversion None share the objects: each is
// read in the version asked and stored in the storage version.
func TestVersionsWithoutConversion_I2(t *testing.T) {
	srv := apiservertest.Start(t)
	c := crd(t, "Namespaced")
	v2 := *c.Spec.Versions[0].DeepCopy()
	v2.Name, v2.Storage = "v2", false
	c.Spec.Versions = append(c.Spec.Versions, v2)
	rs, err := customresource.Resources(c)
	if err != nil || len(rs) != 2 {
		t.Fatalf("got %d resources, %v; want 2", len(rs), err)
	}
	if err := srv.API.SetResources(customresource.Owner(c), rs); err != nil {
		t.Fatal(err)
	}
	dc, _ := dynamic.NewForConfig(srv.Config)
	ctx := context.Background()
	obj := crontab("v", map[string]any{"cronSpec": "* * * * *"})
	obj.SetAPIVersion("stable.example.com/v2")
	v2GVR := crontabsGVR
	v2GVR.Version = "v2"
	if _, err := dc.Resource(v2GVR).Namespace("default").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := dc.Resource(crontabsGVR).Namespace("default").Get(ctx, "v", metav1.GetOptions{})
	if err != nil || got.GetAPIVersion() != "stable.example.com/v1" {
		t.Fatalf("get as v1: got %v, %v", got, err)
	}
	list, err := dc.Resource(v2GVR).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].GetAPIVersion() != "stable.example.com/v2" {
		t.Fatalf("list as v2: got %v, %v", list, err)
	}
}

func TestUpdateNeedsResourceVersion_I2(t *testing.T) {
	_, ri := start(t, "Namespaced")
	ctx := context.Background()
	if _, err := ri.Create(ctx, crontab("rv", map[string]any{"cronSpec": "* * * * *"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := ri.Update(ctx, crontab("rv", map[string]any{"cronSpec": "5 * * * *"}), metav1.UpdateOptions{})
	want := `crontabs.stable.example.com "rv" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("update without resourceVersion: got %v, want %s", err, want)
	}
}

func TestDiscoveryAndPathsOfACustomGroup_I2(t *testing.T) {
	srv, _ := start(t, "Namespaced")
	resp, err := http.Get(srv.Config.Host + "/apis/stable.example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	var rl metav1.APIResourceList
	err = json.NewDecoder(resp.Body).Decode(&rl)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rl.APIResources {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "crontabs,crontabs/status,crontabs/scale" {
		t.Errorf("resources: got %v, want the status before the scale, as kube lists them", names)
	}
	for _, path := range []string{"/apis/stable.example.com/v1/widgets", "/apis/stable.example.com/v2"} {
		resp, err := http.Get(srv.Config.Host + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("GET %s: got %d %s %q, want a plain 404", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
}

// An object stored before its schema had a default, or a field, is read
// with the default filled and without the field, as kube's storage
// decoder reads it.
func TestReadDefaultsAndPrunes_I2(t *testing.T) {
	srv := apiservertest.Start(t)
	c := crd(t, "Namespaced")
	props := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	replicas := props.Properties["replicas"]
	replicas.Default = nil
	props.Properties["replicas"] = replicas
	props.Properties["old"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
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
	created, err := ri.Create(ctx, crontab("old", map[string]any{"cronSpec": "* * * * *", "old": "x"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := created.Object["spec"].(map[string]any)["replicas"]; ok {
		t.Fatal("replicas defaulted without a default")
	}
	install(crd(t, "Namespaced"))
	got, err := ri.Get(ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := got.Object["spec"].(map[string]any)
	if spec["replicas"] != int64(1) || spec["old"] != nil {
		t.Errorf("spec read after the schema changed: got %v, want replicas 1 and no old", spec)
	}
}

// Each served version has its OpenAPI v3 document, as kube builds it, for
// as long as it is served.
func TestOpenAPIV3_I2(t *testing.T) {
	srv, _ := start(t, "Namespaced")
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.Config.Host + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if _, root := get("/openapi/v3"); !strings.Contains(root, `"apis/stable.example.com/v1"`) || !strings.Contains(root, `"api/v1"`) {
		t.Fatalf("root lacks apis/stable.example.com/v1 or api/v1: %.300s", root)
	}
	code, doc := get("/openapi/v3/apis/stable.example.com/v1")
	if code != http.StatusOK || !strings.Contains(doc, `"/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"`) ||
		!strings.Contains(doc, `"com.example.stable.v1.CronTab"`) {
		t.Fatalf("document: %d %.300s", code, doc)
	}
	if err := srv.API.SetResources("crontabs.stable.example.com", nil); err != nil {
		t.Fatal(err)
	}
	if _, root := get("/openapi/v3"); strings.Contains(root, "stable.example.com") {
		t.Errorf("root still lists the removed group version")
	}
	if code, _ := get("/openapi/v3/apis/stable.example.com/v1"); code != http.StatusNotFound {
		t.Errorf("removed document: got %d, want 404", code)
	}
}

// While its definition is being deleted, a custom resource can be read
// and deleted, but not created.
func TestTerminatingDefinitionRefusesCreates_I2(t *testing.T) {
	srv, ri := start(t, "Namespaced")
	ctx := context.Background()
	if _, err := ri.Create(ctx, crontab("before", map[string]any{"cronSpec": "* * * * *"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := crd(t, "Namespaced")
	c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue}}
	rs, err := customresource.Resources(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.API.SetResources(customresource.Owner(c), rs); err != nil {
		t.Fatal(err)
	}
	_, err = ri.Create(ctx, crontab("after", map[string]any{"cronSpec": "* * * * *"}), metav1.CreateOptions{})
	want := `crontabs.stable.example.com "after" is forbidden: create not allowed while custom resource definition is terminating`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("create: got %v, want %s", err, want)
	}
	if _, err := ri.Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Errorf("get: %v", err)
	}
	if err := ri.Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete: %v", err)
	}
	if got := strings.Join(rs[0].Verbs, ","); got != "delete,deletecollection,get,list,watch" {
		t.Errorf("verbs: got %s", got)
	}
}
