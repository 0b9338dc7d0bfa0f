package server

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/internal/testwait"
)

// widgetCRD defines widgets.example.com of kind in versions, the first
// stored, each keeping every field.
func widgetCRD(kind string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: kind, ListKind: kind + "List"}}}
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: i == 0,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}})
	}
	return crd
}

// createCRD creates crd and waits until each of its versions is served.
func createCRD(t *testing.T, s *Server, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	crds, err := clientset.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
		testwait.For(t, 30*time.Second, gvr.String()+" served", func() (bool, string) {
			_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
			return err == nil, fmt.Sprint(err)
		})
	}
}

func widgetsIn(v string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "example.com", Version: v, Resource: "widgets"}
}

func widgetIn(v, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/" + v, "kind": "Widget",
		"metadata": map[string]any{"name": name}}}
}

var widgetsV1Rule = admissionregistrationv1.RuleWithOperations{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}

// A ValidatingAdmissionPolicy on widgets in example.com/v1, with the
// default matchPolicy Equivalent, refuses a widget created through v2
// of the same CRD: kube-apiserver takes every version of a CRD for the
// same resource (D.13).
func TestPolicyOnOneCRDVersionCoversTheOthers_D13(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	createCRD(t, s, widgetCRD("Widget", "v1", "v2"))
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "v1-widgets"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: widgetsV1Rule}}},
			Validations:      []admissionregistrationv1.Validation{{Expression: "object.apiVersion == 'example.com/v1' && has(object.spec)", Message: "a v1 widget with a spec"}},
		}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "v1-widgets"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "v1-widgets",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the policy refuses a v1 widget", func() (bool, string) {
		_, err := dyn.Resource(widgetsIn("v1")).Namespace("default").Create(ctx, widgetIn("v1", "w"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "a v1 widget with a spec"), fmt.Sprint(err)
	})
	_, err = dyn.Resource(widgetsIn("v2")).Namespace("default").Create(ctx, widgetIn("v2", "w"), metav1.CreateOptions{})
	want := `widgets.example.com "w" is forbidden: ValidatingAdmissionPolicy 'v1-widgets' with binding 'v1-widgets' denied request: a v1 widget with a spec`
	if err == nil || err.Error() != want {
		t.Fatalf("create through v2: got %v, want %s", err, want)
	}
	// The policy sees the object in v1: a v2 widget with a spec passes.
	w := widgetIn("v2", "w")
	w.Object["spec"] = map[string]any{"size": 1}
	got, err := dyn.Resource(widgetsIn("v2")).Namespace("default").Create(ctx, w, metav1.CreateOptions{})
	if err != nil || got.GetAPIVersion() != "example.com/v2" {
		t.Fatalf("create of a v2 widget with a spec: %v, %v; want it created in v2", got, err)
	}
}

// Webhooks on widgets in v1 are sent a widget created through v2 in
// v1, with kind and resource v1 and requestKind and requestResource v2;
// what a mutating one adds in v1 is stored, and answered in v2 (D.13).
func TestWebhookOnOneCRDVersionSeesItInThatVersion_D13(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	createCRD(t, s, widgetCRD("Widget", "v1", "v2"))
	var mu sync.Mutex
	reviews := map[string]*admissionv1.AdmissionRequest{}
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		mu.Lock()
		reviews[r.URL.Path+" "+review.Request.Name] = review.Request
		mu.Unlock()
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		if r.URL.Path == "/mutate" {
			pt := admissionv1.PatchTypeJSONPatch
			resp.PatchType, resp.Patch = &pt, []byte(`[{"op":"add","path":"/metadata/labels","value":{"hooked":"yes"}}]`)
		}
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(&review)
	}))
	defer hook.Close()
	config := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(hook.URL + path),
			CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})}
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate.example.com", ClientConfig: config("/mutate"),
			Rules: []admissionregistrationv1.RuleWithOperations{widgetsV1Rule}, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate.example.com", ClientConfig: config("/validate"),
			Rules: []admissionregistrationv1.RuleWithOperations{widgetsV1Rule}, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "both webhooks called on a v1 widget", func() (bool, string) {
		_, err := dyn.Resource(widgetsIn("v1")).Namespace("default").Create(ctx, widgetIn("v1", "probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		mu.Lock()
		defer mu.Unlock()
		return reviews["/mutate probe"] != nil && reviews["/validate probe"] != nil, fmt.Sprint(err)
	})
	got, err := dyn.Resource(widgetsIn("v2")).Namespace("default").Create(ctx, widgetIn("v2", "w"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetAPIVersion() != "example.com/v2" || got.GetLabels()["hooked"] != "yes" {
		t.Fatalf("created %s with labels %v; want example.com/v2 with hooked=yes", got.GetAPIVersion(), got.GetLabels())
	}
	v1 := metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	v2 := metav1.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}
	mu.Lock()
	defer mu.Unlock()
	for _, path := range []string{"/mutate", "/validate"} {
		req := reviews[path+" w"]
		if req == nil {
			t.Fatalf("%s: no review of the v2 widget", path)
		}
		var obj unstructured.Unstructured
		if err := json.Unmarshal(req.Object.Raw, &obj.Object); err != nil {
			t.Fatal(err)
		}
		if req.Kind != v1 || req.Resource.Version != "v1" || req.RequestKind == nil || *req.RequestKind != v2 ||
			req.RequestResource == nil || req.RequestResource.Version != "v2" || obj.GetAPIVersion() != "example.com/v1" {
			t.Errorf("%s: kind %v resource %v requestKind %v requestResource %v object %s; want v1, v1, v2, v2, example.com/v1",
				path, req.Kind, req.Resource, req.RequestKind, req.RequestResource, obj.GetAPIVersion())
		}
		if hooked := obj.GetLabels()["hooked"]; (path == "/validate") != (hooked == "yes") {
			t.Errorf("%s: the object's labels are %v", path, obj.GetLabels())
		}
	}
}
