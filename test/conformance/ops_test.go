package conformance

import "strings"

// testNS is the namespace the operations work in; prepare creates it.
const testNS = "conformance"

// limitedNS holds a LimitRange and secureNS Pod Security labels, so that
// neither changes the pods of testNS.
const (
	limitedNS = "limited"
	secureNS  = "secure"
)

// preparedNamespaces are created, each with its default service account,
// before the operations.
var preparedNamespaces = []string{testNS, limitedNS, secureNS}

const (
	ns       = "/api/v1/namespaces/" + testNS
	jsonType = "application/json"
	// kube's media types for patches and apply.
	mergePatch     = "application/merge-patch+json"
	jsonPatch      = "application/json-patch+json"
	strategicPatch = "application/strategic-merge-patch+json"
	applyPatch     = "application/apply-patch+yaml"
	tableAccept    = "application/json;as=Table;v=v1;g=meta.k8s.io"
	metaListAccept = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
	metaAccept     = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
	discoveryV2    = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	protobuf       = "application/vnd.kubernetes.protobuf"
)

// pod returns a pod manifest with one container, and extra spec fields.
func pod(name, extraSpec string) string {
	spec := `"containers":[{"name":"app","image":"registry.example/app:1"}]`
	if extraSpec != "" {
		spec += "," + extraSpec
	}
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","labels":{"app":"` + name + `"}},"spec":{` + spec + `}}`
}

// template returns a pod template labelled app=app with one container, and
// extra pod spec fields.
func template(extraSpec string) string {
	spec := `"containers":[{"name":"app","image":"registry.example/app:1"}]`
	if extraSpec != "" {
		spec += "," + extraSpec
	}
	return `{"metadata":{"labels":{"app":"app"}},"spec":{` + spec + `}}`
}

// workload returns a manifest of an apps/v1 kind with a spec of the given
// fields, which come before the template's.
func workload(kind, name, spec, template string) string {
	return `{"apiVersion":"apps/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"},"spec":{` + spec + `"template":` + template + `}}`
}

func configMap(name, data string) string {
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"},"data":{` + data + `}}`
}

// coreSchemas are the core v1 kinds whose OpenAPI schemas are compared.
var coreSchemas = []string{"io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.Service", "io.k8s.api.core.v1.ConfigMap",
	"io.k8s.api.core.v1.Node", "io.k8s.api.core.v1.Namespace", "io.k8s.api.core.v1.Secret",
	"io.k8s.api.core.v1.ServiceAccount", "io.k8s.api.core.v1.LimitRange", "io.k8s.api.core.v1.ReplicationController"}

// operations is the list both servers answer, in order: later operations
// see what earlier ones made.
func operations() []op {
	var ops []op
	add := func(o ...op) { ops = append(ops, o...) }

	// Discovery, version, health.
	add(
		op{name: "discovery/api", method: "GET", path: "/api"},
		op{name: "discovery/apis", method: "GET", path: "/apis"},
		op{name: "discovery/core-v1", method: "GET", path: "/api/v1"},
		op{name: "discovery/rbac-v1", method: "GET", path: "/apis/rbac.authorization.k8s.io/v1"},
		op{name: "discovery/certificates-v1", method: "GET", path: "/apis/certificates.k8s.io/v1"},
		op{name: "discovery/aggregated-apis", method: "GET", path: "/apis", accept: discoveryV2},
		op{name: "discovery/aggregated-api", method: "GET", path: "/api", accept: discoveryV2},
		op{name: "version", method: "GET", path: "/version"},
		op{name: "healthz", method: "GET", path: "/healthz"},
		op{name: "livez", method: "GET", path: "/livez"},
		op{name: "readyz", method: "GET", path: "/readyz"},
		op{name: "openapi/v2", method: "GET", path: "/openapi/v2", headOnly: true},
		op{name: "openapi/v2-protobuf", method: "GET", path: "/openapi/v2", accept: "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", headOnly: true},
		op{name: "openapi/v2-unacceptable", method: "GET", path: "/openapi/v2", accept: "text/html", headOnly: true},
		op{name: "openapi/v3", method: "GET", path: "/openapi/v3", headOnly: true},
		op{name: "openapi/v3-core", method: "GET", path: "/openapi/v3/api/v1", headOnly: true},
		// the schemas of the kinds kubegate serves, with their
		// descriptions, enums and required fields
		op{name: "openapi/v3-core-schemas", method: "GET", path: "/openapi/v3/api/v1",
			project: openAPISchemas("components", coreSchemas...)},
		op{name: "openapi/v3-apps-schemas", method: "GET", path: "/openapi/v3/apis/apps/v1",
			project: openAPISchemas("components", "io.k8s.api.apps.v1.StatefulSet", "io.k8s.api.apps.v1.ReplicaSet")},
		op{name: "openapi/v2-schemas", method: "GET", path: "/openapi/v2",
			project: openAPISchemas("definitions", append(coreSchemas, "io.k8s.api.apps.v1.StatefulSet")...)},
		op{name: "metrics", method: "GET", path: "/metrics", headOnly: true},
	)

	// Unknown paths, bad bodies, bad media types, bad options.
	add(
		op{name: "error/unknown-resource", method: "GET", path: "/api/v1/nosuchthings"},
		op{name: "error/unknown-namespaced-resource", method: "GET", path: ns + "/nosuchthings"},
		op{name: "error/unknown-group", method: "GET", path: "/apis/nosuch.example.com/v1/things"},
		op{name: "error/unknown-version", method: "GET", path: "/api/v2/pods"},
		op{name: "error/no-such-path", method: "GET", path: "/nosuchpath"},
		op{name: "error/missing-object", method: "GET", path: ns + "/pods/missing"},
		op{name: "error/missing-namespace", method: "GET", path: "/api/v1/namespaces/missing/pods/x"},
		op{name: "error/create-in-missing-namespace", method: "POST", path: "/api/v1/namespaces/missing/configmaps", body: configMap("x", "")},
		op{name: "error/bad-json", method: "POST", path: ns + "/configmaps", body: `{"apiVersion":`, contentType: jsonType},
		op{name: "error/unsupported-media-type", method: "POST", path: ns + "/configmaps", body: configMap("x", ""), contentType: "text/plain"},
		op{name: "error/not-acceptable", method: "GET", path: ns + "/configmaps", accept: "application/xml"},
		op{name: "error/kind-mismatch", method: "POST", path: ns + "/configmaps", body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`},
		op{name: "error/version-mismatch", method: "POST", path: ns + "/configmaps", body: `{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"x"}}`},
		op{name: "error/namespace-mismatch", method: "POST", path: ns + "/configmaps", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"other"}}`},
		op{name: "error/bad-limit", method: "GET", path: ns + "/configmaps" + q("limit", "abc")},
		op{name: "error/bad-label-selector", method: "GET", path: ns + "/configmaps" + q("labelSelector", "a=(b")},
		op{name: "error/bad-field-selector", method: "GET", path: ns + "/pods" + q("fieldSelector", "spec.noSuchField=x")},
		op{name: "error/method-not-allowed", method: "PUT", path: ns + "/configmaps"},
		op{name: "error/delete-collection-all-namespaces", method: "DELETE", path: "/api/v1/configmaps"},
		op{name: "error/delete-collection-not-allowed", method: "DELETE", path: "/api/v1/namespaces/" + testNS + "/bindings"},
		// The legacy bindings are namespaced and create-only: no path
		// outside a namespace (D.4).
		op{name: "error/bindings-cluster-path", method: "POST", path: "/api/v1/bindings",
			body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"` + testNS + `/app"},"target":{"kind":"Node","name":"node-1"}}`},
	)

	// ConfigMaps: the whole life of a simple object.
	add(
		op{name: "configmap/create", method: "POST", path: ns + "/configmaps", body: configMap("one", `"a":"1"`)},
		op{name: "configmap/create-exists", method: "POST", path: ns + "/configmaps", body: configMap("one", `"a":"1"`)},
		op{name: "configmap/get", method: "GET", path: ns + "/configmaps/one"},
		op{name: "configmap/create-generate-name", method: "POST", path: ns + "/configmaps", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"gen-"}}`},
		op{name: "configmap/create-bad-name", method: "POST", path: ns + "/configmaps", body: configMap("Bad_Name", "")},
		op{name: "configmap/create-bad-key", method: "POST", path: ns + "/configmaps", body: configMap("badkey", `"no/slash":"x"`)},
		op{name: "configmap/create-key-in-both", method: "POST", path: ns + "/configmaps", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"both"},"data":{"k":"x"},"binaryData":{"k":"eA=="}}`},
		op{name: "configmap/create-no-name", method: "POST", path: ns + "/configmaps", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`},
		op{name: "configmap/create-dry-run", method: "POST", path: ns + "/configmaps" + q("dryRun", "All"), body: configMap("dry", `"a":"1"`)},
		op{name: "configmap/get-dry-run-not-stored", method: "GET", path: ns + "/configmaps/dry"},
		op{name: "configmap/create-bad-dry-run", method: "POST", path: ns + "/configmaps" + q("dryRun", "Some"), body: configMap("dry", "")},
		op{name: "configmap/create-strict-unknown-field", method: "POST", path: ns + "/configmaps" + q("fieldValidation", "Strict"), body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"strict"},"bogus":1}`},
		op{name: "configmap/create-warn-unknown-field", method: "POST", path: ns + "/configmaps" + q("fieldValidation", "Warn"), body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warn"},"bogus":1}`},
		op{name: "configmap/create-bad-field-validation", method: "POST", path: ns + "/configmaps" + q("fieldValidation", "Loose"), body: configMap("loose", "")},
		op{name: "configmap/update", method: "PUT", path: ns + "/configmaps/one", body: configMap("one", `"a":"2"`)},
		op{name: "configmap/update-name-mismatch", method: "PUT", path: ns + "/configmaps/one", body: configMap("two", `"a":"2"`)},
		op{name: "configmap/update-stale", method: "PUT", path: ns + "/configmaps/one", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one","resourceVersion":"1"},"data":{"a":"3"}}`},
		op{name: "configmap/update-missing", method: "PUT", path: ns + "/configmaps/missing", body: configMap("missing", `"a":"1"`)},
		op{name: "configmap/patch-merge", method: "PATCH", path: ns + "/configmaps/one", contentType: mergePatch, body: `{"metadata":{"labels":{"l":"v"}},"data":{"b":"2"}}`},
		op{name: "configmap/patch-json", method: "PATCH", path: ns + "/configmaps/one", contentType: jsonPatch, body: `[{"op":"add","path":"/data/c","value":"3"}]`},
		op{name: "configmap/patch-json-test-fails", method: "PATCH", path: ns + "/configmaps/one", contentType: jsonPatch, body: `[{"op":"test","path":"/data/a","value":"9"}]`},
		op{name: "configmap/patch-strategic", method: "PATCH", path: ns + "/configmaps/one", contentType: strategicPatch, body: `{"data":{"d":"4"}}`},
		op{name: "configmap/patch-bad", method: "PATCH", path: ns + "/configmaps/one", contentType: mergePatch, body: `{"data":`},
		op{name: "configmap/patch-unsupported-type", method: "PATCH", path: ns + "/configmaps/one", contentType: jsonType, body: `{"data":{}}`},
		op{name: "configmap/apply-create", method: "PATCH", path: ns + "/configmaps/applied" + q("fieldManager", "conf"), contentType: applyPatch,
			body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"1\"\n"},
		op{name: "configmap/apply-update", method: "PATCH", path: ns + "/configmaps/applied" + q("fieldManager", "conf"), contentType: applyPatch,
			body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"2\"\n"},
		op{name: "configmap/apply-conflict", method: "PATCH", path: ns + "/configmaps/applied" + q("fieldManager", "other"), contentType: applyPatch,
			body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"3\"\n"},
		op{name: "configmap/apply-no-manager", method: "PATCH", path: ns + "/configmaps/applied", contentType: applyPatch,
			body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n"},
		op{name: "configmap/immutable-create", method: "POST", path: ns + "/configmaps", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"frozen"},"immutable":true,"data":{"a":"1"}}`},
		op{name: "configmap/immutable-update", method: "PUT", path: ns + "/configmaps/frozen", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"frozen"},"immutable":true,"data":{"a":"2"}}`},
		op{name: "configmap/list", method: "GET", path: ns + "/configmaps"},
		op{name: "configmap/list-label-selector", method: "GET", path: ns + "/configmaps" + q("labelSelector", "l=v")},
		op{name: "configmap/list-field-selector", method: "GET", path: ns + "/configmaps" + q("fieldSelector", "metadata.name=one")},
		op{name: "configmap/list-limit", method: "GET", path: ns + "/configmaps" + q("limit", "1")},
		op{name: "configmap/list-all-namespaces-selector", method: "GET", path: "/api/v1/configmaps" + q("labelSelector", "l=v")},
		op{name: "configmap/list-too-old", method: "GET", path: ns + "/configmaps" + q("resourceVersion", "1", "resourceVersionMatch", "Exact")},
		op{name: "configmap/list-bad-rv-match", method: "GET", path: ns + "/configmaps" + q("resourceVersionMatch", "Exact")},
		op{name: "configmap/table", method: "GET", path: ns + "/configmaps/one", accept: tableAccept},
		op{name: "configmap/list-table", method: "GET", path: ns + "/configmaps" + q("labelSelector", "l=v"), accept: tableAccept},
		op{name: "configmap/metadata", method: "GET", path: ns + "/configmaps/one", accept: metaAccept},
		op{name: "configmap/list-metadata", method: "GET", path: ns + "/configmaps" + q("labelSelector", "l=v"), accept: metaListAccept},
		op{name: "configmap/get-protobuf", method: "GET", path: ns + "/configmaps/one", accept: protobuf},
		op{name: "configmap/list-protobuf", method: "GET", path: ns + "/configmaps", accept: protobuf},
		op{name: "configmap/get-cbor", method: "GET", path: ns + "/configmaps/one", accept: "application/cbor"},
		op{name: "configmap/table-include-object", method: "GET", path: ns + "/configmaps/one" + q("includeObject", "Object"), accept: tableAccept},
		op{name: "configmap/table-include-none", method: "GET", path: ns + "/configmaps" + q("includeObject", "None"), accept: tableAccept},
		op{name: "configmap/list-for-watch", method: "GET", path: ns + "/configmaps"},
		op{name: "configmap/create-watched", method: "POST", path: ns + "/configmaps", body: configMap("watched", `"w":"1"`)},
		op{name: "watch/from-resource-version", method: "GET", path: ns + "/configmaps?watch=1&timeoutSeconds=1&resourceVersion={rv}"},
		op{name: "watch/metadata", method: "GET", path: ns + "/configmaps?watch=1&timeoutSeconds=1&resourceVersion={rv}", accept: metaAccept},
		op{name: "watch/initial-events", method: "GET", path: ns + "/configmaps" + q("watch", "1", "timeoutSeconds", "1",
			"sendInitialEvents", "true", "allowWatchBookmarks", "true", "resourceVersionMatch", "NotOlderThan")},
		op{name: "watch/initial-events-without-match", method: "GET", path: ns + "/configmaps" + q("watch", "1", "timeoutSeconds", "1", "sendInitialEvents", "true")},
		op{name: "watch/field-selector", method: "GET", path: ns + "/configmaps?watch=1&timeoutSeconds=1&resourceVersion={rv}&fieldSelector=metadata.name%3Dwatched"},
		op{name: "configmap/delete-watched", method: "DELETE", path: ns + "/configmaps/watched"},
		op{name: "configmap/delete-precondition-fails", method: "DELETE", path: ns + "/configmaps/one", body: `{"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`},
		op{name: "configmap/delete-bad-propagation", method: "DELETE", path: ns + "/configmaps/one", body: `{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Sideways"}`},
		op{name: "configmap/delete", method: "DELETE", path: ns + "/configmaps/one"},
		op{name: "configmap/delete-missing", method: "DELETE", path: ns + "/configmaps/one"},
		op{name: "configmap/delete-with-finalizer", method: "POST", path: ns + "/configmaps", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["example.com/hold"]}}`},
		op{name: "configmap/delete-held", method: "DELETE", path: ns + "/configmaps/held"},
		op{name: "configmap/get-held", method: "GET", path: ns + "/configmaps/held"},
		op{name: "configmap/release-held", method: "PATCH", path: ns + "/configmaps/held", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		op{name: "configmap/get-released", method: "GET", path: ns + "/configmaps/held"},
		op{name: "configmap/delete-orphan", method: "DELETE", path: ns + "/configmaps/applied", body: `{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Orphan"}`},
		op{name: "configmap/delete-collection", method: "DELETE", path: ns + "/configmaps" + q("labelSelector", "never=matches")},
	)

	// Secrets.
	add(
		op{name: "secret/create-string-data", method: "POST", path: ns + "/secrets", body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1"},"stringData":{"user":"admin"},"data":{"pass":"cGFzcw=="}}`},
		op{name: "secret/get", method: "GET", path: ns + "/secrets/s1"},
		op{name: "secret/create-tls-missing-key", method: "POST", path: ns + "/secrets", body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"tls"},"type":"kubernetes.io/tls","data":{"tls.crt":"eA=="}}`},
		op{name: "secret/update-type", method: "PUT", path: ns + "/secrets/s1", body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1"},"type":"example.com/other","data":{"pass":"cGFzcw=="}}`},
		op{name: "secret/create-bad-key", method: "POST", path: ns + "/secrets", body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"badkey"},"data":{"no/slash":"eA=="}}`},
		op{name: "secret/delete", method: "DELETE", path: ns + "/secrets/s1"},
	)

	// Pods.
	add(
		op{name: "pod/create", method: "POST", path: ns + "/pods", body: pod("app", "")},
		op{name: "pod/get", method: "GET", path: ns + "/pods/app"},
		op{name: "pod/add-apparmor-annotation", method: "PATCH", path: ns + "/pods/app", contentType: mergePatch,
			body: `{"metadata":{"annotations":{"container.apparmor.security.beta.kubernetes.io/app":"unconfined"}}}`},
		op{name: "pod/status-add-mirror-annotation", method: "PATCH", path: ns + "/pods/app/status", contentType: mergePatch,
			body: `{"metadata":{"annotations":{"kubernetes.io/config.mirror":"x"}}}`},
		op{name: "pod/create-mirror-unbound", method: "POST", path: ns + "/pods",
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"mirror","annotations":{"kubernetes.io/config.mirror":"x"}},"spec":{"containers":[{"name":"app","image":"registry.example/app:1"}]}}`},
		op{name: "pod/create-restart-policy-sometimes", method: "POST", path: ns + "/pods", body: pod("sometimes", `"restartPolicy":"Sometimes"`)},
		op{name: "pod/create-no-containers", method: "POST", path: ns + "/pods", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"empty"},"spec":{"containers":[]}}`},
		op{name: "pod/create-no-image", method: "POST", path: ns + "/pods", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"noimage"},"spec":{"containers":[{"name":"app"}]}}`},
		op{name: "pod/create-duplicate-container", method: "POST", path: ns + "/pods", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"dup"},"spec":{"containers":[{"name":"a","image":"x"},{"name":"a","image":"x"}]}}`},
		op{name: "pod/create-bad-port", method: "POST", path: ns + "/pods", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"badport"},"spec":{"containers":[{"name":"a","image":"x","ports":[{"containerPort":70000}]}]}}`},
		op{name: "pod/create-limits-below-requests", method: "POST", path: ns + "/pods", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"res"},"spec":{"containers":[{"name":"a","image":"x","resources":{"requests":{"cpu":"2"},"limits":{"cpu":"1"}}}]}}`},
		op{name: "pod/create-with-resources", method: "POST", path: ns + "/pods", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"guaranteed"},"spec":{"containers":[{"name":"a","image":"x","resources":{"limits":{"cpu":"1","memory":"1Gi"}}}]}}`},
		op{name: "pod/create-missing-service-account", method: "POST", path: ns + "/pods", body: pod("nosa", `"serviceAccountName":"missing"`)},
		op{name: "pod/create-missing-priority-class", method: "POST", path: ns + "/pods", body: pod("noprio", `"priorityClassName":"missing"`)},
		op{name: "pod/update-rename-container", method: "PUT", path: ns + "/pods/app",
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"app"},"spec":{"containers":[{"name":"renamed","image":"registry.example/app:1"}]}}`},
		op{name: "pod/patch-add-container", method: "PATCH", path: ns + "/pods/app", contentType: strategicPatch, body: `{"spec":{"containers":[{"name":"second","image":"x"}]}}`},
		op{name: "pod/patch-image", method: "PATCH", path: ns + "/pods/app", contentType: strategicPatch, body: `{"spec":{"containers":[{"name":"app","image":"registry.example/app:2"}]}}`},
		op{name: "pod/patch-labels", method: "PATCH", path: ns + "/pods/app", contentType: mergePatch, body: `{"metadata":{"labels":{"tier":"web"}}}`},
		op{name: "pod/patch-status", method: "PATCH", path: ns + "/pods/app/status", contentType: mergePatch, body: `{"status":{"message":"hello"}}`},
		op{name: "pod/list-field-selector", method: "GET", path: ns + "/pods" + q("fieldSelector", "status.phase=Pending")},
		op{name: "pod/list-node-selector", method: "GET", path: ns + "/pods" + q("fieldSelector", "spec.nodeName=")},
		op{name: "pod/table", method: "GET", path: ns + "/pods/app", accept: tableAccept},
		op{name: "pod/get-protobuf", method: "GET", path: ns + "/pods/app", accept: protobuf},
		op{name: "pod/log-unscheduled", method: "GET", path: ns + "/pods/app/log"},
		op{name: "pod/log-missing", method: "GET", path: ns + "/pods/missing/log"},
		op{name: "pod/exec-unscheduled", method: "POST", path: ns + "/pods/app/exec" + q("command", "ls", "stdout", "true")},
		op{name: "pod/eviction", method: "POST", path: ns + "/pods/guaranteed/eviction", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"guaranteed"}}`},
		op{name: "pod/binding", method: "POST", path: ns + "/pods/app/binding", body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"app"},"target":{"kind":"Node","name":"node-1"}}`},
		op{name: "pod/binding-again", method: "POST", path: ns + "/pods/app/binding", body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"app"},"target":{"kind":"Node","name":"node-2"}}`},
		op{name: "pod/delete-bound", method: "DELETE", path: ns + "/pods/app"},
		op{name: "pod/get-deleting", method: "GET", path: ns + "/pods/app"},
		op{name: "pod/delete-unbound", method: "DELETE", path: ns + "/pods/nosa"},
		op{name: "pod/delete-grace-negative", method: "DELETE", path: ns + "/pods/noprio", body: `{"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":-1}`},
	)

	// Priority classes.
	const pcs = "/apis/scheduling.k8s.io/v1/priorityclasses"
	add(
		op{name: "priorityclass/get-system", method: "GET", path: pcs + "/system-node-critical"},
		op{name: "priorityclass/create", method: "POST", path: pcs, body: `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"high"},"value":1000}`},
		op{name: "priorityclass/create-too-high", method: "POST", path: pcs, body: `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"huge"},"value":2000000000}`},
		op{name: "priorityclass/create-system-name", method: "POST", path: pcs, body: `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"system-mine"},"value":1}`},
		op{name: "priorityclass/update-value", method: "PATCH", path: pcs + "/high", contentType: mergePatch, body: `{"value":1001}`},
		op{name: "priorityclass/table", method: "GET", path: pcs + "/high", accept: tableAccept},
		op{name: "priorityclass/delete-system", method: "DELETE", path: pcs + "/system-cluster-critical"},
		op{name: "pod/create-with-priority-class", method: "POST", path: ns + "/pods", body: pod("important", `"priorityClassName":"high"`)},
		op{name: "pod/create-with-own-priority", method: "POST", path: ns + "/pods", body: pod("selfish", `"priority":5`)},
		op{name: "priorityclass/delete", method: "DELETE", path: pcs + "/high"},
	)

	// Replicated workloads: stored with kube's defaults and validation; no
	// controller runs next to either server.
	const (
		rcs  = ns + "/replicationcontrollers"
		apps = "/apis/apps/v1/namespaces/" + testNS
		rss  = apps + "/replicasets"
		stss = apps + "/statefulsets"
		sel  = `"selector":{"matchLabels":{"app":"app"}},`
	)
	rc := func(name, spec, template string) string {
		return `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"` + name + `"},"spec":{` + spec + `"template":` + template + `}}`
	}
	add(
		op{name: "rc/create", method: "POST", path: rcs, body: rc("rc1", "", template(""))},
		op{name: "rc/get", method: "GET", path: rcs + "/rc1"},
		op{name: "rc/create-template-defaults", method: "POST", path: rcs, body: rc("rc2", "",
			`{"metadata":{"labels":{"app":"rc2"}},"spec":{"terminationGracePeriodSeconds":-5,"serviceAccount":"robot","containers":[{"name":"app","image":"x","resources":{"limits":{"cpu":"1"}},"ports":[{"containerPort":80}]}]}}`)},
		op{name: "rc/create-negative-replicas", method: "POST", path: rcs, body: rc("bad", `"replicas":-1,`, template(""))},
		op{name: "rc/create-selector-mismatch", method: "POST", path: rcs, body: rc("bad", `"selector":{"app":"other"},`, template(""))},
		op{name: "rc/create-no-selector", method: "POST", path: rcs, body: rc("bad", "", `{"spec":{"containers":[{"name":"app","image":"x"}]}}`)},
		op{name: "rc/create-restart-never", method: "POST", path: rcs, body: rc("bad", "", template(`"restartPolicy":"Never"`))},
		op{name: "rc/create-no-template", method: "POST", path: rcs, body: `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"bad"},"spec":{"selector":{"app":"app"}}}`},
		op{name: "rc/patch-selector", method: "PATCH", path: rcs + "/rc1", contentType: mergePatch,
			body: `{"spec":{"selector":{"app":"app","tier":"web"},"template":{"metadata":{"labels":{"tier":"web"}}}}}`},
		op{name: "rc/patch-status", method: "PATCH", path: rcs + "/rc1/status", contentType: mergePatch, body: `{"status":{"replicas":1,"readyReplicas":2}}`},
		op{name: "rc/table", method: "GET", path: rcs + "/rc1", accept: tableAccept},

		op{name: "rs/create", method: "POST", path: rss, body: workload("ReplicaSet", "rs1", sel, template(""))},
		op{name: "rs/get", method: "GET", path: rss + "/rs1"},
		op{name: "rs/create-negative-replicas", method: "POST", path: rss, body: workload("ReplicaSet", "bad", sel+`"replicas":-1,`, template(""))},
		op{name: "rs/create-selector-mismatch", method: "POST", path: rss, body: workload("ReplicaSet", "bad", `"selector":{"matchLabels":{"app":"other"}},`, template(""))},
		op{name: "rs/create-empty-selector", method: "POST", path: rss, body: workload("ReplicaSet", "bad", `"selector":{},`, template(""))},
		op{name: "rs/create-no-selector", method: "POST", path: rss, body: workload("ReplicaSet", "bad", "", template(""))},
		op{name: "rs/create-restart-never", method: "POST", path: rss, body: workload("ReplicaSet", "bad", sel, template(`"restartPolicy":"Never"`))},
		op{name: "rs/create-restart-sometimes", method: "POST", path: rss, body: workload("ReplicaSet", "bad", sel, template(`"restartPolicy":"Sometimes"`))},
		op{name: "rs/create-active-deadline", method: "POST", path: rss, body: workload("ReplicaSet", "bad", sel, template(`"activeDeadlineSeconds":10`))},
		op{name: "rs/create-bad-container", method: "POST", path: rss, body: workload("ReplicaSet", "bad", sel, `{"metadata":{"labels":{"app":"app"}},"spec":{"containers":[{"name":"Bad_Name"}]}}`)},
		op{name: "rs/create-ephemeral-containers", method: "POST", path: rss, body: workload("ReplicaSet", "bad", sel,
			`{"metadata":{"labels":{"app":"app"}},"spec":{"containers":[{"name":"app","image":" x"}],"ephemeralContainers":[{"name":"debug","image":"x"}]}}`)},
		op{name: "rs/patch-selector", method: "PATCH", path: rss + "/rs1", contentType: mergePatch,
			body: `{"spec":{"selector":{"matchLabels":{"app":"app","tier":"web"}},"template":{"metadata":{"labels":{"tier":"web"}}}}}`},
		op{name: "rs/patch-replicas", method: "PATCH", path: rss + "/rs1", contentType: mergePatch, body: `{"spec":{"replicas":3}}`},
		op{name: "rs/patch-status", method: "PATCH", path: rss + "/rs1/status", contentType: mergePatch, body: `{"status":{"replicas":-1}}`},
		op{name: "rs/patch-status-counts", method: "PATCH", path: rss + "/rs1/status", contentType: mergePatch,
			body: `{"status":{"replicas":1,"readyReplicas":2,"availableReplicas":3,"observedGeneration":-1}}`},
		op{name: "rs/patch-labels", method: "PATCH", path: rss + "/rs1", contentType: mergePatch, body: `{"metadata":{"labels":{"x":"y"}}}`},
		op{name: "rs/table", method: "GET", path: rss + "/rs1", accept: tableAccept},

		op{name: "sts/create", method: "POST", path: stss, body: workload("StatefulSet", "sts1", sel+`"serviceName":"web",`, template(""))},
		op{name: "sts/get", method: "GET", path: stss + "/sts1"},
		op{name: "sts/create-with-claims", method: "POST", path: stss, body: workload("StatefulSet", "sts2",
			sel+`"updateStrategy":{"type":"OnDelete"},"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}],`, template(""))},
		// Read back from storage, the claim templates keep their apiVersion
		// and kind, and the set may be scaled.
		op{name: "sts/get-with-claims", method: "GET", path: stss + "/sts2"},
		op{name: "sts/scale-with-claims", method: "PATCH", path: stss + "/sts2", contentType: mergePatch, body: `{"spec":{"replicas":2}}`},
		op{name: "sts/create-negative-replicas", method: "POST", path: stss, body: workload("StatefulSet", "bad", sel+`"replicas":-1,`, template(""))},
		op{name: "sts/create-empty-selector", method: "POST", path: stss, body: workload("StatefulSet", "bad", `"selector":{},`, template(""))},
		op{name: "sts/create-bad-service-name", method: "POST", path: stss, body: workload("StatefulSet", "bad", sel+`"serviceName":"Web_Service",`, template(""))},
		op{name: "sts/create-bad-strategy", method: "POST", path: stss, body: workload("StatefulSet", "bad",
			sel+`"podManagementPolicy":"Random","updateStrategy":{"type":"OnDelete","rollingUpdate":{"partition":-1}},`, template(""))},
		op{name: "sts/create-unknown-strategy", method: "POST", path: stss, body: workload("StatefulSet", "bad", sel+`"updateStrategy":{"type":"Sideways"},`, template(""))},
		op{name: "sts/create-bad-policies", method: "POST", path: stss, body: workload("StatefulSet", "bad",
			sel+`"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Keep"},"ordinals":{"start":-1},"updateStrategy":{"rollingUpdate":{"maxUnavailable":"150%"}},`, template(""))},
		op{name: "sts/create-max-unavailable-zero", method: "POST", path: stss, body: workload("StatefulSet", "bad", sel+`"updateStrategy":{"rollingUpdate":{"maxUnavailable":0}},`, template(""))},
		op{name: "sts/create-rolling-without-parameters", method: "POST", path: stss, body: workload("StatefulSet", "sts3",
			sel+`"updateStrategy":{"type":"RollingUpdate"},`, template(`"hostname":"Not_A_Label","subdomain":"web"`))},
		op{name: "sts/create-bad-name", method: "POST", path: stss, body: workload("StatefulSet", "bad.name", sel, template(""))},
		op{name: "sts/create-restart-on-failure", method: "POST", path: stss, body: workload("StatefulSet", "bad", sel, template(`"restartPolicy":"OnFailure"`))},
		op{name: "sts/update-service-name", method: "PATCH", path: stss + "/sts1", contentType: mergePatch, body: `{"spec":{"serviceName":"other"}}`},
		op{name: "sts/update-pod-management", method: "PATCH", path: stss + "/sts1", contentType: mergePatch, body: `{"spec":{"podManagementPolicy":"Parallel","selector":{"matchLabels":{"app":"app","x":"y"}}}}`},
		op{name: "sts/patch-replicas-and-template", method: "PATCH", path: stss + "/sts1", contentType: strategicPatch,
			body: `{"spec":{"replicas":2,"minReadySeconds":5,"template":{"spec":{"containers":[{"name":"app","image":"registry.example/app:2"}]}}}}`},
		op{name: "sts/update-allowed-fields", method: "PATCH", path: stss + "/sts1", contentType: mergePatch,
			body: `{"spec":{"revisionHistoryLimit":4,"ordinals":{"start":1},"updateStrategy":{"type":"OnDelete","rollingUpdate":null},"persistentVolumeClaimRetentionPolicy":{"whenScaled":"Delete"}}}`},
		op{name: "sts/patch-status-collision", method: "PATCH", path: stss + "/sts1/status", contentType: mergePatch, body: `{"status":{"collisionCount":2}}`},
		op{name: "sts/patch-status-collision-lowered", method: "PATCH", path: stss + "/sts1/status", contentType: mergePatch, body: `{"status":{"collisionCount":1}}`},
		op{name: "sts/patch-status", method: "PATCH", path: stss + "/sts1/status", contentType: mergePatch, body: `{"status":{"replicas":1,"availableReplicas":1}}`},
		op{name: "sts/table", method: "GET", path: stss + "/sts1", accept: tableAccept},

		op{name: "kubectl/get-rc-wide", kubectl: []string{"get", "rc", "-n", testNS, "-o", "wide"}},
		op{name: "kubectl/get-rs-wide", kubectl: []string{"get", "rs", "-n", testNS, "-o", "wide"}},
		op{name: "kubectl/get-sts-wide", kubectl: []string{"get", "sts", "-n", testNS, "-o", "wide"}},
	)
	add(deploymentOps()...)
	add(applyStatusOps()...)
	add(daemonSetOps()...)
	add(revisionOps()...)
	add(pdbOps()...)
	add(csrOps()...)
	add(batchOps()...)
	add(scaleOps()...)
	add(gcOps()...)
	add(endpointsOps()...)
	add(kubernetesEndpointsOps()...)
	add(controllerRoleOps()...)
	add(rbacOrderOps()...)
	add(tableOps()...)
	add(admissionRegistrationOps()...)
	add(crdOps()...)
	add(crOps()...)
	add(operatorOps()...)
	add(conversionOps()...)
	add(autoscalingOps()...)
	add(nodeOps()...)
	add(storageOps()...)

	// Limit ranges and the LimitRanger admission plugin.
	const (
		lrs       = "/api/v1/namespaces/" + limitedNS + "/limitranges"
		lrPods    = "/api/v1/namespaces/" + limitedNS + "/pods"
		limitsBad = `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"bad"},"spec":{"limits":[`
	)
	add(
		op{name: "limitrange/create", method: "POST", path: lrs, body: `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"defaults"},"spec":{"limits":[
{"type":"Container","default":{"cpu":"500m","memory":"256Mi"},"defaultRequest":{"cpu":"100m"},"max":{"cpu":"1"}},
{"type":"Pod","max":{"memory":"1Gi"}}]}}`},
		op{name: "limitrange/get", method: "GET", path: lrs + "/defaults"},
		op{name: "limitrange/list", method: "GET", path: lrs},
		op{name: "limitrange/table", method: "GET", path: lrs, accept: tableAccept},
		op{name: "limitrange/create-min-above-max", method: "POST", path: lrs, body: limitsBad + `{"type":"Container","min":{"memory":"2Gi"},"max":{"memory":"1Gi"}}]}}`},
		op{name: "limitrange/create-pod-default", method: "POST", path: lrs, body: limitsBad + `{"type":"Pod","default":{"cpu":"1"}}]}}`},
		op{name: "limitrange/create-bad-type", method: "POST", path: lrs, body: limitsBad + `{"type":"Widget","max":{"cpu":"1"}}]}}`},
		op{name: "limitrange/create-bad-ratio", method: "POST", path: lrs, body: limitsBad + `{"type":"Container","maxLimitRequestRatio":{"cpu":"500m"}}]}}`},
		op{name: "limitrange/pod-defaulted", method: "POST", path: lrPods, body: pod("sized", "")},
		op{name: "limitrange/pod-over-max", method: "POST", path: lrPods,
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"big"},"spec":{"containers":[{"name":"app","image":"x","resources":{"limits":{"cpu":"2"}}}]}}`},
		op{name: "limitrange/pod-over-pod-max", method: "POST", path: lrPods,
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"two"},"spec":{"containers":[{"name":"a","image":"x","resources":{"limits":{"memory":"768Mi"}}},{"name":"b","image":"x","resources":{"limits":{"memory":"768Mi"}}}]}}`},
		op{name: "limitrange/pod-update-not-defaulted", method: "PATCH", path: lrPods + "/sized", contentType: mergePatch, body: `{"metadata":{"labels":{"tier":"web"}}}`},
		op{name: "kubectl/get-limits", kubectl: []string{"get", "limits", "-n", limitedNS}},
		op{name: "limitrange/delete", method: "DELETE", path: lrs + "/defaults"},
	)

	// Pod Security admission: namespace labels, enforce and warn.
	const (
		secure     = "/api/v1/namespaces/" + secureNS
		securePods = secure + "/pods"
	)
	hostNetwork := func(name string) string { return pod(name, `"hostNetwork":true`) }
	add(
		op{name: "podsecurity/create-privileged-namespace", method: "POST", path: securePods, body: hostNetwork("hostnet")},
		op{name: "podsecurity/label-enforce-restricted", method: "PATCH", path: secure, contentType: mergePatch,
			body: `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`},
		op{name: "podsecurity/create-refused", method: "POST", path: securePods,
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"priv"},"spec":{"containers":[{"name":"app","image":"x","securityContext":{"privileged":true}}]}}`},
		op{name: "podsecurity/create-restricted", method: "POST", path: securePods,
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"tight"},"spec":{"securityContext":{"runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}},
"containers":[{"name":"app","image":"x","securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}]}}`},
		op{name: "podsecurity/update-unchanged-image", method: "PATCH", path: securePods + "/hostnet", contentType: mergePatch, body: `{"metadata":{"labels":{"tier":"web"}}}`},
		op{name: "podsecurity/update-image-refused", method: "PATCH", path: securePods + "/hostnet", contentType: strategicPatch,
			body: `{"spec":{"containers":[{"name":"app","image":"registry.example/app:2"}]}}`},
		op{name: "podsecurity/label-warn-baseline", method: "PATCH", path: secure, contentType: mergePatch,
			body: `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":null,"pod-security.kubernetes.io/warn":"baseline"}}}`},
		op{name: "podsecurity/create-warned", method: "POST", path: securePods, body: hostNetwork("hostnet2")},
		op{name: "podsecurity/update-image-warned", method: "PATCH", path: securePods + "/hostnet2", contentType: strategicPatch,
			body: `{"spec":{"containers":[{"name":"app","image":"registry.example/app:2"}]}}`},
		op{name: "podsecurity/label-enforce-baseline", method: "PATCH", path: secure, contentType: mergePatch,
			body: `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"baseline","pod-security.kubernetes.io/enforce-version":"v1.30"}}}`},
		op{name: "podsecurity/label-invalid", method: "PATCH", path: secure, contentType: mergePatch,
			body: `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"superuser"}}}`},
		op{name: "podsecurity/namespace-create-invalid", method: "POST", path: "/api/v1/namespaces",
			body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"badlevel","labels":{"pod-security.kubernetes.io/warn-version":"1.30"}}}`},
		op{name: "kubectl/label-namespace-restricted", kubectl: []string{"label", "namespace", secureNS, "pod-security.kubernetes.io/enforce=restricted", "--overwrite"}},
		op{name: "kubectl/run-warned", kubectl: []string{"run", "web", "-n", secureNS, "--image=registry.example/web:1", "--overrides", `{"spec":{"hostPID":true}}`}},
	)

	// Services.
	add(
		op{name: "service/kubernetes", method: "GET", path: "/api/v1/namespaces/default/services/kubernetes"},
		op{name: "service/create", method: "POST", path: ns + "/services", body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"selector":{"app":"web"},"ports":[{"port":80}]}}`},
		op{name: "service/create-node-port", method: "POST", path: ns + "/services", body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"np"},"spec":{"type":"NodePort","selector":{"app":"web"},"ports":[{"port":80,"targetPort":8080}]}}`},
		op{name: "service/create-headless", method: "POST", path: ns + "/services", body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"headless"},"spec":{"clusterIP":"None","selector":{"app":"web"},"ports":[{"port":80}]}}`},
		op{name: "service/create-ip-out-of-range", method: "POST", path: ns + "/services", body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"outside"},"spec":{"clusterIP":"192.168.0.10","ports":[{"port":80}]}}`},
		op{name: "service/create-no-ports", method: "POST", path: ns + "/services", body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"noports"},"spec":{"selector":{"app":"web"}}}`},
		op{name: "service/create-bad-port", method: "POST", path: ns + "/services", body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"badport"},"spec":{"ports":[{"port":0}]}}`},
		op{name: "service/update-cluster-ip", method: "PATCH", path: ns + "/services/web", contentType: mergePatch, body: `{"spec":{"clusterIP":"10.96.100.100","clusterIPs":["10.96.100.100"]}}`},
		op{name: "service/delete", method: "DELETE", path: ns + "/services/web"},
	)

	// Namespaces.
	add(
		op{name: "namespace/create", method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"scratch"}}`},
		op{name: "namespace/get", method: "GET", path: "/api/v1/namespaces/scratch"},
		op{name: "namespace/create-bad-name", method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"Bad.Name"}}`},
		op{name: "namespace/delete-system", method: "DELETE", path: "/api/v1/namespaces/kube-system"},
		op{name: "namespace/delete", method: "DELETE", path: "/api/v1/namespaces/scratch"},
	)

	// Service accounts and tokens.
	add(
		op{name: "serviceaccount/create", method: "POST", path: ns + "/serviceaccounts", body: `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"}}`},
		op{name: "serviceaccount/token", method: "POST", path: ns + "/serviceaccounts/robot/token", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":3600}}`},
		op{name: "serviceaccount/token-too-short", method: "POST", path: ns + "/serviceaccounts/robot/token", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":60}}`},
		op{name: "serviceaccount/token-stale-uid", method: "POST", path: ns + "/serviceaccounts/robot/token",
			body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","metadata":{"uid":"0b7d6f1e-0000-4000-8000-000000000000"},"spec":{}}`},
		op{name: "serviceaccount/token-missing", method: "POST", path: ns + "/serviceaccounts/missing/token", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`},
	)

	// Nodes.
	add(
		op{name: "node/create", method: "POST", path: "/api/v1/nodes", body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-9","labels":{"zone":"a"}}}`},
		op{name: "node/get", method: "GET", path: "/api/v1/nodes/node-9"},
		op{name: "node/patch-taint", method: "PATCH", path: "/api/v1/nodes/node-9", contentType: strategicPatch, body: `{"spec":{"taints":[{"key":"k","value":"v","effect":"NoSchedule"}]}}`},
		op{name: "node/bad-taint", method: "PATCH", path: "/api/v1/nodes/node-9", contentType: strategicPatch, body: `{"spec":{"taints":[{"key":"k2","effect":"Sometimes"}]}}`},
		op{name: "node/delete", method: "DELETE", path: "/api/v1/nodes/node-9"},
	)

	// RBAC.
	add(
		op{name: "rbac/role-create", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/" + testNS + "/roles",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"reader"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]}]}`},
		op{name: "rbac/role-no-verbs", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/" + testNS + "/roles",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"noverbs"},"rules":[{"apiGroups":[""],"resources":["pods"]}]}`},
		op{name: "rbac/rolebinding-create", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/" + testNS + "/rolebindings",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"read"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"reader"},"subjects":[{"kind":"User","name":"jane","apiGroup":"rbac.authorization.k8s.io"}]}`},
		op{name: "rbac/rolebinding-bad-subject", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/" + testNS + "/rolebindings",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"bad"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"reader"},"subjects":[{"kind":"Robot","name":"r2"}]}`},
		op{name: "rbac/rolebinding-change-roleref", method: "PATCH", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/" + testNS + "/rolebindings/read", contentType: mergePatch,
			body: `{"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}}`},
		// A server-side apply that creates needs create, not patch alone
		// (B.8): patcher may get and patch config maps, not create them.
		op{name: "rbac/role-patcher", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/" + testNS + "/roles",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"patcher"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","patch"]}]}`},
		op{name: "rbac/rolebinding-patcher", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/" + testNS + "/rolebindings",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"patcher"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"patcher"},"subjects":[{"kind":"User","name":"patcher","apiGroup":"rbac.authorization.k8s.io"}]}`},
		op{name: "kubectl/apply-server-side-creates-as-patcher", kubectl: []string{"apply", "--server-side", "-f", "-", "-n", testNS, "--as=patcher"},
			stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: by-patcher\ndata:\n  a: \"1\"\n"},
		op{name: "configmap/get-by-patcher", method: "GET", path: "/api/v1/namespaces/" + testNS + "/configmaps/by-patcher"},
		op{name: "configmap/create-for-patcher", method: "POST", path: "/api/v1/namespaces/" + testNS + "/configmaps",
			body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"for-patcher"},"data":{"a":"1"}}`},
		op{name: "kubectl/apply-server-side-updates-as-patcher", kubectl: []string{"apply", "--server-side", "-f", "-", "-n", testNS, "--as=patcher"},
			stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: for-patcher\ndata:\n  z: \"1\"\n"},
		op{name: "rbac/clusterrole-get-view", method: "GET", path: "/apis/rbac.authorization.k8s.io/v1/clusterroles/view"},
		op{name: "rbac/clusterrole-get-edit", method: "GET", path: "/apis/rbac.authorization.k8s.io/v1/clusterroles/edit"},
		op{name: "rbac/clusterrolebinding-get-cluster-admin", method: "GET", path: "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cluster-admin"},
		op{name: "rbac/role-get-bootstrap-signer", method: "GET", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/system:controller:bootstrap-signer"},
		op{name: "rbac/rolebinding-get-bootstrap-signer", method: "GET", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/system:controller:bootstrap-signer"},
		op{name: "rbac/access-review", method: "POST", path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"jane","resourceAttributes":{"namespace":"` + testNS + `","verb":"get","resource":"pods"}}}`},
		op{name: "rbac/self-review", method: "POST", path: "/apis/authentication.k8s.io/v1/selfsubjectreviews", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`},
		op{name: "rbac/access-review-labelled", method: "POST", path: "/apis/authorization.k8s.io/v1/subjectaccessreviews?fieldManager=reviewer",
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","metadata":{"name":"mine","labels":{"a":"b"}},"spec":{"groups":["devs","ops"],"nonResourceAttributes":{"path":"/healthz","verb":"get"}}}`},
		op{name: "rbac/self-access-review", method: "POST", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"namespace":"` + testNS + `","verb":"delete","resource":"secrets"}}}`},
		op{name: "rbac/local-access-review", method: "POST", path: "/apis/authorization.k8s.io/v1/namespaces/" + testNS + "/localsubjectaccessreviews",
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"` + testNS + `"},"spec":{"user":"jane","resourceAttributes":{"namespace":"` + testNS + `","verb":"list","resource":"configmaps"}}}`},
		op{name: "rbac/self-access-review-bad", method: "POST", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{}}`},
		op{name: "rbac/self-access-review-both", method: "POST", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"},"nonResourceAttributes":{"path":"/api","verb":"get"}}}`},
		op{name: "rbac/access-review-nobody", method: "POST", path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"nonResourceAttributes":{"path":"/x","verb":"get"}}}`},
		op{name: "rbac/access-review-namespaced-path", method: "POST", path: "/apis/authorization.k8s.io/v1/namespaces/" + testNS + "/subjectaccessreviews",
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"jane","resourceAttributes":{"verb":"get","resource":"pods"}}}`},
		op{name: "rbac/local-access-review-cluster-path", method: "POST", path: "/apis/authorization.k8s.io/v1/localsubjectaccessreviews",
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"jane","resourceAttributes":{"verb":"get","resource":"pods"}}}`},
		op{name: "rbac/local-access-review-bad", method: "POST", path: "/apis/authorization.k8s.io/v1/namespaces/" + testNS + "/localsubjectaccessreviews",
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"name":"x"},"spec":{"user":"jane","resourceAttributes":{"namespace":"other","verb":"list","resource":"configmaps"}}}`},
		op{name: "rbac/local-access-review-non-resource", method: "POST", path: "/apis/authorization.k8s.io/v1/namespaces/" + testNS + "/localsubjectaccessreviews",
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"jane","nonResourceAttributes":{"path":"/healthz","verb":"get"}}}`},
		op{name: "rbac/local-access-review-other-namespace", method: "POST", path: "/apis/authorization.k8s.io/v1/namespaces/" + testNS + "/localsubjectaccessreviews",
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"default"},"spec":{"user":"jane","resourceAttributes":{"namespace":"default","verb":"list","resource":"configmaps"}}}`},
	)

	// kubectl, as users type it.
	k := func(name string, args ...string) op { return op{name: "kubectl/" + name, kubectl: args} }
	add(
		k("run", "run", "web", "-n", testNS, "--image=registry.example/web:1"),
		k("get-pod", "get", "pod", "web", "-n", testNS),
		k("get-pod-wide", "get", "pod", "web", "-n", testNS, "-o", "wide"),
		k("get-pod-yaml-spec", "get", "pod", "web", "-n", testNS, "-o", "jsonpath={.spec.containers[0].name} {.spec.restartPolicy} {.spec.dnsPolicy} {.spec.schedulerName} {.spec.tolerations}"),
		k("get-missing", "get", "pod", "missing", "-n", testNS),
		k("get-unknown-kind", "get", "widgets"),
		op{name: "kubectl/create-invalid-pod", kubectl: []string{"create", "-f", "-", "-n", testNS},
			stdin: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: sometimes\nspec:\n  restartPolicy: Sometimes\n  containers:\n  - name: app\n    image: registry.example/app:1\n"},
		k("get-raw-metadata-list", "get", "--raw", "/api/v1/namespaces/"+testNS+"/serviceaccounts?as=PartialObjectMetadataList"),
		k("create-deployment", "create", "deployment", "x", "--image=y", "-n", testNS),
		k("create-ingress", "create", "ingress", "x", "--rule=example.com/=x:80", "-n", testNS),
		k("create-configmap", "create", "configmap", "cfg", "-n", testNS, "--from-literal=a=1"),
		k("get-configmap-json", "get", "configmap", "cfg", "-n", testNS, "-o", "jsonpath={.data}"),
		k("label", "label", "configmap", "cfg", "-n", testNS, "tier=db"),
		k("annotate", "annotate", "configmap", "cfg", "-n", testNS, "note=hi"),
		k("get-selector", "get", "configmaps", "-n", testNS, "-l", "tier=db"),
		// before the patch: kubectl describes a map of several keys in
		// random order.
		k("describe-configmap", "describe", "configmap", "cfg", "-n", testNS),
		k("patch", "patch", "configmap", "cfg", "-n", testNS, "--type=merge", "-p", `{"data":{"b":"2"}}`),
		k("create-secret", "create", "secret", "generic", "sec", "-n", testNS, "--from-literal=k=v"),
		k("create-service", "create", "service", "clusterip", "svc", "-n", testNS, "--tcp=80:8080"),
		k("get-service-ports", "get", "service", "svc", "-n", testNS, "-o", "jsonpath={.spec.ports} {.spec.type} {.spec.sessionAffinity}"),
		k("create-namespace", "create", "namespace", "kubectl-made"),
		op{name: "kubectl/create-access-review", kubectl: []string{"create", "-f", "-", "-o", "json"},
			stdin: `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"jane","resourceAttributes":{"namespace":"default","verb":"get","resource":"pods"}}}`},
		op{name: "kubectl/create-access-review-unvalidated", kubectl: []string{"create", "--validate=false", "-f", "-", "-o", "json"},
			stdin: `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"jane","resourceAttributes":{"namespace":"default","verb":"get","resource":"pods"}}}`},
		k("auth-can-i", "auth", "can-i", "create", "pods"),
		k("auth-can-i-list", "auth", "can-i", "--list", "-n", testNS),
		k("auth-whoami", "auth", "whoami"),
		k("create-token", "create", "token", "default", "-n", testNS),
		k("api-versions", "api-versions"),
		k("api-resources", "api-resources"),
		k("explain", "explain", "pod.spec.restartPolicy"),
		k("explain-resources", "explain", "pod.spec.containers.resources"),
		k("explain-statefulset-policy", "explain", "statefulset.spec.podManagementPolicy"),
		op{name: "kubectl/apply", kubectl: []string{"apply", "-f", "-", "-n", testNS},
			stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied-by-kubectl\ndata:\n  a: \"1\"\n"},
		k("delete-configmap", "delete", "configmap", "cfg", "-n", testNS),
		k("delete-missing", "delete", "configmap", "cfg", "-n", testNS),
	)
	// Last, so that no other op meets the policies and webhooks they apply.
	add(dynamicAdmissionOps()...)
	add(admfixOps()...)
	add(crdEquivalentOps()...)
	add(gatewayAPIOps()...)
	add(corekindsOps()...)
	add(draOps()...)
	add(certificateOps()...)
	add(networkingOps()...)
	add(flowControlOps()...)
	add(apiRegistrationOps()...)
	add(podsubsOps()...)
	for i := range ops {
		if ops[i].method == "" && ops[i].kubectl == nil {
			panic("op " + ops[i].name + " has neither a method nor a kubectl command")
		}
		if strings.ContainsAny(ops[i].name, " \t") {
			panic("op name with a space: " + ops[i].name)
		}
	}
	return ops
}
