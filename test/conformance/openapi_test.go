package conformance

import (
	"slices"
	"strings"
)

// openAPISchemas returns a projection of an OpenAPI document (v3 when
// under is "components", v2 when "definitions") to the schemas reachable
// from roots, without what kubegate's schemas leave out on purpose (see
// docs/kubernetes-behaviour.md, B.7): default values and the
// x-kubernetes-list-type, list-map-keys, map-type and unions markers, and
// the kinds marked on schemas other than the roots, which are those the
// server serves. The
// descriptions of describedOtherwise are replaced by their reason.
func openAPISchemas(under string, roots ...string) func(any) any {
	return func(doc any) any {
		schemas, _ := dig(doc, under).(map[string]any)
		if under == "components" {
			schemas, _ = dig(doc, "components", "schemas").(map[string]any)
		}
		out := map[string]any{}
		var visit func(name string)
		visit = func(name string) {
			if _, done := out[name]; done {
				return
			}
			s, ok := schemas[name]
			if !ok {
				out[name] = "missing"
				return
			}
			out[name] = nil // before its fields, for recursive types
			var refs []string
			p := projectSchema(name, "", s, &refs)
			if m, ok := p.(map[string]any); ok && !slices.Contains(roots, name) {
				// a kind the server serves is marked: PersistentVolumeClaim
				// in kube's, where a StatefulSet refers to it
				delete(m, "x-kubernetes-group-version-kind")
			}
			out[name] = p
			for _, r := range refs {
				visit(r)
			}
		}
		for _, r := range roots {
			visit(r)
		}
		return out
	}
}

// projectSchema copies schema s of a type (prop "") or of its property
// prop without the keys openAPISchemas leaves out, and adds the names it
// refers to to refs.
func projectSchema(typ, prop string, s any, refs *[]string) any {
	switch s := s.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, v := range s {
			switch k {
			case "default", "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type", "x-kubernetes-unions":
				continue
			case "$ref":
				ref, _ := v.(string)
				*refs = append(*refs, ref[strings.LastIndex(ref, "/")+1:])
				out[k] = v
			case "properties":
				props := map[string]any{}
				for name, p := range v.(map[string]any) {
					props[name] = projectSchema(typ, name, p, refs)
				}
				out[k] = props
			case "description":
				if why, ok := describedOtherwise[typ+"."+prop]; ok && prop != "" {
					v = why
				}
				out[k] = v
			default:
				out[k] = projectSchema(typ, prop, v, refs)
			}
		}
		if why, ok := describedOtherwise[typ]; ok && prop == "" {
			out["description"] = why
		}
		return out
	case []any:
		out := make([]any, len(s))
		for i, e := range s {
			out[i] = projectSchema(typ, prop, e, refs)
		}
		return out
	}
	return s
}

// dig returns the value under keys in nested JSON objects, or nil.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}
