package server

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/internal/testwait"
)

func TestWebhookServiceResolvesToAReadyEndpoint_D13(t *testing.T) {
	t.Parallel()
	svc := func(name string, typ corev1.ServiceType, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "hooks", Name: name},
			Spec: corev1.ServiceSpec{Type: typ, ClusterIP: "10.96.0.10", Ports: ports, ExternalName: "hooks.example.com"}}
	}
	slice := func(name, svc string, port int32, ready *bool, addr string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "hooks", Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc}}, AddressType: discoveryv1.AddressTypeIPv4,
			Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port)}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}}}
	}
	https := corev1.ServicePort{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)}
	client := fake.NewClientset(
		svc("web", corev1.ServiceTypeClusterIP, https),
		slice("web-a", "web", 8443, ptr.To(false), "10.0.0.1"),
		slice("web-b", "web", 8443, nil, "10.0.0.2"),
		svc("idle", corev1.ServiceTypeClusterIP, https),
		slice("idle-a", "idle", 8443, ptr.To(false), "10.0.0.3"),
		svc("outside", corev1.ServiceTypeExternalName),
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	r := endpointResolver{services: factory.Core().V1().Services().Lister(), slices: factory.Discovery().V1().EndpointSlices().Lister()}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	tests := []struct {
		name    string
		port    int32
		want    string
		wantErr string
	}{
		{name: "web", port: 443, want: "https://10.0.0.2:8443"},
		{name: "web", port: 80, wantErr: `no service port 80 found for service "web"`},
		{name: "idle", port: 443, wantErr: `service "idle" unavailable`},
		{name: "outside", port: 443, want: "https://hooks.example.com:443"},
		{name: "missing", port: 443, wantErr: `service "missing" not found`},
	}
	for _, tt := range tests {
		u, err := r.ResolveEndpoint("hooks", tt.name, tt.port)
		switch {
		case tt.wantErr != "":
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%s:%d: got %v, %v; want error %q", tt.name, tt.port, u, err, tt.wantErr)
			}
		case err != nil || u.String() != tt.want:
			t.Errorf("%s:%d: got %v, %v; want %s", tt.name, tt.port, u, err, tt.want)
		}
	}
}

func TestDynamicAdmissionThroughTheAPI_D13(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cs, err := kubernetes.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.Discovery().ServerResourcesForGroupVersion(admissionregistrationv1.SchemeGroupVersion.String()); err != nil {
		t.Skipf("the server does not serve %s: %v", admissionregistrationv1.SchemeGroupVersion, err)
	}
	rules := []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "one-key"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: rules},
			Validations:      []admissionregistrationv1.Validation{{Expression: "!has(object.data) || size(object.data) <= 1", Message: "one key at most"}},
		}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "one-key"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "one-key",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	two := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "two"}, Data: map[string]string{"a": "1", "b": "2"}}
	want := `configmaps "two" is forbidden: ValidatingAdmissionPolicy 'one-key' with binding 'one-key' denied request: one key at most`
	testwait.For(t, 30*time.Second, "the policy in force", func() (bool, string) {
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, two, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err) && err.Error() == want, fmt.Sprint(err)
	})

	// A mutating webhook by URL: what it adds is stored.
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		var cm corev1.ConfigMap
		_ = json.Unmarshal(review.Request.Object.Raw, &cm)
		patch := `[{"op":"add","path":"/data","value":{"hooked":"yes"}}]`
		if cm.Data != nil {
			patch = `[{"op":"add","path":"/data/hooked","value":"yes"}]`
		}
		pt := admissionv1.PatchTypeJSONPatch
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true, PatchType: &pt, Patch: []byte(patch)}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(&review)
	}))
	defer hook.Close()
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "hooked"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "hooked.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(hook.URL),
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})},
			Rules:                   []admissionregistrationv1.RuleWithOperations{rules[0].RuleWithOperations},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"hook": "yes"}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one", Labels: map[string]string{"hook": "yes"}}}
	testwait.For(t, 30*time.Second, "the webhook in force", func() (bool, string) {
		got, err := cs.CoreV1().ConfigMaps("default").Create(ctx, one, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && got.Data["hooked"] == "yes", fmt.Sprint(got, err)
	})
	got, err := cs.CoreV1().ConfigMaps("default").Create(ctx, one, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "one", metav1.GetOptions{})
	if err != nil || got.Data["hooked"] != "yes" || stored.Data["hooked"] != "yes" {
		t.Fatalf("created %v, stored %v, %v: want data hooked=yes in both", got.Data, stored.Data, err)
	}
	// The webhook's key is one more: the policy, validating after it,
	// refuses.
	one.Name, one.Data = "one-more", map[string]string{"a": "1"}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, one, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("create with a key the webhook adds to: got %v, want the policy's 422", err)
	}
}
