package apps_test

import (
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

const dsPath = "/apis/apps/v1/namespaces/default/daemonsets"

func TestDaemonSetDefaults_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	d := createJSON(t, srv, dsPath, manifest("DaemonSet", "d", appSelector, workloadTemplate("")))
	rt.WantFields(t, d, map[string]string{
		"metadata.generation":          "1",
		"metadata.annotations":         `{"deprecated.daemonset.template.generation":"1"}`,
		"spec.updateStrategy":          `{"rollingUpdate":{"maxSurge":0,"maxUnavailable":1},"type":"RollingUpdate"}`,
		"spec.revisionHistoryLimit":    "10",
		"spec.template.spec.dnsPolicy": `"ClusterFirst"`,
		"status":                       `{"currentNumberScheduled":0,"desiredNumberScheduled":0,"numberMisscheduled":0,"numberReady":0}`,
	})
	// OnDelete gets no rolling update parameters.
	d = createJSON(t, srv, dsPath, manifest("DaemonSet", "o", appSelector+`"updateStrategy":{"type":"OnDelete"},`, workloadTemplate("")))
	rt.WantFields(t, d, map[string]string{"spec.updateStrategy": `{"type":"OnDelete"}`})
}

func TestDaemonSetCreateValidation_D5(t *testing.T) {
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
		// A missing selector selects nothing: the template's labels do
		// not match it, and nothing else is said of it.
		{"no selector", "", workloadTemplate(""), []metav1.StatusCause{
			inv("spec.template.metadata.labels", "Invalid value: {\"app\":\"a\"}: `selector` does not match template `labels`")}},
		{"surge and unavailable", appSelector + `"updateStrategy":{"rollingUpdate":{"maxSurge":1}},`, workloadTemplate(""), []metav1.StatusCause{
			inv("spec.updateStrategy.rollingUpdate.maxSurge", "Invalid value: 1: may not be set when maxUnavailable is non-zero")}},
		{"both zero", appSelector + `"updateStrategy":{"rollingUpdate":{"maxUnavailable":0}},`, workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.updateStrategy.rollingUpdate.maxUnavailable", "Required value: cannot be 0 when maxSurge is 0")}},
		{"template restart policy", appSelector, workloadTemplate(`"activeDeadlineSeconds":5`), []metav1.StatusCause{
			rt.Cause(causeForbidden, "spec.template.spec.activeDeadlineSeconds", "Forbidden: activeDeadlineSeconds in DaemonSet is not Supported")}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("d%d", i)
			code, body := rt.Do(t, srv, http.MethodPost, dsPath, manifest("DaemonSet", name, tt.spec, tt.template), nil)
			rt.WantInvalid(t, code, body, "DaemonSet.apps", name, tt.causes...)
		})
	}
}

func TestDaemonSetUpdateAndStatus_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	createJSON(t, srv, dsPath, manifest("DaemonSet", "d", appSelector, workloadTemplate("")))
	patch := func(path, body string, wantCode int) map[string]any {
		t.Helper()
		return patchJSON(t, srv, dsPath+path, body, wantCode)
	}
	m := patch("/d", `{"spec":{"selector":{"matchLabels":{"app":"a","t":"u"}},"template":{"metadata":{"labels":{"t":"u"}}}}}`, http.StatusUnprocessableEntity)
	rt.WantFields(t, m, map[string]string{"details.causes.[0].field": `"spec.selector"`})
	// The spec moves the generation; the template also its own.
	m = patch("/d", `{"spec":{"minReadySeconds":3}}`, http.StatusOK)
	rt.WantFields(t, m, map[string]string{"metadata.generation": "2", "metadata.annotations": `{"deprecated.daemonset.template.generation":"1"}`})
	m = patch("/d", `{"spec":{"template":{"metadata":{"annotations":{"x":"y"}}}}}`, http.StatusOK)
	rt.WantFields(t, m, map[string]string{"metadata.generation": "3", "metadata.annotations": `{"deprecated.daemonset.template.generation":"2"}`})
	m = patch("/d", `{"metadata":{"annotations":{"n":"1"}}}`, http.StatusOK)
	rt.WantFields(t, m, map[string]string{"metadata.generation": "3"})
	// The status subresource changes the status only, checked as kube does.
	m = patch("/d/status", `{"spec":{"minReadySeconds":9},"status":{"desiredNumberScheduled":2,"collisionCount":2}}`, http.StatusOK)
	rt.WantFields(t, m, map[string]string{"spec.minReadySeconds": "3", "status.desiredNumberScheduled": "2", "metadata.generation": "3"})
	code, body := rt.Do(t, srv, http.MethodPatch, dsPath+"/d/status", `{"status":{"numberReady":-1,"collisionCount":1}}`, nil)
	rt.WantInvalid(t, code, body, "DaemonSet.apps", "d",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.numberReady", "Invalid value: -1: must be greater than or equal to 0"),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.collisionCount", "Invalid value: 1: cannot be decremented"))
}
