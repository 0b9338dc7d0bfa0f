package batch_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The answers these tests expect are kube-apiserver v1.37.2's (D.5).

// createJSON posts the JSON object to path on srv and returns what the
// server created.
func createJSON(t *testing.T, srv *apiservertest.Server, path, obj string) map[string]any {
	t.Helper()
	code, body := rt.Do(t, srv, http.MethodPost, path, obj, nil)
	if code != http.StatusCreated {
		t.Fatalf("POST %s: %d %s", path, code, body)
	}
	return rt.Object(t, body)
}

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
	srv := apiservertest.Start(t)
	j := createJSON(t, srv, jobsPath, jobManifest("j", "", ""))
	uid, _ := j["metadata"].(map[string]any)["uid"].(string)
	if uid == "" {
		t.Fatal("no uid")
	}
	generated := `{"batch.kubernetes.io/controller-uid":"` + uid + `","batch.kubernetes.io/job-name":"j","controller-uid":"` + uid + `","job-name":"j"}`
	rt.WantFields(t, j, map[string]string{
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
	j = createJSON(t, srv, jobsPath, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"p","labels":{"own":"x"}},"spec":{"parallelism":3,
		"podFailurePolicy":{"rules":[{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]},
		"template":{"metadata":{"labels":{"app":"a"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}}}`)
	rt.WantFields(t, j, map[string]string{
		"metadata.labels":                   `{"own":"x"}`,
		"spec.parallelism":                  "3",
		"spec.completions":                  "",
		"spec.podReplacementPolicy":         `"Failed"`,
		"spec.template.metadata.labels.app": `"a"`,
	})
}

func TestJobValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	nonNeg := "must be greater than or equal to 0"
	tests := []struct {
		name, spec, podSpec string
		causes              []metav1.StatusCause
	}{
		{"restart Always", "", `"restartPolicy":"Always"`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.template.spec.restartPolicy", `Required value: valid values: "OnFailure", "Never"`)}},
		{"negative counts", `"parallelism":-1,"completions":-2,"backoffLimit":-3,`, "", []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.parallelism", "Invalid value: -1: "+nonNeg),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.completions", "Invalid value: -2: "+nonNeg),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.backoffLimit", "Invalid value: -3: "+nonNeg)}},
		{"completion mode", `"completionMode":"Sometimes",`, "", []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.completionMode", `Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"`)}},
		{"per-index limit without Indexed", `"backoffLimitPerIndex":1,`, "", []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.backoffLimitPerIndex", "Invalid value: 1: requires indexed completion mode")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := rt.Do(t, srv, http.MethodPost, jobsPath, jobManifest("bad", tt.spec, tt.podSpec), nil)
			rt.WantInvalid(t, code, body, "Job.batch", "bad", tt.causes...)
		})
	}
}

func TestJobUpdate_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	createJSON(t, srv, jobsPath, jobManifest("j", "", ""))
	code, body := rt.Do(t, srv, http.MethodPatch, jobsPath+"/j", `{"spec":{"completions":4}}`, nil)
	rt.WantInvalid(t, code, body, "Job.batch", "j", rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.completions", "Invalid value: 4: field is immutable"))

	code, body = rt.Do(t, srv, http.MethodPatch, jobsPath+"/j", `{"spec":{"template":{"spec":{"activeDeadlineSeconds":5}}}}`, nil)
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(body), `spec.template: Invalid value`) {
		t.Errorf("template change: %d %s", code, body)
	}

	code, body = rt.Do(t, srv, http.MethodPatch, jobsPath+"/j", `{"spec":{"parallelism":2}}`, nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"generation":2`) {
		t.Errorf("parallelism change: %d %s", code, body)
	}
	code, body = rt.Do(t, srv, http.MethodPatch, jobsPath+"/j/status", `{"status":{"succeeded":-1}}`, nil)
	rt.WantInvalid(t, code, body, "Job.batch", "j", rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.succeeded", "Invalid value: -1: "+"must be greater than or equal to 0"))
}

func TestJobTable_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	createJSON(t, srv, jobsPath, jobManifest("j", `"parallelism":2,"completions":null,`, ""))
	code, body := rt.Do(t, srv, http.MethodPatch, jobsPath+"/j/status", `{"status":{"succeeded":1,"conditions":[{"type":"Complete","status":"True"}]}}`, nil)
	if code != http.StatusOK {
		t.Fatalf("status: %d %s", code, body)
	}
	code, body = rt.Do(t, srv, http.MethodGet, jobsPath+"/j", "", map[string]string{"Accept": rt.TableAccept})
	var tbl metav1.Table
	if err := json.Unmarshal(body, &tbl); code != http.StatusOK || err != nil {
		t.Fatalf("table: %d %s", code, body)
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
