package conformance

import "strings"

// applyStatusOps are server-side applies of manifests that carry a status,
// as `kubectl get -o yaml` exports them (B.8): for a kind with a status
// subresource the status is a reset field of the object itself, which the
// applier neither owns nor conflicts on, and the spec one of the status
// subresource; a kind without a status has no such field.
func applyStatusOps() []op {
	const deploys = "/apis/apps/v1/namespaces/" + testNS + "/deployments"
	deploy := func(labels, status string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: exported\n  labels: {" + labels + "}\n" +
			"spec:\n  replicas: 1\n  selector: {matchLabels: {app: app}}\n  template:\n    metadata: {labels: {app: app}}\n" +
			"    spec: {containers: [{name: app, image: registry.example/app:1}]}\n" + status
	}
	const stale = "status: {replicas: 7, readyReplicas: 5, observedGeneration: 1}\n"
	apply := func(name, path, manager, body string) op {
		return op{name: name, method: "PATCH", path: path + q("fieldManager", manager) + "&force=false", contentType: applyPatch, body: body}
	}
	const pods = ns + "/pods"
	applied := func(status string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: applied\n  labels: {app: applied}\n" +
			"spec: {containers: [{name: app, image: registry.example/app:1}]}\n" + status
	}
	return []op{
		// An apply that creates: the status is cleared and nobody's.
		apply("apply-status/deploy-create", deploys+"/exported", "kubectl", deploy("tier: web", stale)),
		op{name: "apply-status/deploy-status-writer", method: "PATCH", path: deploys + "/exported/status" + q("fieldManager", "status-writer"), contentType: mergePatch,
			body: `{"status":{"replicas":2,"readyReplicas":1,"observedGeneration":1}}`},
		// The exported status differs from the writer's: no conflict, the
		// status stays.
		apply("apply-status/deploy-stale-status", deploys+"/exported", "kubectl", deploy("tier: web", stale)),
		// Another applier conflicts on kubectl's label only.
		apply("apply-status/deploy-other-manager-conflict", deploys+"/exported", "other", deploy("tier: api", stale)),
		apply("apply-status/deploy-other-manager", deploys+"/exported", "other", deploy("tier: web", "status: {replicas: 9}\n")),
		// Through the status subresource the spec is the reset field, and
		// a Deployment's labels too.
		apply("apply-status/deploy-status-subresource", deploys+"/exported/status", "status-applier",
			strings.Replace(deploy("tier: db", "status: {replicas: 3, readyReplicas: 3, observedGeneration: 1}\n"), "replicas: 1", "replicas: 4", 1)),
		{name: "apply-status/deploy-get", method: "GET", path: deploys + "/exported"},
		// A pod's status is reset likewise; its status subresource resets
		// the spec.
		apply("apply-status/pod-create", pods+"/applied", "kubectl", applied("status: {phase: Running, podIP: 10.0.0.9}\n")),
		op{name: "apply-status/pod-status-writer", method: "PATCH", path: pods + "/applied/status" + q("fieldManager", "kubelet"), contentType: mergePatch,
			body: `{"status":{"phase":"Running","hostIP":"10.0.0.1"}}`},
		apply("apply-status/pod-stale-status", pods+"/applied", "kubectl", applied("status: {phase: Succeeded, hostIP: 10.0.0.2}\n")),
		apply("apply-status/pod-status-subresource", pods+"/applied/status", "kubelet-apply",
			strings.Replace(applied("status: {phase: Running, hostIP: 10.0.0.1, podIP: 10.0.0.3}\n"), "image: registry.example/app:1", "image: registry.example/app:2", 1)),
		// A config map has no status: the field is unknown to its schema.
		apply("apply-status/configmap-with-status", ns+"/configmaps/with-status", "kubectl",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: with-status\ndata: {a: \"1\"}\nstatus: {phase: Done}\n"),
		// kubectl: an exported deployment with a stale status is applied
		// server-side without a conflict, and diffed.
		{name: "kubectl/apply-server-side-exported-status", kubectl: []string{"apply", "--server-side", "-f", "-", "-n", testNS},
			stdin: deploy("tier: web", "status: {replicas: 11, availableReplicas: 11}\n")},
		{name: "kubectl/diff-server-side-exported-status", kubectl: []string{"diff", "--server-side", "-f", "-", "-n", testNS},
			stdin: deploy("tier: web, extra: x", "status: {replicas: 12}\n")},
	}
}
