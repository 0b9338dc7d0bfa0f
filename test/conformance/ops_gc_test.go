package conformance

// gcOps are the API server's part of garbage collection and of the
// namespace lifecycle: the finalizers each propagation policy leaves, each
// kind's default, and a namespace's termination. Neither server has a
// controller next to it, so deleted objects stay as their finalizers hold
// them and a deleted namespace stays Terminating until it is finalized.
func gcOps() []op {
	const (
		cms  = ns + "/configmaps"
		gcNS = "/api/v1/namespaces/gc-scratch"
	)
	held := func(name string, finalizers string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","finalizers":[` + finalizers + `]}}`
	}
	opts := func(fields string) string { return `{"apiVersion":"v1","kind":"DeleteOptions",` + fields + `}` }
	namespace := func(finalizers string) string {
		return `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"gc-scratch"},"spec":{"finalizers":[` + finalizers + `]}}`
	}
	rc := `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"gc-rc"},"spec":{"replicas":0,"selector":{"app":"app"},"template":` + template("") + `}}`
	job := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"gc-job"},"spec":{"template":` + template(`"restartPolicy":"Never"`) + `}}`
	return []op{
		{name: "gc/create-held", method: "POST", path: cms, body: held("gc-held", `"example.com/hold"`)},
		{name: "gc/delete-orphan", method: "DELETE", path: cms + "/gc-held", body: opts(`"propagationPolicy":"Orphan"`)},
		{name: "gc/get-orphan", method: "GET", path: cms + "/gc-held"},
		{name: "gc/delete-again-foreground", method: "DELETE", path: cms + "/gc-held", body: opts(`"propagationPolicy":"Foreground"`)},
		{name: "gc/delete-again-orphan-false", method: "DELETE", path: cms + "/gc-held", body: opts(`"orphanDependents":false`)},
		{name: "gc/delete-again-background", method: "DELETE", path: cms + "/gc-held", body: opts(`"propagationPolicy":"Background"`)},
		{name: "gc/release", method: "PATCH", path: cms + "/gc-held", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		{name: "gc/get-released", method: "GET", path: cms + "/gc-held"},

		{name: "gc/create-foreground", method: "POST", path: cms, body: configMap("gc-fg", "")},
		{name: "gc/delete-foreground", method: "DELETE", path: cms + "/gc-fg", body: opts(`"propagationPolicy":"Foreground"`)},
		{name: "gc/remove-foreground-finalizer", method: "PATCH", path: cms + "/gc-fg", contentType: mergePatch, body: `{"metadata":{"finalizers":[]}}`},
		{name: "gc/get-foreground-gone", method: "GET", path: cms + "/gc-fg"},
		{name: "gc/create-orphan-finalizer", method: "POST", path: cms, body: held("gc-of", `"orphan"`)},
		{name: "gc/delete-with-orphan-finalizer", method: "DELETE", path: cms + "/gc-of"},
		{name: "gc/get-with-orphan-finalizer", method: "GET", path: cms + "/gc-of"},
		{name: "gc/delete-background-drops-orphan", method: "DELETE", path: cms + "/gc-of", body: opts(`"propagationPolicy":"Background"`)},

		{name: "gc/rc-create", method: "POST", path: ns + "/replicationcontrollers", body: rc},
		{name: "gc/rc-delete-default", method: "DELETE", path: ns + "/replicationcontrollers/gc-rc"},
		{name: "gc/rc-get", method: "GET", path: ns + "/replicationcontrollers/gc-rc"},
		{name: "gc/job-create", method: "POST", path: "/apis/batch/v1/namespaces/" + testNS + "/jobs", body: job},
		{name: "gc/job-delete-default", method: "DELETE", path: "/apis/batch/v1/namespaces/" + testNS + "/jobs/gc-job"},
		{name: "gc/job-get", method: "GET", path: "/apis/batch/v1/namespaces/" + testNS + "/jobs/gc-job"},
		{name: "gc/event-create", method: "POST", path: ns + "/events", body: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"gc-ev"},` +
			`"involvedObject":{"kind":"Pod","name":"p","namespace":"` + testNS + `"},"reason":"R","message":"m","type":"Normal"}`},
		{name: "gc/event-delete-orphan", method: "DELETE", path: ns + "/events/gc-ev", body: opts(`"propagationPolicy":"Orphan"`)},
		{name: "gc/event-get", method: "GET", path: ns + "/events/gc-ev"},

		{name: "gcns/create", method: "POST", path: "/api/v1/namespaces", body: namespace(`"example.com/keep"`)},
		{name: "gcns/update-finalizers-ignored", method: "PUT", path: gcNS, body: namespace("")},
		{name: "gcns/create-content", method: "POST", path: gcNS + "/configmaps", body: configMap("inside", "")},
		{name: "gcns/delete-uid-precondition", method: "DELETE", path: gcNS,
			body: opts(`"preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}`)},
		{name: "gcns/delete", method: "DELETE", path: gcNS},
		{name: "gcns/get-terminating", method: "GET", path: gcNS},
		{name: "gcns/get-content", method: "GET", path: gcNS + "/configmaps/inside"},
		{name: "gcns/create-in-terminating", method: "POST", path: gcNS + "/configmaps", body: configMap("late", "")},
		{name: "gcns/create-generated-in-terminating", method: "POST", path: gcNS + "/configmaps",
			body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"late-"}}`},
		{name: "gcns/create-invalid-in-terminating", method: "POST", path: gcNS + "/configmaps", body: configMap("Bad_Name", "")},
		{name: "gcns/binding-in-terminating", method: "POST", path: gcNS + "/pods/p/binding",
			body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"},"target":{"name":"n1"}}`},
		{name: "gcns/token-in-terminating", method: "POST", path: gcNS + "/serviceaccounts/default/token",
			body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`},
		{name: "gcns/eviction-in-terminating", method: "POST", path: gcNS + "/pods/p/eviction",
			body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p"}}`},
		{name: "gcns/access-review-in-terminating", method: "POST", path: "/apis/authorization.k8s.io/v1/namespaces/gc-scratch/localsubjectaccessreviews",
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"gc-scratch"},` +
				`"spec":{"user":"someone","resourceAttributes":{"verb":"get","resource":"pods","namespace":"gc-scratch"}}}`},
		{name: "gcns/delete-again-orphan", method: "DELETE", path: gcNS, body: opts(`"propagationPolicy":"Orphan"`)},
		{name: "gcns/finalize-get", method: "GET", path: gcNS + "/finalize"},
		{name: "gcns/finalize-patch", method: "PATCH", path: gcNS + "/finalize", contentType: mergePatch, body: `{"spec":{"finalizers":[]}}`},
		{name: "gcns/finalize-bad-name", method: "PUT", path: gcNS + "/finalize", body: namespace(`"Bad Name"`)},
		{name: "gcns/finalize-keep-one", method: "PUT", path: gcNS + "/finalize", body: namespace(`"example.com/keep"`)},
		{name: "gcns/finalize-all", method: "PUT", path: gcNS + "/finalize", body: namespace("")},
		{name: "gcns/get-gone", method: "GET", path: gcNS},
	}
}
