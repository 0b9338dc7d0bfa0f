package apiserver

import "reflect"

// The types of apimachinery that kube's OpenAPI describes by hand rather
// than by their fields (they marshal to a string, a number or raw JSON):
// each is a schema of its own that fields refer to, as in kube's documents,
// so that kubectl explain names them (<Quantity>, <map[string]Quantity>)
// and prints their description under a field's. FieldsV1 has SwaggerDoc
// and is described; the others have none, and kube's descriptions of them,
// its generator's reading of their doc comments, are not copied (B.7).

// wellKnownSchema is the v3 schema of a well-known type.
func wellKnownSchema(t reflect.Type) (obj, bool) {
	var s obj
	switch t {
	case timeType, microType:
		s = obj{"type": "string", "format": "date-time"}
	case quantityType:
		s = obj{"oneOf": []any{obj{"type": "string"}, obj{"type": "number"}}}
	case intstrType:
		s = obj{"format": "int-or-string", "oneOf": []any{obj{"type": "integer"}, obj{"type": "string"}}}
	case rawType, fieldsV1Type:
		s = obj{"type": "object"}
	default:
		// A type that tells kube's generator its schema (the JSON values
		// of a CRD's schema) is what it says, any value without a type.
		typed, ok := reflect.Zero(t).Interface().(interface{ OpenAPISchemaType() []string })
		if !ok {
			return nil, false
		}
		s = obj{}
		if ts := typed.OpenAPISchemaType(); len(ts) == 1 {
			s["type"] = ts[0]
		}
		if f, ok := typed.(interface{ OpenAPISchemaFormat() string }); ok && f.OpenAPISchemaFormat() != "" {
			s["format"] = f.OpenAPISchemaFormat()
		}
	}
	if d := swaggerDoc(t)[""]; d != "" {
		s["description"] = d
	}
	return s, true
}
