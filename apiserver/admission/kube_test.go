package admission

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/openapi"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/store/bolt"
)

var configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")

// startDynamic starts the dynamic plugins over a fake clientset holding
// objs (configurations, policies, bindings, namespaces, params).
func startDynamic(t *testing.T, objs ...runtime.Object) *Dynamic {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	client := fake.NewClientset(objs...)
	var params []runtime.Object
	for _, o := range objs {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			cm = cm.DeepCopy()
			cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
			params = append(params, cm)
		}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{configMapsGVR: "ConfigMapList"}, params...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	d, err := NewDynamic()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	err = d.Start(ctx, DynamicConfig{
		Scheme: scheme, Client: withOpenAPI{client}, Informers: informers.NewSharedInformerFactory(client, 0),
		DynamicClient: dyn, RESTMapper: mapper, Defaulter: markDefaulted{},
		Authorizer: authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
			if a.User.Name == "alice" && a.Verb == "approve" {
				return authz.Allow, "", nil
			}
			return authz.NoOpinion, "", nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// withOpenAPI is a fake clientset whose discovery serves an empty OpenAPI
// v3 document, which the mutating policies' type converter asks for.
type withOpenAPI struct{ *fake.Clientset }

func (c withOpenAPI) Discovery() discovery.DiscoveryInterfaces {
	return emptyOpenAPI{c.Clientset.Discovery().(*fakediscovery.FakeDiscovery)}
}

type emptyOpenAPI struct{ *fakediscovery.FakeDiscovery }

// OpenAPIV3 serves the core group's document of a kubegate server, as
// the server's own discovery does.
func (emptyOpenAPI) OpenAPIV3() openapi.Client { return coreOpenAPI{} }

type coreOpenAPI struct{}

func (coreOpenAPI) Paths() (map[string]openapi.GroupVersion, error) {
	return map[string]openapi.GroupVersion{"api/v1": coreOpenAPI{}}, nil
}

func (coreOpenAPI) Schema(string) ([]byte, error) {
	coreOpenAPIOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubegate-openapi")
		if err != nil {
			coreOpenAPIErr = err
			return
		}
		defer os.RemoveAll(dir)
		st, err := bolt.Open(filepath.Join(dir, "state.db"), bolt.Options{NoSync: true})
		if err != nil {
			coreOpenAPIErr = err
			return
		}
		defer st.Close()
		srv, err := apiserver.New(apiserver.Config{Store: st, Resources: registry.Resources(),
			Authenticator: authn.RequestFunc(func(*http.Request) (*authn.Response, bool, error) {
				return &authn.Response{User: authn.User{Name: "admin", Groups: []string{"system:masters"}}}, true, nil
			}),
			Authorizer: authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
				return authz.Allow, "", nil
			})})
		if err != nil {
			coreOpenAPIErr = err
			return
		}
		defer srv.Close()
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi/v3/api/v1", nil))
		coreOpenAPIDoc = rec.Body.Bytes()
	})
	return coreOpenAPIDoc, coreOpenAPIErr
}

func (c coreOpenAPI) ServerRelativeURL() string { return "/openapi/v3/api/v1" }

var (
	coreOpenAPIOnce sync.Once
	coreOpenAPIDoc  []byte
	coreOpenAPIErr  error
)

// markDefaulted is the defaulter of the tests: it marks the config maps
// it defaults.
type markDefaulted struct{}

func (markDefaulted) Default(obj runtime.Object) {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		metav1.SetMetaDataAnnotation(&cm.ObjectMeta, "defaulted", "yes")
	}
}

// hookWarnings collects the warnings of one write, from any goroutine.
type hookWarnings struct {
	mu    sync.Mutex
	texts []string
}

func (w *hookWarnings) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.texts = append(w.texts, text)
}

// write runs the plugins over a as the server's write path does: every
// Admit, again on a reinvocation, then every Validate.
func write(d *Dynamic, a *apiserver.AdmissionAttributes) (*hookWarnings, error) {
	w := &hookWarnings{}
	ctx := warning.WithWarningRecorder(context.Background(), w)
	for pass := 0; pass < 2; pass++ {
		for _, p := range d.Plugins() {
			if err := p.Admit(ctx, a); err != nil {
				return w, err
			}
		}
		if !a.Reinvoke || a.Reinvocation {
			break
		}
		a.Reinvoke, a.Reinvocation = false, true
	}
	for _, p := range d.Plugins() {
		if err := p.(apiserver.AdmissionValidator).Validate(ctx, a); err != nil {
			return w, err
		}
	}
	return w, nil
}

func createConfigMap(cm *corev1.ConfigMap, dry bool) *apiserver.AdmissionAttributes {
	return &apiserver.AdmissionAttributes{Operation: apiserver.Create, Resource: configMapsGVR,
		Kind: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Namespace: cm.Namespace, Name: cm.Name,
		User: authn.User{Name: "alice", Groups: []string{"system:authenticated"}}, Object: cm, DryRun: dry}
}

func configMap(ns, name string, labels map[string]string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: data}
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

var configMapRules = []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
}}}

// matchConfigMaps matches config maps, with the defaults the API server
// gives.
func matchConfigMaps() *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{ResourceRules: configMapRules, NamespaceSelector: &metav1.LabelSelector{},
		ObjectSelector: &metav1.LabelSelector{}, MatchPolicy: ptr.To(admissionregistrationv1.Equivalent)}
}

func vapolicy(name string, mod func(*admissionregistrationv1.ValidatingAdmissionPolicySpec), validations ...admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: matchConfigMaps(),
			Validations:      validations,
		}}
	if mod != nil {
		mod(&p.Spec)
	}
	return p
}

func binding(name, policy string, actions []admissionregistrationv1.ValidationAction, param *admissionregistrationv1.ParamRef) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ValidationActions: actions, ParamRef: param}}
}

var deny = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}

func TestValidatingAdmissionPolicy_D13(t *testing.T) {
	t.Parallel()
	d := startDynamic(t,
		namespace("team", nil),
		configMap("team", "limits", nil, map[string]string{"max": "2"}),
		vapolicy("small", nil, admissionregistrationv1.Validation{Expression: "size(object.data) <= 3", Message: "at most 3 keys"}),
		binding("small", "small", deny, nil),
		vapolicy("warned", nil, admissionregistrationv1.Validation{Expression: "!has(object.data) || !('legacy' in object.data)",
			MessageExpression: "'key legacy is deprecated in ' + object.metadata.name"}),
		binding("warned", "warned", []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}, nil),
		vapolicy("params", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			s.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "limited", Expression: "has(object.metadata.labels) && 'limited' in object.metadata.labels"}}
		}, admissionregistrationv1.Validation{Expression: "size(object.data) <= int(params.data.max)", Reason: ptr.To(metav1.StatusReasonInvalid)}),
		binding("params", "params", deny, &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "team",
			ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}),
		vapolicy("approvers", nil, admissionregistrationv1.Validation{
			Expression: "!has(object.metadata.labels) || !('approved' in object.metadata.labels) || authorizer.group('example.com').resource('widgets').check('approve').allowed()",
			Message:    "only approvers approve"}),
		binding("approvers", "approvers", deny, nil),
	)
	data := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprint("k", i)] = "v"
		}
		return m
	}
	tests := []struct {
		name     string
		cm       *corev1.ConfigMap
		user     string
		wantErr  string
		wantCode int32
		warning  string
	}{
		{name: "allowed", cm: configMap("team", "a", nil, data(3))},
		{name: "denied", cm: configMap("team", "a", nil, data(4)), wantCode: 422,
			wantErr: `configmaps "a" is forbidden: ValidatingAdmissionPolicy 'small' with binding 'small' denied request: at most 3 keys`},
		{name: "warned", cm: configMap("team", "old", nil, map[string]string{"legacy": "1"}),
			warning: "Validation failed for ValidatingAdmissionPolicy 'warned' with binding 'warned': key legacy is deprecated in old"},
		{name: "match condition false", cm: configMap("team", "a", nil, data(3))},
		{name: "params deny", cm: configMap("team", "a", map[string]string{"limited": ""}, data(3)), wantCode: 422,
			wantErr: `configmaps "a" is forbidden: ValidatingAdmissionPolicy 'params' with binding 'params' denied request: failed expression: size(object.data) <= int(params.data.max)`},
		{name: "params allow", cm: configMap("team", "a", map[string]string{"limited": ""}, data(2))},
		{name: "authorizer allows", cm: configMap("team", "a", map[string]string{"approved": ""}, data(1))},
		{name: "authorizer denies", cm: configMap("team", "a", map[string]string{"approved": ""}, data(1)), user: "bob", wantCode: 422,
			wantErr: "only approvers approve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := createConfigMap(tt.cm, false)
			if tt.user != "" {
				a.User.Name = tt.user
			}
			w, err := write(d, a)
			checkErr(t, err, tt.wantCode, tt.wantErr)
			if got := strings.Join(w.texts, "\n"); got != tt.warning {
				t.Errorf("warnings = %q, want %q", got, tt.warning)
			}
		})
	}
}

// checkErr checks that err is a StatusError with code and a message
// containing msg, or nil when code is 0.
func checkErr(t *testing.T, err error, code int32, msg string) {
	t.Helper()
	if code == 0 {
		if err != nil {
			t.Fatalf("err = %v, want none", err)
		}
		return
	}
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v (%T), want a StatusError %d", err, err, code)
	}
	if se.ErrStatus.Code != code || !strings.Contains(se.ErrStatus.Message, msg) {
		t.Fatalf("err = %d %q, want %d containing %q", se.ErrStatus.Code, se.ErrStatus.Message, code, msg)
	}
}

func TestMutatingAdmissionPolicy_D13(t *testing.T) {
	t.Parallel()
	d := startDynamic(t, namespace("team", nil),
		&admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "stamp"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
				ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
				MatchConstraints:   matchConfigMaps(),
				Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
					JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/data/stamped", value: request.userInfo.username}]`}}},
			}},
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "stamp"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "stamp"}},
	)
	cm := configMap("team", "a", nil, map[string]string{"k": "v"})
	if _, err := write(d, createConfigMap(cm, false)); err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["stamped"]; got != "alice" {
		t.Errorf("data.stamped = %q, want alice: the mutation must reach the object written; data = %v", got, cm.Data)
	}
}

// hookServer is an admission webhook over TLS: each path answers its own
// way, and every review it gets is counted by path.
type hookServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func newHookServer(t *testing.T) *hookServer {
	h := &hookServer{calls: map[string]int{}}
	h.Server = httptest.NewTLSServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.Close)
	return h
}

func (h *hookServer) serve(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.calls[r.URL.Path]++
	h.mu.Unlock()
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	switch r.URL.Path {
	case "/deny":
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: 403, Message: "no " + review.Request.Name + " here"}
	case "/label":
		resp.PatchType = ptr.To(admissionv1.PatchTypeJSONPatch)
		resp.Patch = []byte(`[{"op":"add","path":"/metadata/labels/hooked","value":"yes"}]`)
		resp.Warnings = []string{"labelled by the webhook"}
	case "/slow":
		<-r.Context().Done() // answers once the caller gives up
		return
	}
	review.Response = resp
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

func (h *hookServer) count(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[path]
}

func (h *hookServer) client(path string) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(h.URL + path),
		CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.Certificate().Raw})}
}

// downURL is a URL nothing listens at.
func downURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "https://" + addr + "/down"
}

var webhookRules = []admissionregistrationv1.RuleWithOperations{{Operations: configMapRules[0].Operations,
	Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"},
		Scope: ptr.To(admissionregistrationv1.AllScopes)}}}

func validatingHook(name string, cc admissionregistrationv1.WebhookClientConfig, mod func(*admissionregistrationv1.ValidatingWebhook)) *admissionregistrationv1.ValidatingWebhookConfiguration {
	w := admissionregistrationv1.ValidatingWebhook{Name: name + ".example.com", ClientConfig: cc, Rules: webhookRules,
		SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
		FailurePolicy: ptr.To(admissionregistrationv1.Fail), TimeoutSeconds: ptr.To[int32](2),
		NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}, MatchPolicy: ptr.To(admissionregistrationv1.Equivalent)}
	if mod != nil {
		mod(&w)
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{w}}
}

func mutatingHook(name string, cc admissionregistrationv1.WebhookClientConfig, mod func(*admissionregistrationv1.MutatingWebhook)) *admissionregistrationv1.MutatingWebhookConfiguration {
	w := admissionregistrationv1.MutatingWebhook{Name: name + ".example.com", ClientConfig: cc, Rules: webhookRules,
		SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
		FailurePolicy: ptr.To(admissionregistrationv1.Fail), TimeoutSeconds: ptr.To[int32](2),
		NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}, MatchPolicy: ptr.To(admissionregistrationv1.Equivalent)}
	w.ReinvocationPolicy = ptr.To(admissionregistrationv1.NeverReinvocationPolicy)
	if mod != nil {
		mod(&w)
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{w}}
}

func TestWebhooks_D13(t *testing.T) {
	t.Parallel()
	h := newHookServer(t)
	down := admissionregistrationv1.WebhookClientConfig{URL: ptr.To(downURL(t))}
	selected := func(w *admissionregistrationv1.ValidatingWebhook) {
		w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"hooks": "on"}}
		w.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	}
	d := startDynamic(t, namespace("team", map[string]string{"hooks": "on"}), namespace("quiet", nil),
		mutatingHook("label", h.client("/label"), func(w *admissionregistrationv1.MutatingWebhook) {
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"want": "label"}}
		}),
		validatingHook("deny", h.client("/deny"), func(w *admissionregistrationv1.ValidatingWebhook) {
			selected(w)
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "named", Expression: "object.metadata.name.startsWith('bad')"}}
		}),
		validatingHook("down-ignore", down, func(w *admissionregistrationv1.ValidatingWebhook) {
			w.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		}),
		validatingHook("down-fail", down, func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"want": "down"}}
		}),
		validatingHook("slow", h.client("/slow"), func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"want": "slow"}}
			w.TimeoutSeconds = ptr.To[int32](1)
		}),
		validatingHook("effects", h.client("/allow"), func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"want": "effects"}}
			w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		}),
		validatingHook("unknown", h.client("/allow"), func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"want": "unknown"}}
			w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassUnknown)
		}),
		validatingHook("dry-safe", h.client("/allow"), func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"want": "dry-safe"}}
			w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun)
		}),
	)
	tests := []struct {
		name      string
		cm        *corev1.ConfigMap
		dry       bool
		wantCode  int32
		wantErr   string
		wantLabel string
	}{
		{name: "allowed", cm: configMap("team", "good", map[string]string{}, nil)},
		{name: "denied", cm: configMap("team", "bad-1", map[string]string{}, nil), wantCode: 403,
			wantErr: `admission webhook "deny.example.com" denied the request: no bad-1 here`},
		{name: "namespace not selected", cm: configMap("quiet", "bad-1", map[string]string{}, nil)},
		{name: "object not selected", cm: configMap("team", "bad-1", map[string]string{"skip": ""}, nil)},
		{name: "mutated", cm: configMap("team", "good", map[string]string{"want": "label"}, nil), wantLabel: "yes"},
		{name: "mutated then denied", cm: configMap("team", "bad-2", map[string]string{"want": "label"}, nil), wantCode: 403,
			wantErr: "no bad-2 here", wantLabel: "yes"},
		{name: "down fail", cm: configMap("team", "good", map[string]string{"want": "down"}, nil), wantCode: 500,
			wantErr: `failed calling webhook "down-fail.example.com"`},
		{name: "timeout", cm: configMap("team", "good", map[string]string{"want": "slow"}, nil), wantCode: 500,
			wantErr: `failed calling webhook "slow.example.com"`},
		{name: "dry run refused", cm: configMap("team", "good", map[string]string{"want": "effects"}, nil), dry: true, wantCode: 400,
			wantErr: `admission webhook "effects.example.com" does not support dry run`},
		{name: "side effects not dry", cm: configMap("team", "good", map[string]string{"want": "effects"}, nil)},
		{name: "unknown side effects dry run refused", cm: configMap("team", "good", map[string]string{"want": "unknown"}, nil), dry: true, wantCode: 400,
			wantErr: `admission webhook "unknown.example.com" does not support dry run`},
		{name: "none on dry run", cm: configMap("team", "good", map[string]string{"want": "dry-safe"}, nil), dry: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := write(d, createConfigMap(tt.cm, tt.dry))
			checkErr(t, err, tt.wantCode, tt.wantErr)
			if got := tt.cm.Labels["hooked"]; got != tt.wantLabel {
				t.Errorf("label hooked = %q, want %q", got, tt.wantLabel)
			}
			// A patched object is defaulted again, as kube's scheme
			// defaults it.
			if got := tt.cm.Annotations["defaulted"]; got != tt.wantLabel {
				t.Errorf("annotation defaulted = %q, want %q", got, tt.wantLabel)
			}
			if tt.wantLabel != "" && strings.Join(w.texts, "\n") != "labelled by the webhook" {
				t.Errorf("warnings = %q, want the webhook's", w.texts)
			}
		})
	}
}

func TestWebhookReinvocation_D13(t *testing.T) {
	t.Parallel()
	h := newHookServer(t)
	d := startDynamic(t, namespace("team", nil),
		// Configurations run in the order of their names.
		mutatingHook("a-observe", h.client("/observe"), func(w *admissionregistrationv1.MutatingWebhook) {
			w.ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
		}),
		mutatingHook("b-label", h.client("/label"), nil),
	)
	cm := configMap("team", "a", map[string]string{"app": "a"}, nil)
	if _, err := write(d, createConfigMap(cm, false)); err != nil {
		t.Fatal(err)
	}
	if got := h.count("/observe"); got != 2 {
		t.Errorf("calls of the IfNeeded webhook = %d, want 2: a later webhook changed the object", got)
	}
	if got := h.count("/label"); got != 1 {
		t.Errorf("calls of the Never webhook = %d, want 1", got)
	}
}

func TestNotStartedRefuses_D13(t *testing.T) {
	t.Parallel()
	d, err := NewDynamic()
	if err != nil {
		t.Fatal(err)
	}
	_, err = write(d, createConfigMap(configMap("team", "a", nil, nil), false))
	checkErr(t, err, 403, "not yet ready to handle request")
}

func TestKubeAttributesOptions_D13(t *testing.T) {
	t.Parallel()
	opts := &metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}
	a := &apiserver.AdmissionAttributes{Operation: apiserver.Delete, Resource: configMapsGVR, Options: opts, DryRun: true}
	got, ok := KubeAttributes(a).GetOperationOptions().(*metav1.DeleteOptions)
	if !ok || got.Kind != "DeleteOptions" || got.APIVersion != "meta.k8s.io/v1" || got.PropagationPolicy == nil {
		t.Errorf("delete options = %#v, want the request's, with their kind", got)
	}
	if opts.Kind != "" {
		t.Errorf("the request's options were changed: %#v", opts)
	}
	a = &apiserver.AdmissionAttributes{Operation: apiserver.Create, Resource: configMapsGVR, DryRun: true}
	created, ok := KubeAttributes(a).GetOperationOptions().(*metav1.CreateOptions)
	if !ok || created.Kind != "CreateOptions" || len(created.DryRun) != 1 || created.DryRun[0] != metav1.DryRunAll {
		t.Errorf("create options = %#v, want CreateOptions with dryRun All", created)
	}
}
