package conformance

import (
	"slices"
	"strings"
)

// quotaNS holds the ResourceQuotas whose admission the operations check,
// so that no other operation's pods are charged or refused.
const quotaNS = "quotas"

// corekindsOps are the operations on PodTemplates, ResourceQuotas (with
// the ResourceQuota admission plugin), ComponentStatuses and the pod
// subresources besides the common ones (D.14).
func corekindsOps() []op {
	const (
		templates = ns + "/podtemplates"
		qns       = "/api/v1/namespaces/" + quotaNS
		quotas    = qns + "/resourcequotas"
	)
	podTemplate := func(name, spec string) string {
		return `{"apiVersion":"v1","kind":"PodTemplate","metadata":{"name":"` + name + `"},"template":` + template(spec) + `}`
	}
	quota := func(name, spec string) string {
		return `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
	}
	quotaPod := func(name, cpu string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"serviceAccountName":"runner","automountServiceAccountToken":false,` +
			`"containers":[{"name":"app","image":"registry.example/app:1","resources":{"requests":{"cpu":"` + cpu + `","memory":"64Mi"},"limits":{"cpu":"` + cpu + `","memory":"64Mi"}}}]}}`
	}
	return []op{
		{name: "corekinds/discovery-core-v1", method: "GET", path: "/api/v1", project: coreEntries},
		{name: "corekinds/discovery-aggregated", method: "GET", path: "/api", accept: discoveryV2, project: aggregatedCoreEntries},
		{name: "corekinds/openapi-v3-schemas", method: "GET", path: "/openapi/v3/api/v1",
			project: openAPISchemas("components", "io.k8s.api.core.v1.PodTemplate", "io.k8s.api.core.v1.ResourceQuota", "io.k8s.api.core.v1.ComponentStatus")},

		// PodTemplates
		{name: "podtemplate/create", method: "POST", path: templates, body: podTemplate("pt1", "")},
		{name: "podtemplate/get", method: "GET", path: templates + "/pt1"},
		{name: "podtemplate/create-invalid", method: "POST", path: templates, body: podTemplate("pt-bad", `"restartPolicy":"Sometimes","containers":[{"name":"Bad_Name"}]`)},
		{name: "podtemplate/create-ephemeral", method: "POST", path: templates,
			body: podTemplate("pt-eph", `"ephemeralContainers":[{"name":"dbg","image":"busybox"}]`)},
		{name: "podtemplate/create-negative-grace", method: "POST", path: templates, body: podTemplate("pt-grace", `"terminationGracePeriodSeconds":-5`)},
		{name: "podtemplate/patch-template", method: "PATCH", path: templates + "/pt1", contentType: mergePatch,
			body: `{"template":{"metadata":{"labels":{"tier":"web"}}}}`},
		{name: "podtemplate/patch-labels-only", method: "PATCH", path: templates + "/pt1", contentType: mergePatch,
			body: `{"metadata":{"labels":{"x":"y"}}}`},
		{name: "podtemplate/list", method: "GET", path: templates},
		{name: "podtemplate/table", method: "GET", path: templates, accept: tableAccept},
		{name: "kubectl/get-podtemplates", kubectl: []string{"get", "podtemplates", "-n", testNS}},

		// ResourceQuotas, in a namespace of their own
		{name: "quota/namespace", method: "POST", path: "/api/v1/namespaces",
			body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + quotaNS + `"}}`},
		{name: "quota/service-account", method: "POST", path: qns + "/serviceaccounts",
			body: `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"runner"}}`},
		{name: "quota/create", method: "POST", path: quotas, body: quota("q1", `"hard":{"pods":"10","requests.cpu":"2","limits.memory":"1Gi","count/configmaps":"5"}`)},
		{name: "quota/create-warning", method: "POST", path: quotas, body: quota("q-warn", `"hard":{"requests.cpu":"2","limits.cpu":"1"}`)},
		{name: "quota/create-status-dropped", method: "POST", path: quotas,
			body: `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q-st"},"spec":{"hard":{"pods":"1"}},"status":{"hard":{"pods":"1"}}}`},
		{name: "quota/get", method: "GET", path: quotas + "/q-st"},
		// kube walks spec.hard in no fixed order: one bad entry each
		{name: "quota/create-unknown-resource", method: "POST", path: quotas, body: quota("q-bad", `"hard":{"widgets":"1"}`)},
		{name: "quota/create-fractional-pods", method: "POST", path: quotas, body: quota("q-bad", `"hard":{"pods":"1500m"}`)},
		{name: "quota/create-storage", method: "POST", path: quotas, body: quota("q-bad", `"hard":{"storage":"1Gi"}`)},
		{name: "quota/create-negative", method: "POST", path: quotas, body: quota("q-bad", `"hard":{"cpu":"-1"}`)},
		{name: "quota/create-fractional-extended", method: "POST", path: quotas, body: quota("q-bad", `"hard":{"example.com/gpu":"500m"}`)},
		{name: "quota/create-bad-name", method: "POST", path: quotas, body: quota("Bad_Name", `"hard":{"pods":"1"}`)},
		{name: "quota/create-bad-scopes", method: "POST", path: quotas,
			body: quota("q-scopes", `"hard":{"requests.cpu":"1","services":"2"},"scopes":["BestEffort","NotBestEffort","Sometimes"]`)},
		{name: "quota/create-bad-selector", method: "POST", path: quotas,
			body: quota("q-sel", `"hard":{"pods":"1"},"scopeSelector":{"matchExpressions":[{"scopeName":"Terminating","operator":"In","values":["x"]},{"scopeName":"PriorityClass","operator":"In"},{"scopeName":"BestEffort","operator":"Exists","values":["a"]},{"scopeName":"NotBestEffort","operator":"Maybe"}]}`)},
		{name: "quota/create-scoped", method: "POST", path: quotas,
			body: quota("q-scoped", `"hard":{"pods":"3"},"scopes":["NotTerminating"]`)},
		{name: "quota/update-scopes", method: "PATCH", path: quotas + "/q-scoped", contentType: mergePatch, body: `{"spec":{"scopes":["Terminating"]}}`},
		{name: "quota/update-spec-keeps-status", method: "PATCH", path: quotas + "/q1", contentType: mergePatch,
			body: `{"spec":{"hard":{"pods":"20"}},"status":{"hard":{"pods":"20"}}}`},
		{name: "quota/status-patch", method: "PATCH", path: quotas + "/q1/status", contentType: mergePatch,
			body: `{"spec":{"hard":{"pods":"1"}},"status":{"hard":{"pods":"20","requests.cpu":"2","limits.memory":"1Gi"},"used":{"pods":"2","requests.cpu":"500m","limits.memory":"128Mi"}}}`},
		// One bad entry per op: the entries of a map are checked in the
		// map's order, which is random in both servers.
		{name: "quota/status-patch-invalid", method: "PATCH", path: quotas + "/q1/status", contentType: mergePatch,
			body: `{"status":{"used":{"widgets":"1"}}}`},
		{name: "quota/status-patch-negative", method: "PATCH", path: quotas + "/q1/status", contentType: mergePatch,
			body: `{"status":{"used":{"pods":"-1"}}}`},
		{name: "quota/status-get", method: "GET", path: quotas + "/q1/status"},
		{name: "quota/list", method: "GET", path: quotas},
		{name: "quota/table", method: "GET", path: quotas, accept: tableAccept},
		{name: "quota/table-one", method: "GET", path: quotas + "/q1", accept: tableAccept},
		{name: "quota/field-selector", method: "GET", path: quotas + q("fieldSelector", "metadata.name=q1")},
		{name: "kubectl/get-quota", kubectl: []string{"get", "quota", "-n", quotaNS}},
		{name: "kubectl/describe-quota", kubectl: []string{"describe", "quota", "q1", "-n", quotaNS}},
		{name: "kubectl/create-quota", kubectl: []string{"create", "quota", "kq", "--hard=pods=4,services=2,requests.cpu=1", "--scopes=NotBestEffort", "-n", quotaNS}},
		{name: "kubectl/create-quota-bad", kubectl: []string{"create", "quota", "kq2", "--hard=pods=4,widgets=2", "-n", testNS}},
		{name: "quota/delete", method: "DELETE", path: quotas + "/q-warn"},
		{name: "quota/delete-all", method: "DELETE", path: quotas},

		// The ResourceQuota admission plugin, in a namespace of its own.
		{name: "quota-admission/create-quota", method: "POST", path: qns + "/resourcequotas",
			body: quota("compute", `"hard":{"pods":"2","requests.cpu":"1","limits.memory":"200Mi","configmaps":"1","count/secrets":"1"}`)},
		// without status.hard the quota limits nothing; with it but no
		// status.used, it refuses what it cannot count
		{name: "quota-admission/pod-before-status", method: "POST", path: qns + "/pods", body: quotaPod("p0", "100m")},
		{name: "quota-admission/set-status-hard", method: "PATCH", path: qns + "/resourcequotas/compute/status", contentType: mergePatch,
			body: `{"status":{"hard":{"pods":"2","requests.cpu":"1","limits.memory":"200Mi","configmaps":"1","count/secrets":"1"}}}`},
		{name: "quota-admission/pod-status-unknown", method: "POST", path: qns + "/pods", body: quotaPod("p00", "100m")},
		{name: "quota-admission/set-status", method: "PATCH", path: qns + "/resourcequotas/compute/status", contentType: mergePatch,
			body: `{"status":{"hard":{"pods":"2","requests.cpu":"1","limits.memory":"200Mi","configmaps":"1","count/secrets":"1"},"used":{"pods":"0","requests.cpu":"0","limits.memory":"0","configmaps":"0","count/secrets":"0"}}}`},
		{name: "quota-admission/pod-fits", method: "POST", path: qns + "/pods", body: quotaPod("p1", "600m")},
		{name: "quota-admission/charged", method: "GET", path: qns + "/resourcequotas/compute"},
		{name: "quota-admission/pod-exceeds", method: "POST", path: qns + "/pods", body: quotaPod("p2", "500m")},
		{name: "quota-admission/pod-no-requests", method: "POST", path: qns + "/pods", body: pod("p3", `"serviceAccountName":"runner","automountServiceAccountToken":false`)},
		{name: "quota-admission/pod-dry-run", method: "POST", path: qns + "/pods" + q("dryRun", "All"), body: quotaPod("p4", "100m")},
		{name: "quota-admission/configmap-fits", method: "POST", path: qns + "/configmaps", body: configMap("c1", "")},
		{name: "quota-admission/configmap-exceeds", method: "POST", path: qns + "/configmaps", body: configMap("c2", "")},
		{name: "quota-admission/secret-fits", method: "POST", path: qns + "/secrets", body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1"}}`},
		{name: "quota-admission/secret-exceeds", method: "POST", path: qns + "/secrets", body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s2"}}`},
		{name: "quota-admission/charged-after", method: "GET", path: qns + "/resourcequotas/compute"},
		{name: "kubectl/describe-quota-charged", kubectl: []string{"describe", "quota", "compute", "-n", quotaNS}},

		// ComponentStatuses: read only, deprecated; kube lists them in no
		// fixed order, so the lists select one by name.
		{name: "cs/get-scheduler", method: "GET", path: "/api/v1/componentstatuses/scheduler"},
		{name: "cs/get-etcd", method: "GET", path: "/api/v1/componentstatuses/etcd-0"},
		{name: "cs/get-missing", method: "GET", path: "/api/v1/componentstatuses/missing"},
		{name: "cs/list-one", method: "GET", path: "/api/v1/componentstatuses" + q("fieldSelector", "metadata.name=controller-manager")},
		{name: "cs/table", method: "GET", path: "/api/v1/componentstatuses/etcd-0", accept: tableAccept},
		{name: "cs/create", method: "POST", path: "/api/v1/componentstatuses", body: `{"apiVersion":"v1","kind":"ComponentStatus","metadata":{"name":"x"}}`},
		{name: "cs/delete", method: "DELETE", path: "/api/v1/componentstatuses/scheduler"},
		{name: "kubectl/get-cs", kubectl: []string{"get", "cs", "etcd-0"}},
	}
}

// coreNames are the core resources (and their subresources) the
// corekinds operations compare in discovery. Pods are left out: kubegate
// does not yet serve their ephemeralcontainers, resize and proxy.
var coreNames = []string{"podtemplates", "resourcequotas", "componentstatuses"}

func coreEntries(doc any) any {
	m, _ := doc.(map[string]any)
	rs, _ := m["resources"].([]any)
	var out []any
	for _, r := range rs {
		e, _ := r.(map[string]any)
		name, _ := e["name"].(string)
		if base, _, _ := strings.Cut(name, "/"); slices.Contains(coreNames, base) {
			out = append(out, e)
		}
	}
	return out
}

func aggregatedCoreEntries(doc any) any {
	m, _ := doc.(map[string]any)
	items, _ := m["items"].([]any)
	if len(items) == 0 {
		return nil
	}
	v, _ := dig(items[0], "versions").([]any)
	if len(v) == 0 {
		return nil
	}
	rs, _ := v[0].(map[string]any)["resources"].([]any)
	var out []any
	for _, r := range rs {
		e, _ := r.(map[string]any)
		if name, _ := e["resource"].(string); slices.Contains(coreNames, name) {
			out = append(out, e)
		}
	}
	return out
}
