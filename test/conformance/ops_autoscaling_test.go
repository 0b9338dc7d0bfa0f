package conformance

// autoscalingOps are the HorizontalPodAutoscaler operations: one object
// seen through autoscaling/v2 and autoscaling/v1, written in one and read
// in the other, its defaults, refusals, status, Table and kubectl. No
// autoscaler controller runs next to either server.
func autoscalingOps() []op {
	const (
		v2 = "/apis/autoscaling/v2/namespaces/" + testNS + "/horizontalpodautoscalers"
		v1 = "/apis/autoscaling/v1/namespaces/" + testNS + "/horizontalpodautoscalers"
	)
	hpa := func(version, name, spec string) string {
		return `{"apiVersion":"autoscaling/` + version + `","kind":"HorizontalPodAutoscaler","metadata":{"name":"` + name +
			`"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},` + spec + `}}`
	}
	return []op{
		{name: "autoscaling/discovery-v2", method: "GET", path: "/apis/autoscaling/v2"},
		{name: "autoscaling/discovery-v1", method: "GET", path: "/apis/autoscaling/v1"},
		{name: "autoscaling/discovery-group", method: "GET", path: "/apis/autoscaling"},
		{name: "autoscaling/discovery-aggregated", method: "GET", path: "/apis", accept: discoveryV2, project: aggregatedGroup("autoscaling")},
		{name: "autoscaling/openapi-v2", method: "GET", path: "/openapi/v3/apis/autoscaling/v2",
			project: openAPISchemas("components", "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler", "io.k8s.api.autoscaling.v2.MetricSpec")},
		{name: "autoscaling/openapi-v1", method: "GET", path: "/openapi/v3/apis/autoscaling/v1",
			project: openAPISchemas("components", "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler")},

		{name: "autoscaling/create-v2-defaults", method: "POST", path: v2, body: hpa("v2", "plain", `"maxReplicas":5`)},
		{name: "autoscaling/get-v1-defaults", method: "GET", path: v1 + "/plain"},
		{name: "autoscaling/create-v2-full", method: "POST", path: v2, body: hpa("v2", "full", `"minReplicas":2,"maxReplicas":10,"metrics":[`+
			`{"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"500Mi"}}},`+
			`{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":60}}},`+
			`{"type":"Pods","pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue","averageValue":"10"}}},`+
			`{"type":"External","external":{"metric":{"name":"queue","selector":{"matchLabels":{"q":"a"}}},"target":{"type":"Value","value":"30"}}}],`+
			`"behavior":{"scaleDown":{"stabilizationWindowSeconds":120,"policies":[{"type":"Pods","value":2,"periodSeconds":60}]},"scaleUp":{"selectPolicy":"Min"}}`)},
		{name: "autoscaling/get-v1-full", method: "GET", path: v1 + "/full"},
		{name: "autoscaling/create-v1", method: "POST", path: v1, body: hpa("v1", "old", `"maxReplicas":3,"targetCPUUtilizationPercentage":70`)},
		{name: "autoscaling/get-v2-from-v1", method: "GET", path: v2 + "/old"},
		{name: "autoscaling/create-v1-no-target", method: "POST", path: v1, body: hpa("v1", "bare", `"maxReplicas":3`)},
		{name: "autoscaling/get-v2-bare", method: "GET", path: v2 + "/bare"},
		{name: "autoscaling/create-v1-annotations", method: "POST", path: v1,
			body: `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"annotated","annotations":{"team":"a",` +
				`"autoscaling.alpha.kubernetes.io/metrics":"[{\"type\":\"Pods\",\"pods\":{\"metricName\":\"qps\",\"targetAverageValue\":\"5\"}}]",` +
				`"autoscaling.alpha.kubernetes.io/behavior":"{\"ScaleUp\":{\"StabilizationWindowSeconds\":30,\"SelectPolicy\":\"Max\",\"Policies\":[{\"Type\":\"Pods\",\"Value\":1,\"PeriodSeconds\":10}]}}"}},` +
				`"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"maxReplicas":4,"targetCPUUtilizationPercentage":50}}`},
		{name: "autoscaling/get-v2-annotated", method: "GET", path: v2 + "/annotated"},
		{name: "autoscaling/get-v1-annotated", method: "GET", path: v1 + "/annotated"},
		{name: "autoscaling/list-v1", method: "GET", path: v1},

		{name: "autoscaling/create-invalid", method: "POST", path: v2, body: hpa("v2", "bad", `"minReplicas":-1,"maxReplicas":0,"metrics":[`+
			`{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":0,"averageValue":"1"}}},`+
			`{"type":"Pods"},{"type":"Nope"}],"behavior":{"scaleUp":{"stabilizationWindowSeconds":4000,"selectPolicy":"Random",`+
			`"policies":[{"type":"Seconds","value":0,"periodSeconds":2000}]},"scaleDown":{"policies":[]}}`)},
		{name: "autoscaling/create-invalid-ref", method: "POST", path: v2,
			body: `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"bad"},"spec":{"scaleTargetRef":{"apiVersion":"v1","kind":"Deployment"},"minReplicas":5,"maxReplicas":2}}`},
		{name: "autoscaling/create-v1-invalid", method: "POST", path: v1, body: hpa("v1", "bad", `"maxReplicas":3,"minReplicas":4,"targetCPUUtilizationPercentage":-5`)},
		{name: "autoscaling/create-scale-to-zero", method: "POST", path: v2, body: hpa("v2", "zero", `"minReplicas":0,"maxReplicas":3`)},

		{name: "autoscaling/table", method: "GET", path: v2, accept: tableAccept},
		{name: "autoscaling/table-v1", method: "GET", path: v1 + "/old", accept: tableAccept},
		{name: "autoscaling/status-patch", method: "PATCH", path: v2 + "/full/status", contentType: mergePatch,
			body: `{"status":{"currentReplicas":3,"desiredReplicas":4,"currentMetrics":[{"type":"Resource","resource":{"name":"memory","current":{"averageValue":"400Mi"}}},` +
				`{"type":"Resource","resource":{"name":"cpu","current":{"averageUtilization":55,"averageValue":"100m"}}}],` +
				`"conditions":[{"type":"AbleToScale","status":"True","reason":"ReadyForNewScale","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`},
		{name: "autoscaling/get-v1-status", method: "GET", path: v1 + "/full"},
		{name: "autoscaling/table-status", method: "GET", path: v2 + "/full", accept: tableAccept},
		{name: "autoscaling/status-patch-invalid", method: "PATCH", path: v2 + "/full/status", contentType: mergePatch,
			body: `{"status":{"currentReplicas":-1,"desiredReplicas":-2}}`},
		{name: "autoscaling/update-v1-keeps-metrics", method: "PATCH", path: v1 + "/full", contentType: mergePatch, body: `{"spec":{"maxReplicas":12}}`},
		{name: "autoscaling/get-v2-after-v1-patch", method: "GET", path: v2 + "/full"},
		{name: "autoscaling/patch-spec-status-ignored", method: "PATCH", path: v2 + "/plain", contentType: mergePatch,
			body: `{"spec":{"minReplicas":2},"status":{"currentReplicas":9}}`},
		{name: "autoscaling/status-v1-patch", method: "PATCH", path: v1 + "/old/status", contentType: mergePatch,
			body: `{"status":{"currentReplicas":2,"desiredReplicas":2}}`},
		{name: "autoscaling/get-v2-status-from-v1", method: "GET", path: v2 + "/old"},

		{name: "kubectl/get-hpa", kubectl: []string{"get", "hpa", "-n", testNS}},
		{name: "kubectl/autoscale", kubectl: []string{"autoscale", "deployment", "kc-web", "--min", "2", "--max", "5", "--cpu-percent", "80", "-n", testNS}},
		{name: "autoscaling/get-kubectl-autoscale", method: "GET", path: v2 + "/kc-web"},
		{name: "kubectl/describe-hpa", kubectl: []string{"describe", "hpa", "full", "-n", testNS}},
		{name: "autoscaling/delete-v1", method: "DELETE", path: v1 + "/bare"},
		{name: "autoscaling/deletecollection", method: "DELETE", path: v2},
	}
}
