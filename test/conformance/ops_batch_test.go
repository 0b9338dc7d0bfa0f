package conformance

// batchOps are the operations on batch/v1 Jobs: stored with kube's
// defaults, generated selector and labels, and validation; no job
// controller runs next to either server.
func batchOps() []op {
	const jobs = "/apis/batch/v1/namespaces/" + testNS + "/jobs"
	job := func(name, spec, extraPodSpec string) string {
		podSpec := `"restartPolicy":"Never","containers":[{"name":"app","image":"registry.example/app:1"}]`
		if extraPodSpec != "" {
			podSpec += "," + extraPodSpec
		}
		return `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"` + name + `"},"spec":{` + spec + `"template":{"spec":{` + podSpec + `}}}}`
	}
	const cronJobs = "/apis/batch/v1/namespaces/" + testNS + "/cronjobs"
	cronJob := func(name, spec, jobSpec string) string {
		return `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"` + name + `"},"spec":{` + spec + `"jobTemplate":{"spec":{` + jobSpec +
			`"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"app","image":"registry.example/app:1"}]}}}}}}`
	}
	return []op{
		{name: "job/create", method: "POST", path: jobs, body: job("job1", "", "")},
		{name: "job/get", method: "GET", path: jobs + "/job1"},
		{name: "job/create-with-labels", method: "POST", path: jobs, body: `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"job2"},"spec":{"parallelism":3,
"template":{"metadata":{"labels":{"app":"batch"}},"spec":{"restartPolicy":"OnFailure","containers":[{"name":"app","image":"registry.example/app:1"}]}}}}`},
		{name: "job/create-restart-always", method: "POST", path: jobs, body: job("bad", "", `"restartPolicy":"Always"`)},
		{name: "job/create-restart-unset", method: "POST", path: jobs, body: `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"bad"},"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example/app:1"}]}}}}`},
		{name: "job/create-negative-counts", method: "POST", path: jobs, body: job("bad", `"parallelism":-1,"completions":-2,"backoffLimit":-3,`, "")},
		{name: "job/create-bad-completion-mode", method: "POST", path: jobs, body: job("bad", `"completionMode":"Sometimes",`, "")},
		{name: "job/create-negative-grace", method: "POST", path: jobs, body: job("graceless", "", `"terminationGracePeriodSeconds":-5`)},
		{name: "job/create-dotted-name", method: "POST", path: jobs, body: job("job.dotted", "", "")},
		{name: "job/update-template", method: "PATCH", path: jobs + "/job1", contentType: strategicPatch,
			body: `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example/app:2"}]}}}}`},
		{name: "job/update-completions", method: "PATCH", path: jobs + "/job1", contentType: mergePatch, body: `{"spec":{"completions":4}}`},
		{name: "job/update-parallelism", method: "PATCH", path: jobs + "/job1", contentType: mergePatch, body: `{"spec":{"parallelism":2,"backoffLimit":1}}`},
		{name: "job/patch-status", method: "PATCH", path: jobs + "/job1/status", contentType: mergePatch, body: `{"status":{"active":1}}`},
		{name: "job/table", method: "GET", path: jobs + "/job1", accept: tableAccept},
		{name: "job/list-table", method: "GET", path: jobs, accept: tableAccept},
		{name: "kubectl/get-jobs-wide", kubectl: []string{"get", "jobs", "-n", testNS, "-o", "wide"}},
		{name: "cronjob/create", method: "POST", path: cronJobs, body: cronJob("cj1", `"schedule":"*/5 * * * *",`, "")},
		{name: "cronjob/get", method: "GET", path: cronJobs + "/cj1"},
		{name: "cronjob/create-bad-schedule", method: "POST", path: cronJobs, body: cronJob("bad", `"schedule":"every minute",`, "")},
		{name: "cronjob/create-no-schedule", method: "POST", path: cronJobs, body: cronJob("bad", "", "")},
		{name: "cronjob/create-tz-in-schedule", method: "POST", path: cronJobs, body: cronJob("bad", `"schedule":"CRON_TZ=UTC 0 * * * *",`, "")},
		{name: "cronjob/create-bad-policies", method: "POST", path: cronJobs, body: cronJob("bad",
			`"schedule":"@hourly","concurrencyPolicy":"Sometimes","timeZone":"Mars/Olympus","successfulJobsHistoryLimit":-1,"startingDeadlineSeconds":-2,`, `"parallelism":-1,`)},
		{name: "cronjob/create-with-selector", method: "POST", path: cronJobs, body: cronJob("bad", `"schedule":"@daily",`, `"selector":{"matchLabels":{"a":"b"}},"manualSelector":true,`)},
		{name: "cronjob/create-dotted-name", method: "POST", path: cronJobs, body: cronJob("cj.dotted", `"schedule":"0 0 * * 0","timeZone":"Europe/Berlin",`, "")},
		{name: "cronjob/update-schedule", method: "PATCH", path: cronJobs + "/cj1", contentType: mergePatch, body: `{"spec":{"schedule":"@weekly","suspend":true}}`},
		{name: "cronjob/table", method: "GET", path: cronJobs + "/cj1", accept: tableAccept},
		{name: "kubectl/get-cronjobs-wide", kubectl: []string{"get", "cronjobs", "-n", testNS, "-o", "wide"}},
		{name: "kubectl/create-cronjob", kubectl: []string{"create", "cronjob", "cx", "--image=y", "--schedule=*/1 * * * *", "-n", testNS}},
		{name: "openapi/v3-batch-schemas", method: "GET", path: "/openapi/v3/apis/batch/v1",
			project: openAPISchemas("components", "io.k8s.api.batch.v1.Job", "io.k8s.api.batch.v1.CronJob")},
		{name: "kubectl/create-job", kubectl: []string{"create", "job", "x", "--image=y", "-n", testNS}},
		{name: "kubectl/get-job-created", kubectl: []string{"get", "job", "x", "-n", testNS, "-o", "jsonpath={.spec.template.spec.restartPolicy} {.spec.selector} {.metadata.labels}"}},
	}
}
