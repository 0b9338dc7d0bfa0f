package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const dsPath = "/apis/apps/v1/namespaces/default/daemonsets"

func TestDaemonSetDefaults_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	d := ts.createJSON(t, dsPath, manifest("DaemonSet", "d", appSelector, workloadTemplate("")))
	wantFields(t, d, map[string]string{
		"metadata.generation":          "1",
		"metadata.annotations":         `{"deprecated.daemonset.template.generation":"1"}`,
		"spec.updateStrategy":          `{"rollingUpdate":{"maxSurge":0,"maxUnavailable":1},"type":"RollingUpdate"}`,
		"spec.revisionHistoryLimit":    "10",
		"spec.template.spec.dnsPolicy": `"ClusterFirst"`,
		"status":                       `{"currentNumberScheduled":0,"desiredNumberScheduled":0,"numberMisscheduled":0,"numberReady":0}`,
	})
	// OnDelete gets no rolling update parameters.
	d = ts.createJSON(t, dsPath, manifest("DaemonSet", "o", appSelector+`"updateStrategy":{"type":"OnDelete"},`, workloadTemplate("")))
	wantFields(t, d, map[string]string{"spec.updateStrategy": `{"type":"OnDelete"}`})
}

func TestDaemonSetCreateValidation_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	inv := func(field, msg string) metav1.StatusCause {
		return cause(metav1.CauseTypeFieldValueInvalid, field, msg)
	}
	tests := []struct {
		name, spec, template string
		causes               []metav1.StatusCause
	}{
		{"selector mismatch", `"selector":{"matchLabels":{"app":"b"}},`, workloadTemplate(""), []metav1.StatusCause{
			inv("spec.template.metadata.labels", "Invalid value: {\"app\":\"a\"}: `selector` does not match template `labels`")}},
		{"surge and unavailable", appSelector + `"updateStrategy":{"rollingUpdate":{"maxSurge":1}},`, workloadTemplate(""), []metav1.StatusCause{
			inv("spec.updateStrategy.rollingUpdate.maxSurge", "Invalid value: 1: may not be set when maxUnavailable is non-zero")}},
		{"both zero", appSelector + `"updateStrategy":{"rollingUpdate":{"maxUnavailable":0}},`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueRequired, "spec.updateStrategy.rollingUpdate.maxUnavailable", "Required value: cannot be 0 when maxSurge is 0")}},
		{"template restart policy", appSelector, workloadTemplate(`"activeDeadlineSeconds":5`), []metav1.StatusCause{
			cause(causeForbidden, "spec.template.spec.activeDeadlineSeconds", "Forbidden: activeDeadlineSeconds in DaemonSet is not Supported")}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("d%d", i)
			code, body := ts.send(t, "POST", dsPath, "", manifest("DaemonSet", name, tt.spec, tt.template))
			msg, causes := invalid("DaemonSet.apps", name, tt.causes...)
			wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
		})
	}
}

func TestDaemonSetUpdateAndStatus_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.createJSON(t, dsPath, manifest("DaemonSet", "d", appSelector, workloadTemplate("")))
	const merge = "application/merge-patch+json"
	patch := func(path, body string, wantCode int) map[string]any {
		t.Helper()
		code, b := ts.send(t, "PATCH", dsPath+path, merge, body)
		if code != wantCode {
			t.Fatalf("PATCH %s %s: %d %s", path, body, code, b)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := patch("/d", `{"spec":{"selector":{"matchLabels":{"app":"a","t":"u"}},"template":{"metadata":{"labels":{"t":"u"}}}}}`, http.StatusUnprocessableEntity)
	wantFields(t, m, map[string]string{"details.causes.[0].field": `"spec.selector"`})
	// The spec moves the generation; the template also its own.
	m = patch("/d", `{"spec":{"minReadySeconds":3}}`, http.StatusOK)
	wantFields(t, m, map[string]string{"metadata.generation": "2", "metadata.annotations": `{"deprecated.daemonset.template.generation":"1"}`})
	m = patch("/d", `{"spec":{"template":{"metadata":{"annotations":{"x":"y"}}}}}`, http.StatusOK)
	wantFields(t, m, map[string]string{"metadata.generation": "3", "metadata.annotations": `{"deprecated.daemonset.template.generation":"2"}`})
	m = patch("/d", `{"metadata":{"annotations":{"n":"1"}}}`, http.StatusOK)
	wantFields(t, m, map[string]string{"metadata.generation": "3"})
	// The status subresource changes the status only, checked as kube does.
	m = patch("/d/status", `{"spec":{"minReadySeconds":9},"status":{"desiredNumberScheduled":2,"collisionCount":2}}`, http.StatusOK)
	wantFields(t, m, map[string]string{"spec.minReadySeconds": "3", "status.desiredNumberScheduled": "2", "metadata.generation": "3"})
	code, body := ts.send(t, "PATCH", dsPath+"/d/status", merge, `{"status":{"numberReady":-1,"collisionCount":1}}`)
	msg, causes := invalid("DaemonSet.apps", "d",
		cause(metav1.CauseTypeFieldValueInvalid, "status.numberReady", "Invalid value: -1: must be greater than or equal to 0"),
		cause(metav1.CauseTypeFieldValueInvalid, "status.collisionCount", "Invalid value: 1: cannot be decremented"))
	wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
}
