package conformance

// tableOps are Tables as kubectl get asks for them, with each includeObject
// (B.5): None, Metadata (and the default, empty), Object (what --sort-by
// sends, to sort the rows by the objects' fields), and one neither server
// knows, on a LIST, a GET and a watch, for pods (a printer of their own),
// roles (kube's default columns) and events in both groups; and the
// kubectl commands users ran.
func tableOps() []op {
	const (
		pods     = ns + "/pods"
		roles    = "/apis/rbac.authorization.k8s.io/v1/namespaces/" + testNS + "/roles"
		events   = ns + "/events"
		events2  = "/apis/events.k8s.io/v1/namespaces/" + testNS + "/events"
		selector = "tbl=1"
		pbTable  = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io"
	)
	tblPod := func(name string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","labels":{"tbl":"1"}},"spec":{"containers":[{"name":"app","image":"registry.example/app:1"}]}}`
	}
	ops := []op{
		{name: "table/create-pod-b", method: "POST", path: pods, body: tblPod("tbl-b")},
		{name: "table/create-pod-a", method: "POST", path: pods, body: tblPod("tbl-a")},
		{name: "table/create-role", method: "POST", path: roles, body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"tbl","labels":{"tbl":"1"}},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}`},
		{name: "table/create-event", method: "POST", path: events, body: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"tbl.1","labels":{"tbl":"1"}},` +
			`"involvedObject":{"kind":"Pod","namespace":"` + testNS + `","name":"tbl-a"},"reason":"Tested","message":"a table row","type":"Normal",` +
			`"source":{"component":"conformance"},"firstTimestamp":"2026-01-02T03:04:05Z","lastTimestamp":"2026-01-02T03:04:06Z","count":2}`},
		// kube keeps the events of both groups at one key, kubegate each
		// group's at its own: each group's list reads an event made in it.
		{name: "table/create-events.k8s.io-event", method: "POST", path: events2, body: `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"tbl.2","labels":{"tbl":"2"}},` +
			`"regarding":{"kind":"Pod","namespace":"` + testNS + `","name":"tbl-b"},"reason":"Tested","note":"another table row","type":"Warning","action":"Testing",` +
			`"reportingController":"example.com/conformance","reportingInstance":"conformance-1","eventTime":"2026-01-02T03:04:05.000000Z"}`},
	}
	for _, include := range []string{"", "None", "Metadata", "Object", "object"} {
		suffix := include
		if suffix == "" {
			suffix = "default"
		} else if suffix == "object" {
			suffix = "unknown"
		}
		ops = append(ops,
			op{name: "table/pods-list-" + suffix, method: "GET", path: pods + q("labelSelector", selector, "includeObject", include), accept: tableAccept},
			op{name: "table/pod-get-" + suffix, method: "GET", path: pods + "/tbl-a" + q("includeObject", include), accept: tableAccept},
			op{name: "table/pods-watch-" + suffix, method: "GET", path: pods + q("watch", "1", "timeoutSeconds", "1", "labelSelector", selector, "includeObject", include), accept: tableAccept},
			op{name: "table/roles-list-" + suffix, method: "GET", path: roles + q("labelSelector", selector, "includeObject", include), accept: tableAccept},
			op{name: "table/events-list-" + suffix, method: "GET", path: events + q("labelSelector", selector, "includeObject", include), accept: tableAccept},
			op{name: "table/events.k8s.io-list-" + suffix, method: "GET", path: events2 + q("labelSelector", "tbl=2", "includeObject", include), accept: tableAccept},
		)
	}
	return append(ops,
		// A watch from a list's revision: the event's row and object.
		op{name: "table/pods-list-for-watch", method: "GET", path: pods + q("labelSelector", selector)},
		op{name: "table/create-pod-c", method: "POST", path: pods, body: tblPod("tbl-c")},
		op{name: "table/pods-watch-from-rv-object", method: "GET", path: pods + "?watch=1&timeoutSeconds=1&labelSelector=tbl%3D1&includeObject=Object&resourceVersion={rv}", accept: tableAccept},
		op{name: "table/pods-watch-from-rv-metadata", method: "GET", path: pods + "?watch=1&timeoutSeconds=1&labelSelector=tbl%3D1&resourceVersion={rv}", accept: tableAccept},
		// kube has no protobuf Table: alone it is 406, with JSON after it
		// the answer is the Table in JSON.
		op{name: "table/pods-list-protobuf", method: "GET", path: pods + q("labelSelector", selector, "includeObject", "Object"), accept: pbTable},
		op{name: "table/pods-list-protobuf-then-json", method: "GET", path: pods + q("labelSelector", selector, "includeObject", "Object"), accept: pbTable + "," + tableAccept},
		op{name: "table/pods-watch-protobuf", method: "GET", path: pods + q("watch", "1", "timeoutSeconds", "1", "labelSelector", selector, "includeObject", "Object"), accept: pbTable},
		op{name: "kubectl/get-pods-sort-by-name", kubectl: []string{"get", "pods", "-n", testNS, "-l", selector, "-o", "wide", "--sort-by=.metadata.name"}},
		op{name: "kubectl/get-events-sort-by-last", kubectl: []string{"get", "events", "-n", testNS, "-l", selector, "--sort-by=.lastTimestamp"}},
		op{name: "kubectl/get-roles-sort-by-name", kubectl: []string{"get", "roles", "-n", testNS, "-l", selector, "--sort-by=.metadata.name"}},
	)
}
