package batch_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

const cronJobsPath = "/apis/batch/v1/namespaces/default/cronjobs"

// cronJobManifest is a CronJob with the given spec fields before a job
// template of one container restarted on failure, whose spec has jobSpec
// before its template.
func cronJobManifest(name, spec, jobSpec string) string {
	return `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"` + name + `"},"spec":{` + spec + `"jobTemplate":{"spec":{` + jobSpec +
		`"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"i"}]}}}}}}`
}

func TestCronJobDefaults_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	cj := createJSON(t, srv, cronJobsPath, cronJobManifest("cj", `"schedule":"@hourly",`, ""))
	rt.WantFields(t, cj, map[string]string{
		"metadata.generation":             "1",
		"spec.concurrencyPolicy":          `"Allow"`,
		"spec.suspend":                    "false",
		"spec.successfulJobsHistoryLimit": "3",
		"spec.failedJobsHistoryLimit":     "1",
		// A Job's defaults and generated selector are not the template's.
		"spec.jobTemplate.spec.parallelism":                 "",
		"spec.jobTemplate.spec.selector":                    "",
		"spec.jobTemplate.spec.template.spec.schedulerName": `"default-scheduler"`,
	})
}

func TestCronJobValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	tests := []struct {
		name, spec, jobSpec string
		causes              []metav1.StatusCause
	}{
		{"no schedule", "", "", []metav1.StatusCause{rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.schedule", "Required value")}},
		{"bad schedule", `"schedule":"every minute",`, "", []metav1.StatusCause{rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.schedule",
			`Invalid value: "every minute": expected exactly 5 fields, found 2: [every minute]`)}},
		{"TZ in schedule", `"schedule":"TZ=UTC 0 * * * *",`, "", []metav1.StatusCause{rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.schedule",
			`Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`)}},
		{"policies and limits", `"schedule":"@daily","concurrencyPolicy":"Sometimes","successfulJobsHistoryLimit":-1,`, `"parallelism":-1,`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.concurrencyPolicy", `Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"`),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.jobTemplate.spec.parallelism", "Invalid value: -1: must be greater than or equal to 0"),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.successfulJobsHistoryLimit", "Invalid value: -1: must be greater than or equal to 0")}},
		{"manual selector", `"schedule":"@daily",`, `"manualSelector":true,`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.jobTemplate.spec.manualSelector", `Unsupported value: true: supported values: "nil", "false"`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := rt.Do(t, srv, http.MethodPost, cronJobsPath, cronJobManifest("bad", tt.spec, tt.jobSpec), nil)
			rt.WantInvalid(t, code, body, "CronJob.batch", "bad", tt.causes...)
		})
	}
}
