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
		{name: "job/update-template", method: "PATCH", path: jobs + "/job1", contentType: strategicPatch,
			body: `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example/app:2"}]}}}}`},
		{name: "job/update-completions", method: "PATCH", path: jobs + "/job1", contentType: mergePatch, body: `{"spec":{"completions":4}}`},
		{name: "job/update-parallelism", method: "PATCH", path: jobs + "/job1", contentType: mergePatch, body: `{"spec":{"parallelism":2,"backoffLimit":1}}`},
		{name: "job/patch-status", method: "PATCH", path: jobs + "/job1/status", contentType: mergePatch, body: `{"status":{"active":1}}`},
		{name: "job/table", method: "GET", path: jobs + "/job1", accept: tableAccept},
		{name: "job/list-table", method: "GET", path: jobs, accept: tableAccept},
		{name: "kubectl/get-jobs-wide", kubectl: []string{"get", "jobs", "-n", testNS, "-o", "wide"}},
		{name: "openapi/v3-batch-schemas", method: "GET", path: "/openapi/v3/apis/batch/v1",
			project: openAPISchemas("components", "io.k8s.api.batch.v1.Job")},
		{name: "kubectl/create-job", kubectl: []string{"create", "job", "x", "--image=y", "-n", testNS}},
		{name: "kubectl/get-job-created", kubectl: []string{"get", "job", "x", "-n", testNS, "-o", "jsonpath={.spec.template.spec.restartPolicy} {.spec.selector} {.metadata.labels}"}},
	}
}
