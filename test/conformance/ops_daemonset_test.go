package conformance

// daemonSetOps are the DaemonSet operations: stored with kube's defaults
// and validation, with no controller next to either server.
func daemonSetOps() []op {
	const (
		dss = "/apis/apps/v1/namespaces/" + testNS + "/daemonsets"
		sel = `"selector":{"matchLabels":{"app":"app"}},`
	)
	ds := func(name, spec, template string) string { return workload("DaemonSet", name, spec, template) }
	return []op{
		{name: "ds/create", method: "POST", path: dss, body: ds("ds1", sel, template(""))},
		{name: "ds/get", method: "GET", path: dss + "/ds1"},
		{name: "ds/create-ondelete", method: "POST", path: dss, body: ds("ds2", sel+`"updateStrategy":{"type":"OnDelete"},"minReadySeconds":5,`,
			template(`"nodeSelector":{"disk":"ssd"}`))},
		{name: "ds/create-selector-mismatch", method: "POST", path: dss, body: ds("bad", `"selector":{"matchLabels":{"app":"other"}},`, template(""))},
		{name: "ds/create-no-selector", method: "POST", path: dss, body: ds("bad", "", template(""))},
		{name: "ds/create-empty-selector", method: "POST", path: dss, body: ds("bad", `"selector":{},`, template(""))},
		{name: "ds/create-surge-and-unavailable", method: "POST", path: dss, body: ds("bad",
			sel+`"updateStrategy":{"rollingUpdate":{"maxUnavailable":"150%","maxSurge":2}},"revisionHistoryLimit":-1,`, template(""))},
		{name: "ds/create-both-zero", method: "POST", path: dss, body: ds("bad", sel+`"updateStrategy":{"rollingUpdate":{"maxUnavailable":0}},`, template(""))},
		{name: "ds/create-unknown-strategy", method: "POST", path: dss, body: ds("bad", sel+`"updateStrategy":{"type":"Sideways"},`, template(""))},
		{name: "ds/create-restart-never", method: "POST", path: dss, body: ds("bad", sel, template(`"restartPolicy":"Never","activeDeadlineSeconds":5`))},
		{name: "ds/patch-selector", method: "PATCH", path: dss + "/ds1", contentType: mergePatch,
			body: `{"spec":{"selector":{"matchLabels":{"app":"app","tier":"web"}},"template":{"metadata":{"labels":{"tier":"web"}}}}}`},
		{name: "ds/patch-min-ready", method: "PATCH", path: dss + "/ds1", contentType: mergePatch, body: `{"spec":{"minReadySeconds":3}}`},
		{name: "ds/patch-template", method: "PATCH", path: dss + "/ds1", contentType: mergePatch,
			body: `{"spec":{"template":{"metadata":{"annotations":{"a":"b"}}}}}`},
		{name: "ds/patch-annotations", method: "PATCH", path: dss + "/ds1", contentType: mergePatch, body: `{"metadata":{"annotations":{"note":"hi"}}}`},
		{name: "ds/patch-status", method: "PATCH", path: dss + "/ds1/status", contentType: mergePatch,
			body: `{"status":{"desiredNumberScheduled":2,"currentNumberScheduled":2,"numberReady":1,"collisionCount":2}}`},
		{name: "ds/patch-status-invalid", method: "PATCH", path: dss + "/ds1/status", contentType: mergePatch,
			body: `{"status":{"numberReady":-1,"numberUnavailable":-2,"collisionCount":1}}`},
		{name: "ds/table", method: "GET", path: dss + "/ds1", accept: tableAccept},
		{name: "ds/table-list", method: "GET", path: dss, accept: tableAccept},
		{name: "kubectl/get-ds-wide", kubectl: []string{"get", "ds", "-n", testNS, "-o", "wide"}},
	}
}
