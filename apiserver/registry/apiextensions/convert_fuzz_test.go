package apiextensions

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Whatever a body's JSON fields hold, the conversions to and from the
// internal type either are refused by checkConverts or succeed (I.1).
func FuzzCheckConverts_I1(f *testing.F) {
	for _, seed := range []string{`{"a":1}`, `{not json`, `null`, ``, `"x"`, `[1,`} {
		f.Add([]byte(seed), []byte(`1`))
	}
	f.Fuzz(func(t *testing.T, def, example []byte) {
		crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Schema: &apiextensionsv1.CustomResourceValidation{
				OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Default: &apiextensionsv1.JSON{Raw: def},
					Example: &apiextensionsv1.JSON{Raw: example}, Enum: []apiextensionsv1.JSON{{Raw: def}}}}}}}}
		if checkConverts(crd) != nil {
			return
		}
		fromInternal(toInternal(crd), crd)
	})
}
