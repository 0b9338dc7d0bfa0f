package conformance

import "strings"

// scaleOps are the operations on the scale subresource (autoscaling/v1
// Scale) of the replicated kinds the earlier operations made: rs1, rc1,
// sts1 and d1. No controller runs next to either server, so status
// replicas stay as the status operations left them.
func scaleOps() []op {
	const (
		apps   = "/apis/apps/v1/namespaces/" + testNS
		rss    = apps + "/replicasets"
		rcs    = ns + "/replicationcontrollers"
		stss   = apps + "/statefulsets"
		deploy = apps + "/deployments"
	)
	scale := func(name, extraMeta string, replicas string) string {
		return `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"` + name + `"` + extraMeta + `},"spec":{"replicas":` + replicas + `}}`
	}
	return []op{
		// the scale entries only: kube-apiserver serves apps/v1 resources
		// kubegate does not yet (controllerrevisions)
		{name: "discovery/apps-v1-scale", method: "GET", path: "/apis/apps/v1", project: scaleEntries},
		{name: "discovery/core-v1-scale", method: "GET", path: "/api/v1", project: scaleEntries},
		{name: "scale/rs-get", method: "GET", path: rss + "/rs1/scale"},
		{name: "scale/rs-table", method: "GET", path: rss + "/rs1/scale", accept: tableAccept},
		{name: "scale/rs-metadata", method: "GET", path: rss + "/rs1/scale", accept: metaAccept},
		{name: "scale/rs-get-missing", method: "GET", path: rss + "/missing/scale"},
		{name: "scale/rs-patch", method: "PATCH", path: rss + "/rs1/scale", contentType: mergePatch, body: `{"spec":{"replicas":4}}`},
		{name: "scale/rs-after-patch", method: "GET", path: rss + "/rs1"},
		{name: "scale/rs-patch-json", method: "PATCH", path: rss + "/rs1/scale", contentType: jsonPatch,
			body: `[{"op":"replace","path":"/spec/replicas","value":5}]`},
		{name: "scale/rs-patch-strategic", method: "PATCH", path: rss + "/rs1/scale", contentType: strategicPatch, body: `{"spec":{"replicas":6}}`},
		{name: "scale/rs-patch-negative", method: "PATCH", path: rss + "/rs1/scale", contentType: mergePatch, body: `{"spec":{"replicas":-1}}`},
		{name: "scale/rs-patch-missing", method: "PATCH", path: rss + "/missing/scale", contentType: mergePatch, body: `{"spec":{"replicas":1}}`},
		{name: "scale/rs-put", method: "PUT", path: rss + "/rs1/scale", body: scale("rs1", "", "2")},
		{name: "scale/rs-put-negative", method: "PUT", path: rss + "/rs1/scale", body: scale("rs1", "", "-3")},
		{name: "scale/rs-put-stale", method: "PUT", path: rss + "/rs1/scale", body: scale("rs1", `,"resourceVersion":"1"`, "3")},
		{name: "scale/rs-put-other-uid", method: "PUT", path: rss + "/rs1/scale", body: scale("rs1", `,"uid":"00000000-0000-0000-0000-000000000000"`, "3")},
		{name: "scale/rs-put-name-mismatch", method: "PUT", path: rss + "/rs1/scale", body: scale("other", "", "3")},
		{name: "scale/rs-put-missing", method: "PUT", path: rss + "/missing/scale", body: scale("missing", "", "3")},
		{name: "scale/rs-put-dry-run", method: "PUT", path: rss + "/rs1/scale" + q("dryRun", "All"), body: scale("rs1", "", "9")},
		{name: "scale/rs-apply", method: "PATCH", path: rss + "/rs1/scale" + q("fieldManager", "scaler"), contentType: applyPatch,
			body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: rs1\nspec:\n  replicas: 3\n"},
		{name: "scale/rs-after-all", method: "GET", path: rss + "/rs1"},
		{name: "scale/rs-post", method: "POST", path: rss + "/rs1/scale", body: scale("rs1", "", "3")},

		{name: "scale/rc-get", method: "GET", path: rcs + "/rc1/scale"},
		{name: "scale/rc-patch", method: "PATCH", path: rcs + "/rc1/scale", contentType: mergePatch, body: `{"spec":{"replicas":2}}`},
		{name: "scale/rc-put-negative", method: "PUT", path: rcs + "/rc1/scale", body: scale("rc1", "", "-1")},
		{name: "scale/rc-after-patch", method: "GET", path: rcs + "/rc1"},

		{name: "scale/sts-get", method: "GET", path: stss + "/sts1/scale"},
		{name: "scale/sts-patch", method: "PATCH", path: stss + "/sts1/scale", contentType: mergePatch, body: `{"spec":{"replicas":3}}`},
		{name: "scale/sts-after-patch", method: "GET", path: stss + "/sts1"},

		{name: "scale/deploy-get", method: "GET", path: deploy + "/d1/scale"},
		{name: "scale/deploy-put", method: "PUT", path: deploy + "/d1/scale", body: scale("d1", "", "1")},
		{name: "scale/deploy-after-put", method: "GET", path: deploy + "/d1"},

		{name: "scale/pod-not-scalable", method: "GET", path: ns + "/pods/missing/scale"},

		{name: "kubectl/scale-rs", kubectl: []string{"scale", "rs", "rs1", "-n", testNS, "--replicas=5"}},
		{name: "kubectl/scale-rc-current", kubectl: []string{"scale", "rc", "rc1", "-n", testNS, "--current-replicas=2", "--replicas=3"}},
		{name: "kubectl/scale-rc-wrong-current", kubectl: []string{"scale", "rc", "rc1", "-n", testNS, "--current-replicas=7", "--replicas=1"}},
		{name: "kubectl/scale-deploy", kubectl: []string{"scale", "deploy", "d1", "-n", testNS, "--replicas=2"}},
		{name: "kubectl/get-rs-after-scale", kubectl: []string{"get", "rs", "rs1", "-n", testNS, "-o", "json"}},
	}
}

// scaleEntries keeps the scale subresources of a discovery document's
// resources.
func scaleEntries(doc any) any {
	m, _ := doc.(map[string]any)
	rs, _ := m["resources"].([]any)
	var out []any
	for _, r := range rs {
		if e, _ := r.(map[string]any); e != nil {
			if name, _ := e["name"].(string); strings.HasSuffix(name, "/scale") {
				out = append(out, e)
			}
		}
	}
	return out
}
