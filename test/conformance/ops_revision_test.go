package conformance

// revisionOps are the ControllerRevision operations: stored as they are
// sent, with kube's validation, and no controller making any.
func revisionOps() []op {
	const crs = "/apis/apps/v1/namespaces/" + testNS + "/controllerrevisions"
	// cr is a revision named name with the fields rest after its metadata.
	cr := func(name, rest string) string {
		return `{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"` + name + `"}` + rest + `}`
	}
	const owned = `{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"cr1","ownerReferences":[` +
		`{"apiVersion":"apps/v1","kind":"DaemonSet","name":"ds1","uid":"4b7b0bd4-3c47-4a5e-9d6b-3a0e8f4b7c11","controller":true}]},`
	return []op{
		{name: "cr/create", method: "POST", path: crs, body: owned + `"revision":1,"data":{"spec":{"template":{"metadata":{"labels":{"app":"app"}}}}}}`},
		{name: "cr/create-unowned", method: "POST", path: crs, body: cr("cr2", `,"data":{"a":1}`)},
		{name: "cr/get", method: "GET", path: crs + "/cr1"},
		{name: "cr/create-no-data", method: "POST", path: crs, body: cr("bad", `,"revision":1`)},
		{name: "cr/create-null-data", method: "POST", path: crs, body: cr("bad", `,"data":null`)},
		{name: "cr/create-array-data", method: "POST", path: crs, body: cr("bad", `,"data":[1,2]`)},
		{name: "cr/create-string-data", method: "POST", path: crs, body: cr("bad", `,"data":"text"`)},
		{name: "cr/create-negative-revision", method: "POST", path: crs, body: cr("bad", `,"revision":-2,"data":{}`)},
		{name: "cr/create-bad-name", method: "POST", path: crs, body: cr("Bad_Name", `,"data":{}`)},
		{name: "cr/patch-revision", method: "PATCH", path: crs + "/cr1", contentType: mergePatch, body: `{"revision":5,"metadata":{"labels":{"x":"y"}}}`},
		{name: "cr/patch-negative-revision", method: "PATCH", path: crs + "/cr1", contentType: mergePatch, body: `{"revision":-1}`},
		{name: "cr/patch-data", method: "PATCH", path: crs + "/cr1", contentType: mergePatch, body: `{"data":{"spec":{"other":true}}}`},
		{name: "cr/list", method: "GET", path: crs},
		{name: "cr/table", method: "GET", path: crs + "/cr1", accept: tableAccept},
		{name: "cr/table-list", method: "GET", path: crs, accept: tableAccept},
		{name: "kubectl/get-controllerrevisions", kubectl: []string{"get", "controllerrevisions", "-n", testNS}},
		{name: "cr/delete", method: "DELETE", path: crs + "/cr2"},
	}
}
