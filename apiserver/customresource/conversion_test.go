package customresource_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/apiserver/customresource"
)

// widgets is a definition in two versions, v1 stored, converted by a
// webhook: v1's spec.size is v2's spec.length.
const widgets = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.conv.example.com
spec:
  group: conv.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {url: URL}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {length: {type: integer}}}
status:
  acceptedNames: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  storedVersions: [v1]
`

var widgetsV1 = schema.GroupVersionResource{Group: "conv.example.com", Version: "v1", Resource: "widgets"}

// serveConversion answers a ConversionReview as the webhook at its path
// does: /convert renames spec.size and spec.length, and so does /smuggle,
// which adds spec.admin, a field no schema has, into v1; /fail refuses; /uid
// answers another request's uid; /count answers no object; /slow
// answers only once the caller has given up.
func serveConversion(w http.ResponseWriter, r *http.Request) {
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not a ConversionReview", http.StatusBadRequest)
		return
	}
	req := review.Request
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	switch r.URL.Path {
	case "/slow":
		<-r.Context().Done()
		return
	case "/fail":
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: "widgets cannot be converted today"}
	case "/uid":
		resp.UID = types.UID("not-" + string(req.UID))
	case "/count":
	default:
		for _, raw := range req.Objects {
			var obj map[string]any
			if err := json.Unmarshal(raw.Raw, &obj); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			from, to := "size", "length"
			if req.DesiredAPIVersion == "conv.example.com/v1" {
				from, to = to, from
			}
			if spec, ok := obj["spec"].(map[string]any); ok {
				if v, ok := spec[from]; ok {
					spec[to] = v
					delete(spec, from)
				}
				if r.URL.Path == "/smuggle" && to == "size" {
					spec["admin"] = "smuggled"
				}
			}
			obj["apiVersion"] = req.DesiredAPIVersion
			data, _ := json.Marshal(obj)
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: data})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&apiextensionsv1.ConversionReview{TypeMeta: review.TypeMeta, Response: resp})
}

// startWidgets serves the widgets, converted by the webhook at path of a
// TLS server run by the test, through conv (nil: the default), and
// returns the client of each version in namespace default.
func startWidgets(t *testing.T, path string, conv customresource.Converters) (v1, v2 dynamic.ResourceInterface) {
	t.Helper()
	hook := httptest.NewTLSServer(http.HandlerFunc(serveConversion))
	t.Cleanup(hook.Close)
	var c apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(strings.Replace(widgets, "URL", hook.URL+path, 1)), &c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Conversion.Webhook.ClientConfig.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	srv := apiservertest.Start(t)
	rs, err := customresource.ResourcesConverting(&c, conv)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.API.SetResources(customresource.Owner(&c), rs); err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	v2gvr := widgetsV1
	v2gvr.Version = "v2"
	return dc.Resource(widgetsV1).Namespace("default"), dc.Resource(v2gvr).Namespace("default")
}

func widget(version, name, field string, value int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "conv.example.com/" + version, "kind": "Widget",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{field: value}}}
}

func specField(t *testing.T, u *unstructured.Unstructured, field string) int64 {
	t.Helper()
	v, ok, err := unstructured.NestedInt64(u.Object, "spec", field)
	if err != nil || !ok {
		t.Fatalf("%s %s: no spec.%s in %v (%v)", u.GetAPIVersion(), u.GetName(), field, u.Object["spec"], err)
	}
	return v
}

// An object written in one version is read in the other through the
// webhook, on get, list and watch, and a write in the version not stored
// is converted to the storage version before it is stored (I.2).
func TestWebhookConversionBothWays_I2(t *testing.T) {
	t.Parallel()
	v1, v2 := startWidgets(t, "/convert", nil)
	ctx := context.Background()

	if _, err := v1.Create(ctx, widget("v1", "a", "size", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := v2.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get in v2: %v", err)
	}
	if got.GetAPIVersion() != "conv.example.com/v2" || specField(t, got, "length") != 3 {
		t.Errorf("get in v2: got %s spec %v, want conv.example.com/v2 spec.length 3", got.GetAPIVersion(), got.Object["spec"])
	}

	created, err := v2.Create(ctx, widget("v2", "b", "length", 5), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create in v2: %v", err)
	}
	if specField(t, created, "length") != 5 {
		t.Errorf("create in v2 answered spec %v, want length 5", created.Object["spec"])
	}
	got, err = v1.Get(ctx, "b", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get in v1: %v", err)
	}
	if specField(t, got, "size") != 5 {
		t.Errorf("get in v1: got spec %v, want size 5", got.Object["spec"])
	}

	list, err := v2.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list in v2: %v", err)
	}
	if len(list.Items) != 2 || specField(t, &list.Items[0], "length") != 3 || specField(t, &list.Items[1], "length") != 5 {
		t.Errorf("list in v2: got %v, want a and b with spec.length", list.Items)
	}

	w, err := v2.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := v1.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"size":4}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch in v1: %v", err)
	}
	select {
	case ev := <-w.ResultChan():
		u, _ := ev.Object.(*unstructured.Unstructured)
		if ev.Type != watch.Modified || u == nil || specField(t, u, "length") != 4 {
			t.Errorf("watch in v2: got %s %v, want MODIFIED with spec.length 4", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watch in v2: no event")
	}

	// Server-side apply in v2 of an object stored in v1.
	apply := []byte(`{"apiVersion":"conv.example.com/v2","kind":"Widget","metadata":{"name":"b"},"spec":{"length":6}}`)
	applied, err := v2.Patch(ctx, "b", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "tester", Force: ptr.To(true)})
	if err != nil {
		t.Fatalf("apply in v2: %v", err)
	}
	if specField(t, applied, "length") != 6 {
		t.Errorf("apply in v2 answered spec %v, want length 6", applied.Object["spec"])
	}
	if got, err = v1.Get(ctx, "b", metav1.GetOptions{}); err != nil || specField(t, got, "size") != 6 {
		t.Errorf("get in v1 after apply: got %v, %v; want spec.size 6", got, err)
	}
}

// A webhook that refuses, answers another uid or the wrong number of
// objects, or does not answer in time fails the request with kube's 500:
// `conversion webhook for GVK failed: ...` (or kube's text of the wrong
// count), with no reason, and a read by name with kube's internal error
// of a corrupt object; a write in the storage version calls no webhook
// (I.2).
func TestWebhookConversionFailures_I2(t *testing.T) {
	t.Parallel()
	// The webhook client's timeout, 30 s in kube, is cut for /slow.
	short, err := customresource.NewConverters(nil, func(r webhookutil.AuthenticationInfoResolver) webhookutil.AuthenticationInfoResolver {
		return shortTimeout{r}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		conv customresource.Converters
		want string
	}{
		{"/fail", nil, "conversion webhook for conv.example.com/v2, Kind=Widget failed: widgets cannot be converted today"},
		{"/uid", nil, `conversion webhook for conv.example.com/v2, Kind=Widget failed: expected response.uid=`},
		{"/count", nil, "conversion webhook for conv.example.com/v2, Kind=Widget returned 0 objects, expected 1"},
		{"/slow", short, "conversion webhook for conv.example.com/v2, Kind=Widget failed: Post "},
	} {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			v1, v2 := startWidgets(t, tc.path, tc.conv)
			ctx := context.Background()
			_, err := v2.Create(ctx, widget("v2", "a", "length", 1), metav1.CreateOptions{})
			checkConversionErr(t, "create in v2", err, tc.want)
			if _, err := v1.Create(ctx, widget("v1", "a", "size", 1), metav1.CreateOptions{}); err != nil {
				t.Fatalf("create in v1: %v", err)
			}
			// A read by name is kube's storage error of an object that
			// does not decode.
			_, err = v2.Get(ctx, "a", metav1.GetOptions{})
			var se *apierrors.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("get in v2: got %v, want a 500 Status", err)
			}
			const corrupt = "Internal error occurred: StorageError: corrupt object, Code: 7, Key: /conv.example.com/widgets/default/a, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision="
			if st := se.ErrStatus; st.Code != http.StatusInternalServerError || st.Reason != metav1.StatusReasonInternalError ||
				!strings.HasPrefix(st.Message, corrupt) || !strings.Contains(st.Message, strings.Replace(tc.want, "/v2,", "/v1,", 1)) {
				t.Errorf("get in v2: got %d %q %q, want 500 InternalError %q... %q", st.Code, st.Reason, st.Message, corrupt, tc.want)
			}
			_, err = v2.List(ctx, metav1.ListOptions{})
			checkConversionErr(t, "list in v2", err, strings.Replace(tc.want, "/v2,", "/v1,", 1))
		})
	}
}

func checkConversionErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("%s: got %v, want a 500 Status", what, err)
	}
	st := se.ErrStatus
	if st.Code != http.StatusInternalServerError || st.Reason != "" || !strings.HasPrefix(st.Message, want) {
		t.Errorf("%s: got %d %q %q, want 500, no reason, a message starting %q", what, st.Code, st.Reason, st.Message, want)
	}
}

// shortTimeout gives the webhook client a timeout of a second.
type shortTimeout struct {
	webhookutil.AuthenticationInfoResolver
}

func (s shortTimeout) ClientConfigFor(hostPort string) (*rest.Config, error) {
	cfg, err := s.AuthenticationInfoResolver.ClientConfigFor(hostPort)
	if cfg != nil {
		cfg.Timeout = time.Second
	}
	return cfg, err
}

// What a conversion webhook adds to the storage version outside its
// schema is pruned before it is stored, as kube's storage codec prunes
// it: once the definition's schema gains the field, no object carries a
// value the webhook chose and no validation or admission saw (I.2).
func TestWebhookConversionOutputIsPruned_I2(t *testing.T) {
	hook := httptest.NewTLSServer(http.HandlerFunc(serveConversion))
	t.Cleanup(hook.Close)
	load := func(withAdmin bool) *apiextensionsv1.CustomResourceDefinition {
		var c apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict([]byte(strings.Replace(widgets, "URL", hook.URL+"/smuggle", 1)), &c); err != nil {
			t.Fatal(err)
		}
		c.Spec.Conversion.Webhook.ClientConfig.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
		if withAdmin {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["admin"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		}
		return &c
	}
	srv := apiservertest.Start(t)
	c := load(false)
	rs, err := customresource.ResourcesConverting(c, nil)
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
	v2gvr := widgetsV1
	v2gvr.Version = "v2"
	ctx := context.Background()
	if _, err := dc.Resource(v2gvr).Namespace("default").Create(ctx, widget("v2", "a", "length", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The definition's storage version learns spec.admin.
	c = load(true)
	rs, err = customresource.ResourcesConverting(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.API.SetResources(customresource.Owner(c), rs); err != nil {
		t.Fatal(err)
	}
	got, err := dc.Resource(widgetsV1).Namespace("default").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if admin, ok := got.Object["spec"].(map[string]any)["admin"]; ok {
		t.Errorf("v1 object a has spec.admin=%v: the webhook's field outside the schema was stored", admin)
	}
}
