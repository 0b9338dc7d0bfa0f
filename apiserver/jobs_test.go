package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const jobsPath = "/apis/batch/v1/namespaces/default/jobs"

// jobManifest is a Job whose spec has the given fields before a template
// of one container that never restarts, with extra pod spec fields.
func jobManifest(name, spec, extraPodSpec string) string {
	podSpec := `"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]`
	if extraPodSpec != "" {
		podSpec += "," + extraPodSpec
	}
	return `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"` + name + `"},"spec":{` + spec + `"template":{"spec":{` + podSpec + `}}}}`
}

func TestJobDefaultsAndGeneratedSelector_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	j := ts.createJSON(t, jobsPath, jobManifest("j", "", ""))
	uid, _ := at(t, j, "metadata.uid").(string)
	if uid == "" {
		t.Fatal("no uid")
	}
	generated := `{"batch.kubernetes.io/controller-uid":"` + uid + `","batch.kubernetes.io/job-name":"j","controller-uid":"` + uid + `","job-name":"j"}`
	wantFields(t, j, map[string]string{
		"metadata.generation":           "1",
		"metadata.labels":               generated,
		"spec.parallelism":              "1",
		"spec.completions":              "1",
		"spec.backoffLimit":             "6",
		"spec.completionMode":           `"NonIndexed"`,
		"spec.suspend":                  "false",
		"spec.podReplacementPolicy":     `"TerminatingOrFailed"`,
		"spec.manualSelector":           "false",
		"spec.selector":                 `{"matchLabels":{"batch.kubernetes.io/controller-uid":"` + uid + `"}}`,
		"spec.template.metadata.labels": generated,
		"spec.template.spec.dnsPolicy":  `"ClusterFirst"`,
		"status":                        "{}",
	})

	// Parallelism alone leaves completions unset; a failure policy
	// replaces pods once failed; the Job's own labels stay.
	j = ts.createJSON(t, jobsPath, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"p","labels":{"own":"x"}},"spec":{"parallelism":3,
		"podFailurePolicy":{"rules":[{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]},
		"template":{"metadata":{"labels":{"app":"a"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}}}`)
	wantFields(t, j, map[string]string{
		"metadata.labels":                   `{"own":"x"}`,
		"spec.parallelism":                  "3",
		"spec.completions":                  "",
		"spec.podReplacementPolicy":         `"Failed"`,
		"spec.template.metadata.labels.app": `"a"`,
	})
}

func TestJobValidation_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	nonNeg := "must be greater than or equal to 0"
	tests := []struct {
		name, spec, podSpec string
		causes              []metav1.StatusCause
	}{
		{"restart Always", "", `"restartPolicy":"Always"`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueRequired, "spec.template.spec.restartPolicy", `Required value: valid values: "OnFailure", "Never"`)}},
		{"negative counts", `"parallelism":-1,"completions":-2,"backoffLimit":-3,`, "", []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.parallelism", "Invalid value: -1: "+nonNeg),
			cause(metav1.CauseTypeFieldValueInvalid, "spec.completions", "Invalid value: -2: "+nonNeg),
			cause(metav1.CauseTypeFieldValueInvalid, "spec.backoffLimit", "Invalid value: -3: "+nonNeg)}},
		{"completion mode", `"completionMode":"Sometimes",`, "", []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueNotSupported, "spec.completionMode", `Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"`)}},
		{"per-index limit without Indexed", `"backoffLimitPerIndex":1,`, "", []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.backoffLimitPerIndex", "Invalid value: 1: requires indexed completion mode")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := ts.send(t, "POST", jobsPath, "", jobManifest("bad", tt.spec, tt.podSpec))
			msg, causes := invalid("Job.batch", "bad", tt.causes...)
			wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
		})
	}
}

func TestJobUpdate_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.createJSON(t, jobsPath, jobManifest("j", "", ""))
	const merge = "application/merge-patch+json"
	code, body := ts.send(t, "PATCH", jobsPath+"/j", merge, `{"spec":{"completions":4}}`)
	msg, causes := invalid("Job.batch", "j", cause(metav1.CauseTypeFieldValueInvalid, "spec.completions", "Invalid value: 4: field is immutable"))
	wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)

	code, body = ts.send(t, "PATCH", jobsPath+"/j", merge, `{"spec":{"template":{"spec":{"activeDeadlineSeconds":5}}}}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(body), `spec.template: Invalid value`) {
		t.Errorf("template change: %d %s", code, body)
	}

	code, body = ts.send(t, "PATCH", jobsPath+"/j", merge, `{"spec":{"parallelism":2}}`)
	if code != http.StatusOK || !strings.Contains(string(body), `"generation":2`) {
		t.Errorf("parallelism change: %d %s", code, body)
	}
	code, body = ts.send(t, "PATCH", jobsPath+"/j/status", merge, `{"status":{"succeeded":-1}}`)
	msg, causes = invalid("Job.batch", "j", cause(metav1.CauseTypeFieldValueInvalid, "status.succeeded", "Invalid value: -1: "+"must be greater than or equal to 0"))
	wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
}

func TestJobTable_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.createJSON(t, jobsPath, jobManifest("j", `"parallelism":2,"completions":null,`, ""))
	code, body := ts.send(t, "PATCH", jobsPath+"/j/status", "application/merge-patch+json",
		`{"status":{"succeeded":1,"conditions":[{"type":"Complete","status":"True"}]}}`)
	if code != http.StatusOK {
		t.Fatalf("status: %d %s", code, body)
	}
	req, _ := http.NewRequest("GET", ts.http.URL+jobsPath+"/j", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := ts.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tbl metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&tbl); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, " "); got != "Name Status Completions Duration Age Containers Images Selector" {
		t.Errorf("columns %s", got)
	}
	if len(tbl.Rows) != 1 || tbl.Rows[0].Cells[1] != "Complete" || tbl.Rows[0].Cells[2] != "1/1 of 2" {
		t.Errorf("rows %v", tbl.Rows)
	}
}
