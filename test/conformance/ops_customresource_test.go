package conformance

import (
	"net/http"
	"strings"
)

// crOps define CronTabs (namespaced: a default, a pattern, a
// minimum, a CEL rule, the status and scale subresources, printer
// columns, a selectable field, a short name and a category) and Gizmos
// (cluster-scoped, no schema constraints, in a group of their own), wait until each definition is
// established, and then use their custom resources (I.2).
func crOps() []op {
	const (
		crds     = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
		group    = "/apis/stable.example.com"
		crontabs = group + "/v1/namespaces/" + testNS + "/crontabs"
		others   = "/apis/other.example.com"
		gizmos   = others + "/v1/gizmos"
		crontab  = `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"NAME"},"spec":SPEC}`
	)
	tab := func(name, spec string) string {
		return strings.NewReplacer("NAME", name, "SPEC", spec).Replace(crontab)
	}
	return []op{
		{name: "cr/create-crontabs-crd", method: "POST", path: crds, body: crontabsCRD, project: statusOnly},
		{name: "cr/crontabs-established", method: "GET", path: crds + "/crontabs.stable.example.com", until: established, project: establishedOnly},
		{name: "cr/create-gizmos-crd", method: "POST", path: crds, body: gizmosCRD, project: statusOnly},
		{name: "cr/gizmos-established", method: "GET", path: crds + "/gizmos.other.example.com", until: established, project: establishedOnly},
		{name: "cr/ct-served", method: "GET", path: crontabs, until: func(a answer) bool { return a.status == http.StatusOK }},
		{name: "cr/ct-discovery-group", method: "GET", path: group},
		{name: "cr/ct-discovery-version", method: "GET", path: group + "/v1"},

		{name: "cr/ct-create", method: "POST", path: crontabs, body: tab("ct1", `{"cronSpec":"* * * * */5","image":"img:1","replicas":2}`)},
		{name: "cr/ct-create-defaulted", method: "POST", path: crontabs, body: tab("ct2", `{"cronSpec":"0 * * * *","image":"img:2"}`)},
		{name: "cr/ct-create-exists", method: "POST", path: crontabs, body: tab("ct1", `{"cronSpec":"* * * * *"}`)},
		{name: "cr/ct-get", method: "GET", path: crontabs + "/ct1"},
		// YAML keeps its resourceVersion, which no normalization reaches.
		{name: "cr/ct-get-yaml", method: "GET", path: crontabs + "/ct1", accept: "application/yaml", headOnly: true},
		{name: "cr/ct-get-protobuf", method: "GET", path: crontabs + "/ct1", accept: "application/vnd.kubernetes.protobuf"},
		{name: "cr/ct-list-protobuf", method: "GET", path: crontabs, accept: "application/vnd.kubernetes.protobuf"},
		{name: "cr/ct-get-protobuf-or-json", method: "GET", path: crontabs + "/ct1", accept: "application/vnd.kubernetes.protobuf, application/json"},
		{name: "cr/ct-get-table-protobuf", method: "GET", path: crontabs + "/ct1", accept: "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json"},
		{name: "cr/ct-get-missing", method: "GET", path: crontabs + "/missing"},
		{name: "cr/ct-list", method: "GET", path: crontabs},
		{name: "cr/ct-list-selectable-field", method: "GET", path: crontabs + "?fieldSelector=spec.image%3Dimg:2"},
		{name: "cr/ct-list-unknown-field", method: "GET", path: crontabs + "?fieldSelector=spec.cronSpec%3Dx"},
		{name: "cr/ct-table", method: "GET", path: crontabs, accept: tableAccept},
		{name: "cr/ct-table-one", method: "GET", path: crontabs + "/ct1", accept: tableAccept},

		{name: "cr/ct-create-unknown-fields", method: "POST", path: crontabs, body: `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"ct3"},"spec":{"cronSpec":"* * * * *","junk":1},"extra":true}`},
		{name: "cr/ct-create-unknown-fields-strict", method: "POST", path: crontabs + "?fieldValidation=Strict",
			body: `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"ct4"},"spec":{"cronSpec":"* * * * *","junk":1}}`},
		{name: "cr/ct-create-pattern", method: "POST", path: crontabs, body: tab("bad", `{"cronSpec":"nope"}`)},
		{name: "cr/ct-create-minimum", method: "POST", path: crontabs, body: tab("bad", `{"cronSpec":"* * * * *","replicas":0}`)},
		{name: "cr/ct-create-type", method: "POST", path: crontabs, body: tab("bad", `{"cronSpec":"* * * * *","replicas":"two"}`)},
		{name: "cr/ct-create-cel", method: "POST", path: crontabs, body: tab("bad", `{"cronSpec":"* * * * *","replicas":11}`)},
		{name: "cr/ct-create-bad-name", method: "POST", path: crontabs, body: tab("Bad_Name", `{"cronSpec":"* * * * *"}`)},
		{name: "cr/ct-create-with-status", method: "POST", path: crontabs,
			body: `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"ct5"},"spec":{"cronSpec":"* * * * *"},"status":{"replicas":3}}`},

		{name: "cr/ct-merge-patch", method: "PATCH", path: crontabs + "/ct1", contentType: mergePatch, body: `{"spec":{"image":"img:3"}}`},
		{name: "cr/ct-merge-patch-labels", method: "PATCH", path: crontabs + "/ct1", contentType: mergePatch, body: `{"metadata":{"labels":{"tier":"a"}}}`},
		{name: "cr/ct-json-patch", method: "PATCH", path: crontabs + "/ct1", contentType: jsonPatch, body: `[{"op":"replace","path":"/spec/replicas","value":3}]`},
		{name: "cr/ct-strategic-patch", method: "PATCH", path: crontabs + "/ct1", contentType: strategicPatch, body: `{"spec":{"replicas":4}}`},
		{name: "cr/ct-patch-cel", method: "PATCH", path: crontabs + "/ct1", contentType: mergePatch, body: `{"spec":{"replicas":12}}`},
		{name: "cr/ct-apply", method: "PATCH", path: crontabs + "/ct6?fieldManager=tester", contentType: applyPatch,
			body: "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: ct6\nspec:\n  cronSpec: '* * * * *'\n  image: img:6\n"},
		{name: "cr/ct-apply-conflict", method: "PATCH", path: crontabs + "/ct6?fieldManager=other", contentType: applyPatch,
			body: "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: ct6\nspec:\n  image: img:7\n"},
		{name: "cr/ct-put-without-rv", method: "PUT", path: crontabs + "/ct2", body: tab("ct2", `{"cronSpec":"5 * * * *"}`)},

		{name: "cr/ct-patch-status", method: "PATCH", path: crontabs + "/ct1/status", contentType: mergePatch,
			body: `{"spec":{"image":"ignored"},"status":{"replicas":3,"selector":"app=ct1"}}`},
		{name: "cr/ct-get-after-status", method: "GET", path: crontabs + "/ct1"},
		{name: "cr/ct-get-scale", method: "GET", path: crontabs + "/ct1/scale"},
		{name: "cr/ct-patch-scale", method: "PATCH", path: crontabs + "/ct1/scale", contentType: mergePatch, body: `{"spec":{"replicas":5}}`},
		{name: "cr/ct-patch-scale-cel", method: "PATCH", path: crontabs + "/ct1/scale", contentType: mergePatch, body: `{"spec":{"replicas":20}}`},
		{name: "cr/ct-get-after-scale", method: "GET", path: crontabs + "/ct1"},

		{name: "cr/ct-kubectl-get-shortname", kubectl: []string{"get", "ct", "-n", testNS}},
		{name: "cr/ct-kubectl-get-json", kubectl: []string{"get", "crontab", "ct2", "-n", testNS, "-o", "json"}},

		{name: "cr/gizmo-create", method: "POST", path: gizmos, body: `{"apiVersion":"other.example.com/v1","kind":"Gizmo","metadata":{"name":"g1"},"size":3}`},
		{name: "cr/gizmo-get", method: "GET", path: gizmos + "/g1"},
		{name: "cr/gizmo-namespaced-path", method: "GET", path: others + "/v1/namespaces/" + testNS + "/gizmos/g1"},
		{name: "cr/gizmo-list", method: "GET", path: gizmos},
		{name: "cr/gizmo-unknown-resource", method: "GET", path: others + "/v1/widgets"},
		{name: "cr/gizmo-delete", method: "DELETE", path: gizmos + "/g1"},

		{name: "cr/ct-delete", method: "DELETE", path: crontabs + "/ct5"},
		{name: "cr/ct-deletecollection", method: "DELETE", path: crontabs + "?labelSelector=tier%3Da"},
		{name: "cr/ct-list-after-delete", method: "GET", path: crontabs},
		{name: "cr/ct-create-after-list", method: "POST", path: crontabs, body: tab("ct7", `{"cronSpec":"* * * * *"}`)},
		{name: "cr/ct-watch-from-rv", method: "GET", path: crontabs + "?watch=1&timeoutSeconds=1&resourceVersion={rv}"},
		{name: "cr/ct-watch-table-from-rv", method: "GET", path: crontabs + "?watch=1&timeoutSeconds=1&resourceVersion={rv}", accept: tableAccept},
		{name: "cr/ct-aggregated-discovery", method: "GET", path: "/apis", accept: aggregatedAccept, project: discoveryGroup("stable.example.com")},
		{name: "cr/ct-openapi-schema", method: "GET", path: "/openapi/v3/apis/stable.example.com/v1", project: openAPISchema("com.example.stable.v1.CronTab")},
		{name: "cr/ct-kubectl-explain", kubectl: []string{"explain", "crontabs.spec"}},
		{name: "cr/delete-gizmos-crd", method: "DELETE", path: crds + "/gizmos.other.example.com", project: statusOnly},
		{name: "cr/gizmos-gone", method: "GET", path: gizmos, until: func(a answer) bool { return a.status == http.StatusNotFound }},
		// kube-apiserver drops the group from discovery a moment after
		// the definition goes.
		{name: "cr/gizmos-group-gone", method: "GET", path: others, until: statusIs(http.StatusNotFound)},
	}
}

// crontabsCRD is the namespaced definition of crOps.
const crontabsCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, listKind: CronTabList, shortNames: [ct], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}
    selectableFields: [{jsonPath: .spec.image}]
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - {rule: "self.replicas <= 10", message: "at most 10 replicas"}
            properties:
              cronSpec: {type: string, pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'}
              image: {type: string}
              replicas: {type: integer, minimum: 1, default: 1}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
`

// gizmosCRD is the cluster-scoped definition of crOps.
const gizmosCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.other.example.com
spec:
  group: other.example.com
  scope: Cluster
  names: {plural: gizmos, singular: gizmo, kind: Gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// statusOnly compares an answer by its status and media type alone: the
// definitions' own answers are the CustomResourceDefinition kind's
// operations', not these.
func statusOnly(any) any { return nil }

// established reports whether a definition's Established condition is
// True.
func established(a answer) bool { return establishedOnly(a.body) == "True" }

// establishedOnly is the status of a definition's Established condition.
func establishedOnly(body any) any {
	m, _ := body.(map[string]any)
	st, _ := m["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		if c, ok := c.(map[string]any); ok && c["type"] == "Established" {
			return c["status"]
		}
	}
	return nil
}

// aggregatedAccept asks for aggregated discovery.
const aggregatedAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// discoveryGroup is the entry of group in an aggregated discovery
// document.
func discoveryGroup(group string) func(any) any {
	return func(v any) any {
		m, _ := v.(map[string]any)
		items, _ := m["items"].([]any)
		for _, it := range items {
			md, _ := it.(map[string]any)["metadata"].(map[string]any)
			if md["name"] == group {
				return it
			}
		}
		return nil
	}
}

// openAPISchema is the component schema name of an OpenAPI v3 document.
func openAPISchema(name string) func(any) any {
	return func(v any) any {
		m, _ := v.(map[string]any)
		c, _ := m["components"].(map[string]any)
		s, _ := c["schemas"].(map[string]any)
		return s[name]
	}
}
