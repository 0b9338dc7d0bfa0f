package conformance

// deploymentOps are the Deployment operations: stored with kube's defaults
// and validation, with no controller next to either server.
func deploymentOps() []op {
	const (
		deploys = "/apis/apps/v1/namespaces/" + testNS + "/deployments"
		sel     = `"selector":{"matchLabels":{"app":"app"}},`
	)
	deploy := func(name, spec, template string) string { return workload("Deployment", name, spec, template) }
	return []op{
		{name: "deploy/create", method: "POST", path: deploys, body: deploy("d1", sel, template(""))},
		{name: "deploy/get", method: "GET", path: deploys + "/d1"},
		{name: "deploy/create-recreate", method: "POST", path: deploys, body: deploy("d2.web", sel+`"strategy":{"type":"Recreate"},"minReadySeconds":5,`,
			template(`"terminationGracePeriodSeconds":-5`))},
		{name: "deploy/create-selector-mismatch", method: "POST", path: deploys, body: deploy("bad", `"selector":{"matchLabels":{"app":"other"}},`, template(""))},
		{name: "deploy/create-no-selector", method: "POST", path: deploys, body: deploy("bad", "", template(""))},
		{name: "deploy/create-empty-selector", method: "POST", path: deploys, body: deploy("bad", `"selector":{},`, template(""))},
		{name: "deploy/create-negative-replicas", method: "POST", path: deploys, body: deploy("bad", sel+`"replicas":-1,"revisionHistoryLimit":-1,`, template(""))},
		{name: "deploy/create-bad-max-unavailable", method: "POST", path: deploys, body: deploy("bad",
			sel+`"strategy":{"rollingUpdate":{"maxUnavailable":"150%","maxSurge":"x"}},`, template(""))},
		{name: "deploy/create-both-zero", method: "POST", path: deploys, body: deploy("bad", sel+`"strategy":{"rollingUpdate":{"maxUnavailable":0,"maxSurge":"0%"}},`, template(""))},
		{name: "deploy/create-recreate-with-rolling", method: "POST", path: deploys, body: deploy("bad",
			sel+`"strategy":{"type":"Recreate","rollingUpdate":{"maxSurge":1}},`, template(""))},
		{name: "deploy/create-unknown-strategy", method: "POST", path: deploys, body: deploy("bad", sel+`"strategy":{"type":"Sideways"},`, template(""))},
		{name: "deploy/create-deadline", method: "POST", path: deploys, body: deploy("bad", sel+`"progressDeadlineSeconds":10,"minReadySeconds":10,`, template(""))},
		{name: "deploy/create-restart-never", method: "POST", path: deploys, body: deploy("bad", sel, template(`"restartPolicy":"Never","activeDeadlineSeconds":5`))},
		{name: "deploy/patch-selector", method: "PATCH", path: deploys + "/d1", contentType: mergePatch,
			body: `{"spec":{"selector":{"matchLabels":{"app":"app","tier":"web"}},"template":{"metadata":{"labels":{"tier":"web"}}}}}`},
		{name: "deploy/patch-replicas", method: "PATCH", path: deploys + "/d1", contentType: mergePatch, body: `{"spec":{"replicas":3,"paused":true}}`},
		{name: "deploy/patch-annotations", method: "PATCH", path: deploys + "/d1", contentType: mergePatch, body: `{"metadata":{"annotations":{"note":"hi"}}}`},
		{name: "deploy/patch-labels", method: "PATCH", path: deploys + "/d1", contentType: mergePatch, body: `{"metadata":{"labels":{"x":"y"}}}`},
		{name: "deploy/patch-status", method: "PATCH", path: deploys + "/d1/status", contentType: mergePatch,
			body: `{"status":{"replicas":2,"readyReplicas":2,"updatedReplicas":1,"availableReplicas":1,"collisionCount":2}}`},
		{name: "deploy/patch-status-invalid", method: "PATCH", path: deploys + "/d1/status", contentType: mergePatch,
			body: `{"status":{"replicas":1,"updatedReplicas":2,"availableReplicas":3,"unavailableReplicas":-1,"collisionCount":1}}`},
		{name: "deploy/table", method: "GET", path: deploys + "/d1", accept: tableAccept},
		{name: "deploy/table-list", method: "GET", path: deploys, accept: tableAccept},
		{name: "kubectl/get-deploy-wide", kubectl: []string{"get", "deploy", "-n", testNS, "-o", "wide"}},
	}
}
