package customresource

import (
	"maps"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// staticSchemas are the OpenAPI schemas of the kinds a custom resource's
// schema refers to (ObjectMeta and what it holds), by model name, as
// kube's apiextensions server publishes them.
var staticSchemas = sync.OnceValue(func() map[string]*spec.Schema {
	defs := generatedopenapi.GetOpenAPIDefinitions(func(name string) spec.Ref {
		return spec.MustCreateRef("#/components/schemas/" + name)
	})
	out := make(map[string]*spec.Schema, len(defs))
	for name, d := range defs {
		out[name] = &d.Schema
	}
	return out
})

// typeConverter types crd's objects for managedFields and apply, from the
// OpenAPI v3 documents kube builds of its versions' schemas merged with
// the static schemas, as kube-apiserver builds it.
func typeConverter(crd *apiextensionsv1.CustomResourceDefinition) (managedfields.TypeConverter, error) {
	specs := []*spec3.OpenAPI{{Version: "3.0.0", Info: &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes CRD Swagger", Version: "v0.1.0"}},
		Components: &spec3.Components{Schemas: maps.Clone(staticSchemas())}}}
	for _, v := range crd.Spec.Versions {
		s, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{})
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	merged, err := builder.MergeSpecsV3(specs...)
	if err != nil {
		return nil, err
	}
	return managedfields.NewTypeConverter(merged.Components.Schemas, crd.Spec.PreserveUnknownFields)
}
