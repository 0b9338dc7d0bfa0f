package core_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The messages are kube-apiserver v1.37.2's ValidateResourceQuota's (D.14).
func TestResourceQuotaValidation_D14(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	tests := []struct {
		name, spec string
		causes     []metav1.StatusCause
	}{
		{"unknown resource", `"hard":{"widgets":"1"}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.hard[widgets]", `Invalid value: "widgets": must be a standard resource type or fully qualified`),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.hard[widgets]", `Invalid value: "widgets": must be a standard resource for quota`)}},
		{"storage is not a quota resource", `"hard":{"storage":"1Gi"}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.hard[storage]", `Invalid value: "storage": must be a standard resource for quota`)}},
		{"negative", `"hard":{"cpu":"-1"}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.hard[cpu]", `Invalid value: "-1": must be greater than or equal to 0`)}},
		{"fractional count", `"hard":{"pods":"1500m"}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.hard[pods]", `Invalid value: "1500m": must be an integer`)}},
		{"scopes unfit, unknown and conflicting", `"hard":{"requests.cpu":"1","services":"2"},"scopes":["BestEffort","NotBestEffort","Sometimes"]`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.scopes", `Invalid value: ["BestEffort","NotBestEffort","Sometimes"]: unsupported scope applied to resource`),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.scopes", `Invalid value: ["BestEffort","NotBestEffort","Sometimes"]: unsupported scope`),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.scopes", `Invalid value: ["BestEffort","NotBestEffort","Sometimes"]: conflicting scopes`)}},
		{"scope selector operators and values", `"hard":{"pods":"1"},"scopeSelector":{"matchExpressions":[{"scopeName":"Terminating","operator":"In","values":["x"]},{"scopeName":"PriorityClass","operator":"In"}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.scopeSelector.matchExpressions.operator", `Invalid value: "In": must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity`),
			rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.scopeSelector.matchExpressions.values", "Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector")}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("q%d", i)
			code, body := rt.Do(t, srv, "POST", "/api/v1/namespaces/default/resourcequotas", quotaJSON(name, tt.spec), nil)
			rt.WantInvalid(t, code, body, "ResourceQuota", name, tt.causes...)
		})
	}
}

func quotaJSON(name, spec string) string {
	return `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
}

// A create drops the status, an update of the quota keeps it, the status
// subresource keeps the spec, the scopes do not change, and a request
// quota above its limit quota is warned about (D.14).
func TestResourceQuotaStatusAndScopes_D14(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	const path = "/api/v1/namespaces/default/resourcequotas"
	code, hdr, body := rt.DoHeader(t, srv, "POST", path,
		`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"requests.cpu":"2","limits.cpu":"1"},"scopes":["NotTerminating"]},"status":{"hard":{"pods":"1"}}}`, nil)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	if got, want := hdr.Get("Warning"), `299 - "ResourceQuota requests.cpu (2) should be less than limits.cpu (1)"`; got != want {
		t.Errorf("warning: got %q, want %q", got, want)
	}
	if q := decodeQuota(t, body); q.Status.Hard != nil {
		t.Errorf("create kept status %v", q.Status)
	}
	code, body = rt.Do(t, srv, "PATCH", path+"/q/status", `{"spec":{"hard":{"pods":"9"}},"status":{"hard":{"requests.cpu":"2"},"used":{"requests.cpu":"500m"}}}`, nil)
	q := decodeQuota(t, body)
	if _, specChanged := q.Spec.Hard[corev1.ResourcePods]; code != http.StatusOK || specChanged || q.Status.Used.Name("requests.cpu", "").String() != "500m" {
		t.Fatalf("status patch: %d %s", code, body)
	}
	code, body = rt.Do(t, srv, "PATCH", path+"/q", `{"spec":{"hard":{"pods":"3"}},"status":{"used":{"requests.cpu":"9"}}}`, nil)
	if q := decodeQuota(t, body); code != http.StatusOK || q.Status.Used.Name("requests.cpu", "").String() != "500m" {
		t.Fatalf("spec patch changed the status: %d %s", code, body)
	}
	code, body = rt.Do(t, srv, "PATCH", path+"/q", `{"spec":{"scopes":["Terminating"]}}`, nil)
	rt.WantInvalid(t, code, body, "ResourceQuota", "q",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.scopes", `Invalid value: ["Terminating"]: field is immutable`))
	rows := rt.Rows(t, srv, path)
	if len(rows) != 1 || !strings.Contains(rows[0], `"requests.cpu: 500m/2"`) {
		t.Errorf("table rows: %v", rows)
	}
}

func decodeQuota(t *testing.T, body []byte) *corev1.ResourceQuota {
	t.Helper()
	var q corev1.ResourceQuota
	if err := json.Unmarshal(body, &q); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return &q
}

// PodTemplates: the pod spec defaults, a generation that counts changes
// of .template only, no ephemeral containers, and kube's warning about a
// negative grace period (D.14).
func TestPodTemplates_D14(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	const path = "/api/v1/namespaces/default/podtemplates"
	tmpl := func(name, extra string) string {
		return `{"apiVersion":"v1","kind":"PodTemplate","metadata":{"name":"` + name + `"},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"img"}]` + extra + `}}}`
	}
	code, body := rt.Do(t, srv, "POST", path, tmpl("t", ""), nil)
	var pt corev1.PodTemplate
	if err := json.Unmarshal(body, &pt); code != http.StatusCreated || err != nil {
		t.Fatalf("create: %d %s", code, body)
	}
	if pt.Generation != 1 || pt.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || pt.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("defaults: generation %d, spec %+v", pt.Generation, pt.Template.Spec)
	}
	for _, step := range []struct {
		patch string
		gen   int64
	}{{`{"metadata":{"labels":{"x":"y"}}}`, 1}, {`{"template":{"metadata":{"labels":{"tier":"web"}}}}`, 2}} {
		_, body = rt.Do(t, srv, "PATCH", path+"/t", step.patch, nil)
		if err := json.Unmarshal(body, &pt); err != nil || pt.Generation != step.gen {
			t.Errorf("after %s: generation %d, want %d", step.patch, pt.Generation, step.gen)
		}
	}
	code, body = rt.Do(t, srv, "POST", path, tmpl("e", `,"ephemeralContainers":[{"name":"d","image":"busybox"}]`), nil)
	rt.WantInvalid(t, code, body, "PodTemplate", "e",
		rt.Cause(metav1.CauseTypeForbidden, "template.spec.ephemeralContainers", "Forbidden: ephemeral containers not allowed in pod template"))
	code, hdr, body := rt.DoHeader(t, srv, "POST", path, tmpl("g", `,"terminationGracePeriodSeconds":-5`), nil)
	if want := `299 - "template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1"`; code != http.StatusCreated || hdr.Get("Warning") != want {
		t.Errorf("negative grace: %d %q %s", code, hdr.Get("Warning"), body)
	}
	if got, want := rt.Rows(t, srv, path+"/t"), []string{`["t","c","img","app=a,tier=web"]`}; !reflect.DeepEqual(got, want) {
		t.Errorf("table: got %v, want %v", got, want)
	}
}

// ComponentStatuses are read only, deprecated, and name the store as
// etcd-0, healthy while it answers (D.14).
func TestComponentStatuses_D14(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	code, hdr, body := rt.DoHeader(t, srv, "GET", "/api/v1/componentstatuses/etcd-0", "", nil)
	var cs corev1.ComponentStatus
	if err := json.Unmarshal(body, &cs); code != http.StatusOK || err != nil || len(cs.Conditions) != 1 || cs.Conditions[0].Status != corev1.ConditionTrue || cs.Conditions[0].Message != "ok" {
		t.Fatalf("etcd-0: %d %s", code, body)
	}
	if got, want := hdr.Get("Warning"), `299 - "v1 ComponentStatus is deprecated in v1.19+"`; got != want {
		t.Errorf("warning: got %q, want %q", got, want)
	}
	if code, _ := rt.Do(t, srv, "GET", "/api/v1/componentstatuses/missing", "", nil); code != http.StatusNotFound {
		t.Errorf("missing: %d, want 404", code)
	}
	if code, _ := rt.Do(t, srv, "DELETE", "/api/v1/componentstatuses/etcd-0", "", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("delete: %d, want 405", code)
	}
	code, body = rt.Do(t, srv, "GET", "/api/v1/componentstatuses?fieldSelector=metadata.name%3Detcd-0", "", nil)
	var list corev1.ComponentStatusList
	if err := json.Unmarshal(body, &list); code != http.StatusOK || err != nil || len(list.Items) != 1 || list.Items[0].Name != "etcd-0" {
		t.Errorf("list: %d %s", code, body)
	}
}

// The ResourceQuota admission plugin: a quota whose status does not yet
// count what it limits refuses the write; once it does, a pod is charged
// to status.used and one beyond status.hard is refused with kube's 403; a
// dry run charges nothing; object counts are charged too (D.14).
func TestResourceQuotaAdmission_D14(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	const ns = "/api/v1/namespaces/default"
	podJSON := func(name, cpu string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"automountServiceAccountToken":false,"containers":[{"name":"c","image":"img",` +
			`"resources":{"requests":{"cpu":"` + cpu + `"},"limits":{"cpu":"` + cpu + `"}}}]}}`
	}
	rt.Create(t, srv, [2]string{ns + "/resourcequotas", quotaJSON("compute", `"hard":{"pods":"2","requests.cpu":"1","configmaps":"1"}`)})
	// no status.hard yet: the quota limits nothing
	if code, body := rt.Do(t, srv, "POST", ns+"/pods", podJSON("p0", "100m"), nil); code != http.StatusCreated {
		t.Fatalf("p0: %d %s", code, body)
	}
	rt.Do(t, srv, "PATCH", ns+"/resourcequotas/compute/status", `{"status":{"hard":{"pods":"2","requests.cpu":"1","configmaps":"1"}}}`, nil)
	code, body := rt.Do(t, srv, "POST", ns+"/pods", podJSON("p00", "100m"), nil)
	wantForbidden(t, code, body, `pods "p00" is forbidden: status unknown for quota: compute, resources: pods,requests.cpu`)

	code, body = rt.Do(t, srv, "PATCH", ns+"/resourcequotas/compute/status",
		`{"status":{"hard":{"pods":"2","requests.cpu":"1","configmaps":"1"},"used":{"pods":"0","requests.cpu":"0","configmaps":"0"}}}`, nil)
	if code != http.StatusOK {
		t.Fatalf("status: %d %s", code, body)
	}
	if code, body = rt.Do(t, srv, "POST", ns+"/pods", podJSON("p1", "600m"), nil); code != http.StatusCreated {
		t.Fatalf("p1: %d %s", code, body)
	}
	if code, body = rt.Do(t, srv, "POST", ns+"/pods?dryRun=All", podJSON("p2", "100m"), nil); code != http.StatusCreated {
		t.Fatalf("dry run: %d %s", code, body)
	}
	code, body = rt.Do(t, srv, "POST", ns+"/pods", podJSON("p3", "500m"), nil)
	wantForbidden(t, code, body, `pods "p3" is forbidden: exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=600m, limited: requests.cpu=1`)
	code, body = rt.Do(t, srv, "POST", ns+"/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p4"},"spec":{"automountServiceAccountToken":false,"containers":[{"name":"c","image":"img"}]}}`, nil)
	wantForbidden(t, code, body, `pods "p4" is forbidden: failed quota: compute: must specify requests.cpu for: c`)

	rt.Create(t, srv, [2]string{ns + "/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}`})
	code, body = rt.Do(t, srv, "POST", ns+"/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c2"}}`, nil)
	wantForbidden(t, code, body, `configmaps "c2" is forbidden: exceeded quota: compute, requested: configmaps=1, used: configmaps=1, limited: configmaps=1`)

	_, body = rt.Do(t, srv, "GET", ns+"/resourcequotas/compute", "", nil)
	q := decodeQuota(t, body)
	for name, want := range map[corev1.ResourceName]string{"pods": "1", "requests.cpu": "600m", "configmaps": "1"} {
		if got := q.Status.Used.Name(name, ""); got.String() != want {
			t.Errorf("used %s: got %s, want %s", name, got.String(), want)
		}
	}
	if n := len(q.ManagedFields); n == 0 || q.ManagedFields[n-1].Manager != "kube-apiserver" || q.ManagedFields[n-1].Subresource != "status" {
		t.Errorf("managedFields: %+v", q.ManagedFields)
	}
}

func wantForbidden(t *testing.T, code int, body []byte, message string) {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); code != http.StatusForbidden || err != nil || st.Message != message {
		t.Errorf("got %d %s, want 403 %q", code, body, message)
	}
}
