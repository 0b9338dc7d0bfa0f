package apps_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

const deploysPath = "/apis/apps/v1/namespaces/default/deployments"

func TestDeploymentDefaults_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	d := createJSON(t, srv, deploysPath, manifest("Deployment", "d", appSelector, workloadTemplate("")))
	rt.WantFields(t, d, map[string]string{
		"metadata.generation":          "1",
		"spec.replicas":                "1",
		"spec.strategy":                `{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"},"type":"RollingUpdate"}`,
		"spec.revisionHistoryLimit":    "10",
		"spec.progressDeadlineSeconds": "600",
		"spec.template.spec.dnsPolicy": `"ClusterFirst"`,
		"status":                       `{}`,
	})
	// Recreate gets no rolling update parameters; values given are kept.
	d = createJSON(t, srv, deploysPath, manifest("Deployment", "r", appSelector+`"strategy":{"type":"Recreate"},"replicas":0,"revisionHistoryLimit":0,`, workloadTemplate("")))
	rt.WantFields(t, d, map[string]string{"spec.strategy": `{"type":"Recreate"}`, "spec.replicas": "0", "spec.revisionHistoryLimit": "0"})
	// A maxSurge given keeps the default maxUnavailable.
	d = createJSON(t, srv, deploysPath, manifest("Deployment", "s", appSelector+`"strategy":{"rollingUpdate":{"maxSurge":2}},`, workloadTemplate("")))
	rt.WantFields(t, d, map[string]string{"spec.strategy.rollingUpdate": `{"maxSurge":2,"maxUnavailable":"25%"}`})
}

func TestDeploymentCreateValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	inv := func(field, msg string) metav1.StatusCause {
		return rt.Cause(metav1.CauseTypeFieldValueInvalid, field, msg)
	}
	tests := []struct {
		name, spec, template string
		causes               []metav1.StatusCause
	}{
		{"selector mismatch", `"selector":{"matchLabels":{"app":"b"}},`, workloadTemplate(""), []metav1.StatusCause{
			inv("spec.template.metadata.labels", "Invalid value: {\"app\":\"a\"}: `selector` does not match template `labels`")}},
		{"negative counts", appSelector + `"replicas":-1,"revisionHistoryLimit":-2,`, workloadTemplate(""), []metav1.StatusCause{
			inv("spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
			inv("spec.revisionHistoryLimit", "Invalid value: -2: must be greater than or equal to 0")}},
		{"maxUnavailable above 100%", appSelector + `"strategy":{"rollingUpdate":{"maxUnavailable":"150%"}},`, workloadTemplate(""), []metav1.StatusCause{
			inv("spec.strategy.rollingUpdate.maxUnavailable", `Invalid value: "150%": must not be greater than 100%`)}},
		{"both zero", appSelector + `"strategy":{"rollingUpdate":{"maxUnavailable":0,"maxSurge":"0%"}},`, workloadTemplate(""), []metav1.StatusCause{
			inv("spec.strategy.rollingUpdate.maxUnavailable", "Invalid value: 0: may not be 0 when `maxSurge` is 0")}},
		{"recreate with rolling update", appSelector + `"strategy":{"type":"Recreate","rollingUpdate":{"maxSurge":1}},`, workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(causeForbidden, "spec.strategy.rollingUpdate", "Forbidden: may not be specified when strategy `type` is 'Recreate'")}},
		{"deadline not above minReadySeconds", appSelector + `"progressDeadlineSeconds":10,"minReadySeconds":10,`, workloadTemplate(""), []metav1.StatusCause{
			inv("spec.progressDeadlineSeconds", "Invalid value: 10: must be greater than minReadySeconds")}},
		{"template restart policy", appSelector, workloadTemplate(`"activeDeadlineSeconds":5`), []metav1.StatusCause{
			rt.Cause(causeForbidden, "spec.template.spec.activeDeadlineSeconds", "Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported")}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("d%d", i)
			code, body := rt.Do(t, srv, http.MethodPost, deploysPath, manifest("Deployment", name, tt.spec, tt.template), nil)
			rt.WantInvalid(t, code, body, "Deployment.apps", name, tt.causes...)
		})
	}
}

func TestDeploymentUpdateAndStatus_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	createJSON(t, srv, deploysPath, manifest("Deployment", "d", appSelector, workloadTemplate("")))
	patch := func(path, body string, wantCode int) map[string]any {
		t.Helper()
		return patchJSON(t, srv, deploysPath+path, body, wantCode)
	}
	m := patch("/d", `{"spec":{"selector":{"matchLabels":{"app":"a","t":"u"}},"template":{"metadata":{"labels":{"t":"u"}}}}}`, http.StatusUnprocessableEntity)
	rt.WantFields(t, m, map[string]string{"details.causes.[0].field": `"spec.selector"`})
	// Annotations move the generation, as a spec does; labels do not.
	rt.WantFields(t, patch("/d", `{"metadata":{"annotations":{"n":"1"}}}`, http.StatusOK), map[string]string{"metadata.generation": "2"})
	rt.WantFields(t, patch("/d", `{"spec":{"paused":true}}`, http.StatusOK), map[string]string{"metadata.generation": "3"})
	rt.WantFields(t, patch("/d", `{"metadata":{"labels":{"x":"y"}}}`, http.StatusOK), map[string]string{"metadata.generation": "3"})
	// The status subresource changes the status only, checked as kube does.
	m = patch("/d/status", `{"spec":{"replicas":4},"status":{"replicas":2,"readyReplicas":1,"availableReplicas":1,"collisionCount":2}}`, http.StatusOK)
	rt.WantFields(t, m, map[string]string{"spec.replicas": "1", "status.replicas": "2", "metadata.generation": "3"})
	code, body := rt.Do(t, srv, http.MethodPatch, deploysPath+"/d/status", `{"status":{"updatedReplicas":3,"unavailableReplicas":-1,"collisionCount":1}}`, nil)
	rt.WantInvalid(t, code, body, "Deployment.apps", "d",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.unavailableReplicas", "Invalid value: -1: must be greater than or equal to 0"),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.updatedReplicas", "Invalid value: 3: cannot be greater than status.replicas"),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.collisionCount", "Invalid value: 1: cannot be decremented"))
}

func TestDeploymentNameWarning_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	client, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.Config.Host+deploysPath, strings.NewReader(manifest("Deployment", "a.b", appSelector, workloadTemplate(""))))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	const want = `299 - "metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]"`
	if got := resp.Header.Values("Warning"); resp.StatusCode != http.StatusCreated || len(got) != 1 || got[0] != want {
		t.Errorf("create a.b: %d, Warning %q, want [%s]", resp.StatusCode, got, want)
	}
}

// An exported Deployment, status included, applied server-side after a
// status writer has set the status: the status is the object's reset
// field, so the applier neither owns it nor conflicts with the status
// writer, and the stored status stays (B.8).
func TestDeploymentApplyWithStatus_B8(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	createJSON(t, srv, deploysPath+"?fieldManager=creator", manifest("Deployment", "d", appSelector, workloadTemplate("")))
	patchJSON(t, srv, deploysPath+"/d/status?fieldManager=status-writer", `{"status":{"replicas":2,"readyReplicas":1,"observedGeneration":1}}`, http.StatusOK)
	exported := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  labels: {tier: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}}
    spec: {containers: [{name: c, image: i}]}
status:
  replicas: 7
  readyReplicas: 5
  observedGeneration: 1
`
	apply := map[string]string{"Content-Type": "application/apply-patch+yaml"}
	code, body := rt.Do(t, srv, http.MethodPatch, deploysPath+"/d?fieldManager=kubectl&force=false", exported, apply)
	if code != http.StatusOK {
		t.Fatalf("apply with status: %d %s, want 200", code, body)
	}
	d := rt.Object(t, body)
	rt.WantFields(t, d, map[string]string{
		"spec.replicas":        "1",
		"metadata.labels":      `{"tier":"web"}`,
		"status.replicas":      "2",
		"status.readyReplicas": "1",
	})
	owners := map[string]string{}
	for _, e := range d["metadata"].(map[string]any)["managedFields"].([]any) {
		e := e.(map[string]any)
		fields, _ := json.Marshal(e["fieldsV1"])
		owners[fmt.Sprint(e["manager"], " ", e["operation"], " ", e["subresource"])] = string(fields)
	}
	if got := owners["kubectl Apply <nil>"]; got == "" || strings.Contains(got, `"f:status"`) || !strings.Contains(got, `"f:tier"`) {
		t.Errorf("kubectl's Apply entry: got %s, want the spec and labels it applied without f:status (all: %v)", got, owners)
	}
	if got := owners["status-writer Update status"]; !strings.Contains(got, `"f:readyReplicas"`) {
		t.Errorf("status-writer's entry: got %s, want it to keep f:status.f:readyReplicas (all: %v)", got, owners)
	}
	// A second applier that changes the label kubectl owns conflicts on
	// it, and only on it: the status it carries is nobody's.
	second := strings.Replace(exported, "tier: web", "tier: api", 1)
	code, body = rt.Do(t, srv, http.MethodPatch, deploysPath+"/d?fieldManager=other&force=false", second, apply)
	rt.WantFields(t, rt.Object(t, body), map[string]string{
		"code":    "409",
		"message": `"Apply failed with 1 conflict: conflict with \"kubectl\": .metadata.labels.tier"`,
	})
	if code != http.StatusConflict {
		t.Errorf("second apply: %d %s, want 409", code, body)
	}
	// Through the status subresource the spec is reset, and a
	// Deployment's labels: neither changes nor is the applier's.
	viaStatus := strings.NewReplacer("tier: web", "tier: db", "replicas: 1", "replicas: 4", "replicas: 7", "replicas: 2", "readyReplicas: 5", "readyReplicas: 1").Replace(exported)
	code, body = rt.Do(t, srv, http.MethodPatch, deploysPath+"/d/status?fieldManager=status-applier&force=false", viaStatus, apply)
	if code != http.StatusOK {
		t.Fatalf("apply to /status: %d %s, want 200", code, body)
	}
	d = rt.Object(t, body)
	rt.WantFields(t, d, map[string]string{"spec.replicas": "1", "metadata.labels": `{"tier":"web"}`, "status.replicas": "2"})
	for _, e := range d["metadata"].(map[string]any)["managedFields"].([]any) {
		e := e.(map[string]any)
		if fields, _ := json.Marshal(e["fieldsV1"]); e["manager"] == "status-applier" && (strings.Contains(string(fields), `"f:spec"`) || strings.Contains(string(fields), `"f:labels"`)) {
			t.Errorf("status-applier's entry: got %s, want no f:spec nor f:labels", fields)
		}
	}
}
