package apiserver

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// schemaAt returns the schema reached from doc by keys, or nil.
func schemaAt(doc any, keys ...string) any {
	for _, k := range keys {
		m, ok := doc.(obj)
		if !ok {
			return nil
		}
		doc = m[k]
	}
	return doc
}

// The schemas carry the descriptions of the types and their fields that
// k8s.io/api generates into SwaggerDoc, as kube's do; a described
// reference is wrapped in allOf in v3 and sits beside its description in
// v2 (B.7). kubectl explain prints them.
func TestOpenAPIDescriptions_B7(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	v3 := ts.openAPIGroupVersion(schema.GroupVersion{Version: "v1"})
	v2 := ts.openAPIV2Doc()
	const (
		pod     = "io.k8s.api.core.v1.Pod"
		podSpec = "io.k8s.api.core.v1.PodSpec"
	)
	restart := "Restart policy for all containers within the pod."
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"v3 Pod", schemaAt(v3, "components", "schemas", pod, "description"),
			"Pod is a collection of containers that can run on a host. This resource is created by clients and scheduled onto hosts."},
		{"v3 Pod.spec", schemaAt(v3, "components", "schemas", pod, "properties", "spec"), obj{
			"description": "Specification of the desired behavior of the pod. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status",
			"allOf":       []any{obj{"$ref": "#/components/schemas/" + podSpec}}}},
		{"v2 Pod.spec", schemaAt(v2, "definitions", pod, "properties", "spec"), obj{
			"description": "Specification of the desired behavior of the pod. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status",
			"$ref":        "#/definitions/" + podSpec}},
		{"v3 PodSpec.restartPolicy", prefix(schemaAt(v3, "components", "schemas", podSpec, "properties", "restartPolicy", "description"), restart), restart},
		{"v2 PodSpec.restartPolicy", prefix(schemaAt(v2, "definitions", podSpec, "properties", "restartPolicy", "description"), restart), restart},
		// the well-known types are schemas of their own
		{"v3 ResourceRequirements.limits", schemaAt(v3, "components", "schemas", "io.k8s.api.core.v1.ResourceRequirements", "properties", "limits", "additionalProperties"),
			obj{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}},
		{"v3 Quantity", schemaAt(v3, "components", "schemas", "io.k8s.apimachinery.pkg.api.resource.Quantity", "oneOf"),
			[]any{obj{"type": "string"}, obj{"type": "number"}}},
		{"v2 Quantity", schemaAt(v2, "definitions", "io.k8s.apimachinery.pkg.api.resource.Quantity", "type"), "string"},
		{"v2 IntOrString", schemaAt(v2, "definitions", "io.k8s.apimachinery.pkg.util.intstr.IntOrString", "format"), "int-or-string"},
		{"v3 Time", schemaAt(v3, "components", "schemas", "io.k8s.apimachinery.pkg.apis.meta.v1.Time", "format"), "date-time"},
		// the fields of an inlined struct, described by it
		{"v3 Pod.kind", prefix(schemaAt(v3, "components", "schemas", pod, "properties", "kind", "description"), "Kind is a string value"), "Kind is a string value"},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			got, _ := json.Marshal(tc.got)
			want, _ := json.Marshal(tc.want)
			t.Errorf("%s = %s, want %s", tc.name, got, want)
		}
	}
}

// prefix returns the first len(p) bytes of s when s is a string.
func prefix(s any, p string) any {
	str, ok := s.(string)
	if !ok || len(str) < len(p) {
		return s
	}
	return str[:len(p)]
}

// An enum's values and their descriptions, and the required fields, come
// from the markers in k8s.io/api's source, which go generate reads into
// zz_generated.openapimarkers.go as kube's generator reads them (B.7):
// serviceName has no omitempty but is marked +optional.
func TestOpenAPIMarkers_B7(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	core := ts.openAPIGroupVersion(schema.GroupVersion{Version: "v1"})
	apps := ts.openAPIGroupVersion(schema.GroupVersion{Group: "apps", Version: "v1"})
	v2 := ts.openAPIV2Doc()
	restart := obj{
		"type": "string",
		"enum": []string{"Always", "Never", "OnFailure"},
		"description": "Restart policy for all containers within the pod. One of Always, OnFailure, Never. In some contexts, only a subset of those values may be permitted. Default to Always. More info: https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#restart-policy" +
			"\n\nPossible enum values:\n - `\"Always\"`\n - `\"Never\"`\n - `\"OnFailure\"`",
	}
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"v3 PodSpec.restartPolicy", schemaAt(core, "components", "schemas", "io.k8s.api.core.v1.PodSpec", "properties", "restartPolicy"), restart},
		{"v2 PodSpec.restartPolicy", schemaAt(v2, "definitions", "io.k8s.api.core.v1.PodSpec", "properties", "restartPolicy"), restart},
		{"Container.imagePullPolicy enum", schemaAt(core, "components", "schemas", "io.k8s.api.core.v1.Container", "properties", "imagePullPolicy", "enum"),
			[]string{"Always", "IfNotPresent", "Never"}},
		{"PodSpec required", schemaAt(core, "components", "schemas", "io.k8s.api.core.v1.PodSpec", "required"), []any{"containers"}},
		{"StatefulSetSpec required", schemaAt(apps, "components", "schemas", "io.k8s.api.apps.v1.StatefulSetSpec", "required"), []any{"selector", "template"}},
		{"Pod required", schemaAt(core, "components", "schemas", "io.k8s.api.core.v1.Pod", "required"), nil},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			got, _ := json.Marshal(tc.got)
			want, _ := json.Marshal(tc.want)
			t.Errorf("%s = %s, want %s", tc.name, got, want)
		}
	}
}
