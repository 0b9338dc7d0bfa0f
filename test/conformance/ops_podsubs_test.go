package conformance

// podsubsNS is the namespace of the pods' ephemeralcontainers, resize and
// proxy operations.
const podsubsNS = "podsubs"

// podsubsOps are the pods' ephemeralcontainers and resize subresources,
// with their refusals, and the proxy of pods, nodes and services for
// targets no server can reach (D.9).
func podsubsOps() []op {
	const (
		psns = "/api/v1/namespaces/" + podsubsNS
		pods = psns + "/pods"
		smp  = "application/strategic-merge-patch+json"
	)
	sized := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"sized"},"spec":{"serviceAccountName":"runner","automountServiceAccountToken":false,` +
		`"containers":[{"name":"app","image":"registry.example/app:1","ports":[{"containerPort":8080}],` +
		`"resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"200m","memory":"128Mi"}}}]}}`
	debugger := func(name, extra string) string {
		return `{"spec":{"ephemeralContainers":[{"name":"` + name + `","image":"busybox","stdin":true,"tty":true` + extra + `}]}}`
	}
	resize := func(resources string) string {
		return `{"spec":{"containers":[{"name":"app","resources":` + resources + `}]}}`
	}
	return []op{
		{name: "podsubs/namespace", method: "POST", path: "/api/v1/namespaces",
			body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + podsubsNS + `"}}`},
		{name: "podsubs/service-account", method: "POST", path: psns + "/serviceaccounts",
			body: `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"runner"}}`},
		{name: "podsubs/create", method: "POST", path: pods, body: sized},

		{name: "ephemeral/get", method: "GET", path: pods + "/sized/ephemeralcontainers"},
		{name: "ephemeral/add", method: "PATCH", path: pods + "/sized/ephemeralcontainers", contentType: smp,
			body: debugger("debugger", `,"targetContainerName":"app"`)},
		{name: "ephemeral/get-after", method: "GET", path: pods + "/sized/ephemeralcontainers"},
		{name: "ephemeral/remove", method: "PATCH", path: pods + "/sized/ephemeralcontainers", contentType: jsonPatch,
			body: `[{"op":"remove","path":"/spec/ephemeralContainers/0"}]`},
		{name: "ephemeral/duplicate", method: "PATCH", path: pods + "/sized/ephemeralcontainers", contentType: smp,
			body: debugger("app", `,"targetContainerName":"nope"`)},
		{name: "ephemeral/forbidden-fields", method: "PATCH", path: pods + "/sized/ephemeralcontainers", contentType: smp,
			body: debugger("d2", `,"ports":[{"containerPort":80}],"resources":{"limits":{"cpu":"1"}},"readinessProbe":{"exec":{"command":["true"]}}`)},
		{name: "ephemeral/labels-kept", method: "PATCH", path: pods + "/sized/ephemeralcontainers", contentType: mergePatch,
			body: `{"metadata":{"labels":{"changed":"yes"}}}`},

		{name: "resize/get", method: "GET", path: pods + "/sized/resize"},
		{name: "resize/cpu", method: "PATCH", path: pods + "/sized/resize", contentType: smp,
			body: resize(`{"requests":{"cpu":"150m"},"limits":{"cpu":"300m"}}`)},
		{name: "resize/limit-removed", method: "PATCH", path: pods + "/sized/resize", contentType: smp,
			body: resize(`{"limits":{"memory":null}}`)},
		{name: "resize/qos-change", method: "PATCH", path: pods + "/sized/resize", contentType: smp,
			body: resize(`{"requests":{"cpu":"300m","memory":"128Mi"}}`)},
		{name: "resize/other-resource", method: "PATCH", path: pods + "/sized/resize", contentType: smp,
			body: resize(`{"requests":{"ephemeral-storage":"1Gi"}}`)},
		{name: "resize/container-added", method: "PATCH", path: pods + "/sized/resize", contentType: smp,
			body: `{"spec":{"containers":[{"name":"two","image":"x"}]}}`},
		{name: "resize/policy", method: "PATCH", path: pods + "/sized/resize", contentType: smp,
			body: `{"spec":{"containers":[{"name":"app","resizePolicy":[{"resourceName":"cpu","restartPolicy":"RestartContainer"}]}]}}`},
		{name: "resize/get-after", method: "GET", path: pods + "/sized"},

		{name: "proxy/pod-without-ip", method: "GET", path: pods + "/sized/proxy/healthz"},
		{name: "proxy/pod-missing", method: "GET", path: pods + "/gone/proxy"},
		{name: "proxy/pod-invalid-name", method: "GET", path: pods + "/a:b:c:d/proxy"},
		{name: "proxy/node-missing", method: "GET", path: "/api/v1/nodes/nowhere/proxy/stats"},
		{name: "proxy/service-create", method: "POST", path: psns + "/services",
			body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"name":"http","port":80}]}}`},
		{name: "proxy/service-no-endpoints", method: "GET", path: psns + "/services/web/proxy/"},
		{name: "proxy/service-port-missing", method: "DELETE", path: psns + "/services/web:81/proxy"},
		{name: "proxy/service-missing", method: "GET", path: psns + "/services/gone/proxy"},
		{name: "podsubs/delete", method: "DELETE", path: pods + "/sized?gracePeriodSeconds=0"},
	}
}
