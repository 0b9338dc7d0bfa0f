package conformance

import "fmt"

// apiRegistrationOps are the APIService operations: the local
// APIServices of the group versions kubegate serves, as listed, and the
// writes and refusals of APIServices a client makes.
func apiRegistrationOps() []op {
	const (
		apisvcs = "/apis/apiregistration.k8s.io/v1/apiservices"
		kind    = `"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService"`
	)
	apisvc := func(name, spec string) string {
		return `{` + kind + `,"metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
	}
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	crdVersion := func(name string, served, storage bool) string {
		return fmt.Sprintf(`{"name":%q,"served":%t,"storage":%t,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`, name, served, storage)
	}
	widgets := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.kg-apisvc.example.com"},` +
		`"spec":{"group":"kg-apisvc.example.com","names":{"plural":"widgets","kind":"Widget"},"scope":"Cluster","versions":[` +
		crdVersion("v1", true, true) + `,` + crdVersion("v2", false, false) + `]}}`
	local := []string{"v1.", "v1.apps", "v1.batch", "v1.policy", "v1.rbac.authorization.k8s.io", "v1.flowcontrol.apiserver.k8s.io",
		"v1.storagemigration.k8s.io", "v1.coordination.k8s.io", "v1.admissionregistration.k8s.io", "v1.apiextensions.k8s.io",
		"v1.authentication.k8s.io", "v1.authorization.k8s.io", "v1.certificates.k8s.io", "v1.discovery.k8s.io", "v1.events.k8s.io",
		"v1.scheduling.k8s.io"}
	return []op{
		{name: "apiregistration/list-local", method: "GET", path: apisvcs, project: apiServiceItems(local...)},
		{name: "apiregistration/get-core", method: "GET", path: apisvcs + "/v1.", project: withoutServerFields},
		{name: "apiregistration/get-apps", method: "GET", path: apisvcs + "/v1.apps", project: withoutServerFields},
		{name: "apiregistration/table-apps", method: "GET", path: apisvcs + "/v1.apps", accept: tableAccept, project: tableCells},
		{name: "kubectl/get-apiservice", kubectl: []string{"get", "apiservices", "v1.apps", "v1.flowcontrol.apiserver.k8s.io", "v1.batch"}},
		{name: "apiregistration/create-local", method: "POST", path: apisvcs,
			body: apisvc("v1alpha1.kg.example.com", `"group":"kg.example.com","version":"v1alpha1","groupPriorityMinimum":100,"versionPriority":10`), project: withoutServerFields},
		{name: "apiregistration/get-created-local", method: "GET", path: apisvcs + "/v1alpha1.kg.example.com", project: withoutServerFields},
		{name: "apiregistration/table-created-local", method: "GET", path: apisvcs + "/v1alpha1.kg.example.com", accept: tableAccept, project: tableCells},
		{name: "apiregistration/status-invalid", method: "PATCH", path: apisvcs + "/v1alpha1.kg.example.com/status", contentType: mergePatch,
			body: `{"status":{"conditions":[{"type":"Available","status":"Maybe"}]}}`},
		{name: "apiregistration/update-priority", method: "PATCH", path: apisvcs + "/v1alpha1.kg.example.com", contentType: mergePatch,
			body: `{"spec":{"versionPriority":20}}`, project: withoutServerFields},
		{name: "apiregistration/update-invalid", method: "PATCH", path: apisvcs + "/v1alpha1.kg.example.com", contentType: mergePatch,
			body: `{"spec":{"version":"v2","groupPriorityMinimum":0,"insecureSkipTLSVerify":true}}`},
		{name: "apiregistration/delete-local", method: "DELETE", path: apisvcs + "/v1alpha1.kg.example.com"},
		{name: "apiregistration/create-invalid", method: "POST", path: apisvcs,
			body: apisvc("v1.kg.example.com", `"group":"Bad_Group","version":"V1","groupPriorityMinimum":30000,"versionPriority":-1,"caBundle":"YWJj"`)},
		{name: "apiregistration/create-empty-group", method: "POST", path: apisvcs, body: apisvc("v2.", `"version":"v2","groupPriorityMinimum":1,"versionPriority":1`)},
		{name: "apiregistration/create-bad-name", method: "POST", path: apisvcs,
			body: apisvc("kg/slash", `"group":"kg.example.com","version":"v1","groupPriorityMinimum":1,"versionPriority":1`)},
		{name: "apiregistration/create-service-invalid", method: "POST", path: apisvcs,
			body: apisvc("v1.kg.example.com", `"group":"kg.example.com","version":"v1","groupPriorityMinimum":1,"versionPriority":1,`+
				`"service":{"port":70000},"insecureSkipTLSVerify":true,"caBundle":"YWJj"`)},
		{name: "apiregistration/create-name-mismatch", method: "POST", path: apisvcs,
			body: apisvc("v2.kg.example.com", `"group":"kg.example.com","version":"v1","groupPriorityMinimum":1,"versionPriority":1`)},
		// A definition's served version gets an APIService while it is
		// served; one not served gets none.
		{name: "apiregistration/crd-create", method: "POST", path: crds, body: widgets, project: statusOnly},
		{name: "apiregistration/crd-apiservice", method: "GET", path: apisvcs + "/v1.kg-apisvc.example.com", project: withoutServerFields,
			until: func(a answer) bool { return a.status == 200 }},
		{name: "apiregistration/crd-unserved-apiservice", method: "GET", path: apisvcs + "/v2.kg-apisvc.example.com"},
		{name: "apiregistration/crd-delete", method: "DELETE", path: crds + "/widgets.kg-apisvc.example.com", project: statusOnly},
		{name: "apiregistration/crd-apiservice-gone", method: "GET", path: apisvcs + "/v1.kg-apisvc.example.com",
			until: func(a answer) bool { return a.status == 404 }},
		{name: "discovery/apiregistration-v1", method: "GET", path: "/apis/apiregistration.k8s.io/v1"},
		{name: "discovery/apiregistration", method: "GET", path: "/apis/apiregistration.k8s.io"},
		{name: "discovery/aggregated-apiregistration", method: "GET", path: "/apis", accept: discoveryV2,
			project: discoveryGroups("apiregistration.k8s.io")},
		{name: "openapi/v3-apiregistration-schemas", method: "GET", path: "/openapi/v3/apis/apiregistration.k8s.io/v1",
			project: openAPISchemas("components", "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService")},
	}
}

// apiServiceItems keeps the named APIServices of a list, without what
// each server generates: kube serves groups kubegate does not yet.
func apiServiceItems(names ...string) func(any) any {
	return func(v any) any {
		m, _ := v.(map[string]any)
		items, _ := m["items"].([]any)
		byName := map[string]any{}
		for _, it := range items {
			if im, _ := it.(map[string]any); im != nil {
				md, _ := im["metadata"].(map[string]any)
				byName[fmt.Sprint(md["name"])] = withoutServerFields(im)
			}
		}
		kept := make([]any, len(names))
		for i, n := range names {
			kept[i] = byName[n]
		}
		return kept
	}
}

// tableCells keeps a Table's columns and the cells of its rows but the
// last, the age.
func tableCells(v any) any {
	m, _ := v.(map[string]any)
	rows, _ := m["rows"].([]any)
	var cells []any
	for _, r := range rows {
		rm, _ := r.(map[string]any)
		cs, _ := rm["cells"].([]any)
		if len(cs) > 0 {
			cs = cs[:len(cs)-1]
		}
		cells = append(cells, cs)
	}
	return map[string]any{"columns": m["columnDefinitions"], "cells": cells}
}
