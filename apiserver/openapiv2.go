package apiserver

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/aggregator"
	"k8s.io/kube-openapi/pkg/cached"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The OpenAPI v2 document (Swagger 2.0): the v3 documents of every group
// version, merged and written in v2's form, as kube-apiserver serves it at
// /openapi/v2 (B.7). kubectl reads it where the v3 documents do not answer:
// its client-side validation of kinds that have no PATCH operation (the
// reviews), and kubectl versions before 1.27 for apply. client-go asks
// for it in protobuf (gnostic's openapi_v2.Document), others in JSON.

// openAPIV2Service serves the v2 document with kube-openapi's handler, the
// one kube-apiserver serves it with: the same media types (JSON, and
// gnostic's protobuf under both its names), ETags, gzip and 406. The
// document of the typed kinds is built at its first request; the
// documents of the custom resources served are merged into it again
// when the registry changes what they say (I.2).
func (s *Server) openAPIV2Service() *handler.OpenAPIService {
	typed := cached.Once(cached.Func(func() (*spec.Swagger, string, error) {
		data, err := json.Marshal(s.openAPIV2Doc())
		if err != nil {
			return nil, "", err
		}
		sw := &spec.Swagger{}
		if err := sw.UnmarshalJSON(data); err != nil {
			return nil, "", fmt.Errorf("openapi v2: %w", err)
		}
		return sw, "typed", nil
	}))
	m := &openAPIV2Merge{s: s, typed: typed}
	return handler.NewOpenAPIServiceLazy(cached.Func(m.get))
}

// openAPIV2Merge is the v2 document with the custom resources' merged in,
// for the registry it was made for. Its ETag is the hash of the custom
// documents, so it stays while they do.
type openAPIV2Merge struct {
	s     *Server
	typed cached.Value[*spec.Swagger]

	mu   sync.Mutex
	reg  *registry
	doc  *spec.Swagger
	etag string
}

func (m *openAPIV2Merge) get() (*spec.Swagger, string, error) {
	reg := m.s.registry()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.doc != nil && m.reg == reg {
		return m.doc, m.etag, nil
	}
	typed, _, err := m.typed.Get()
	if err != nil {
		return nil, "", err
	}
	gvrs := make([]schema.GroupVersionResource, 0)
	for gvr, res := range reg.byGVR {
		if res.OpenAPIV2 != nil {
			gvrs = append(gvrs, gvr)
		}
	}
	sort.Slice(gvrs, func(i, j int) bool { return gvrs[i].String() < gvrs[j].String() })
	h := sha512.New()
	custom := make([]*spec.Swagger, len(gvrs))
	for i, gvr := range gvrs {
		custom[i] = reg.byGVR[gvr].OpenAPIV2
		data, err := json.Marshal(custom[i])
		if err != nil {
			return nil, "", fmt.Errorf("openapi v2 of %s: %w", gvr, err)
		}
		h.Write(data)
	}
	etag := hex.EncodeToString(h.Sum(nil))
	if m.doc != nil && etag == m.etag {
		m.reg = reg
		return m.doc, m.etag, nil
	}
	doc, err := mergeOpenAPIV2(typed, custom)
	if err != nil {
		return nil, "", err
	}
	m.reg, m.doc, m.etag = reg, doc, etag
	return doc, etag, nil
}

// mergeOpenAPIV2 adds the custom resources' documents to the typed
// kinds' with kube's merges: the custom documents with each other
// (builder.MergeSpecs), then with the typed document, where a path the
// typed document has is kept and a definition of the same name and other
// content is renamed (NAME_v2, ...) with the references to it, as
// kube-apiserver's aggregator merges them. So a CRD whose group and kind
// spell a built-in's definition name (group core.api.k8s.io, kind Pod:
// io.k8s.api.core.v1.Pod) keeps a schema of its own. The definitions
// every custom document carries from kube's (meta/v1, runtime,
// autoscaling/v1's Scale) are the typed document's.
func mergeOpenAPIV2(typed *spec.Swagger, custom []*spec.Swagger) (*spec.Swagger, error) {
	if len(custom) == 0 {
		return typed, nil
	}
	crds, err := builder.MergeSpecs(&spec.Swagger{SwaggerProps: spec.SwaggerProps{Paths: &spec.Paths{}}}, custom...)
	if err != nil {
		return nil, fmt.Errorf("openapi v2: merge custom resources: %w", err)
	}
	out := *typed
	out.Definitions = maps.Clone(typed.Definitions)
	out.Paths = &spec.Paths{VendorExtensible: typed.Paths.VendorExtensible, Paths: maps.Clone(typed.Paths.Paths)}
	for name := range crds.Definitions {
		d, ok := out.Definitions[name]
		switch {
		case !ok:
		case sharedDefinition(name):
			delete(crds.Definitions, name)
		default:
			// The merge may add the custom kind's GVKs to an equal
			// definition: to a copy, not to the cached typed document.
			d.Extensions = maps.Clone(d.Extensions)
			out.Definitions[name] = d
		}
	}
	if err := aggregator.MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters(&out, crds); err != nil {
		return nil, fmt.Errorf("openapi v2: merge custom resources: %w", err)
	}
	return &out, nil
}

// sharedDefinition reports whether name is one of the definitions of
// kube's own types that every custom document carries.
func sharedDefinition(name string) bool {
	return strings.HasPrefix(name, "io.k8s.apimachinery.") || strings.HasPrefix(name, "io.k8s.api.autoscaling.v1.Scale")
}

// openAPIV2Doc merges the v3 documents of every group version into one
// v2 document.
func (s *Server) openAPIV2Doc() obj {
	paths, defs := obj{}, obj{}
	for g, vs := range s.registry().groupVersions(true) {
		for _, v := range vs {
			doc := s.openAPIGroupVersion(schema.GroupVersion{Group: g, Version: v})
			for p, item := range doc["paths"].(obj) {
				paths[p] = v2PathItem(item.(obj))
			}
			for name, sch := range doc["components"].(obj)["schemas"].(obj) {
				defs[name] = v2Schema(sch)
			}
		}
	}
	return obj{
		"swagger":     "2.0",
		"info":        obj{"title": "Kubernetes", "version": openAPIVersion},
		"paths":       paths,
		"definitions": defs,
		"securityDefinitions": obj{"BearerToken": obj{
			"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}},
		"security": []any{obj{"BearerToken": []any{}}},
	}
}

// v2PathItem writes a v3 path item in v2's form.
func v2PathItem(item obj) obj {
	out := obj{}
	for k, v := range item {
		if k == "parameters" {
			if ps := v2Parameters(v.([]any)); len(ps) > 0 {
				out[k] = ps
			}
			continue
		}
		out[k] = v2Operation(v.(obj))
	}
	return out
}

// v2Operation writes a v3 operation in v2's form: the request body is a
// body parameter, a response's schema sits on the response, and the media
// types are listed as consumes and produces.
func v2Operation(op obj) obj {
	out := obj{}
	for k, v := range op {
		if strings.HasPrefix(k, "x-kubernetes-") {
			out[k] = v
		}
	}
	var params []any
	if ps, ok := op["parameters"].([]any); ok {
		params = v2Parameters(ps)
	}
	if body, ok := op["requestBody"].(obj); ok {
		types, sch := v2Content(body["content"].(obj))
		params = append([]any{obj{"name": "body", "in": "body", "required": true, "schema": sch}}, params...)
		out["consumes"] = types
	}
	if len(params) > 0 {
		out["parameters"] = params
	}
	resp := op["responses"].(obj)["200"].(obj)
	types, sch := v2Content(resp["content"].(obj))
	out["produces"] = types
	out["responses"] = obj{"200": obj{"description": resp["description"], "schema": sch}}
	out["schemes"] = []any{"https"}
	return out
}

// v2Content returns the media types of a v3 content map, sorted, and the
// schema they share.
func v2Content(content obj) ([]any, any) {
	types := make([]string, 0, len(content))
	for t := range content {
		types = append(types, t)
	}
	sort.Strings(types)
	out := make([]any, len(types))
	for i, t := range types {
		out[i] = t
	}
	return out, v2Schema(content[types[0]].(obj)["schema"])
}

// v2Parameters writes v3 parameters in v2's form: a path or query
// parameter's type is its own, not a schema's.
func v2Parameters(ps []any) []any {
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		p := p.(obj)
		q := obj{"name": p["name"], "in": p["in"]}
		if p["required"] == true {
			q["required"] = true
		}
		if sch, ok := p["schema"].(obj); ok {
			for k, v := range sch {
				q[k] = v
			}
		}
		out = append(out, q)
	}
	return out
}

// v2Schema rewrites a v3 schema for v2: references point into
// definitions, a Quantity or IntOrString (one of several types) is a
// string, and a
// reference wrapped in allOf to carry a description or extensions is
// unwrapped, the reference beside them, as kube-apiserver writes it.
func v2Schema(v any) any {
	switch v := v.(type) {
	case obj:
		if one, ok := v["oneOf"].([]any); ok && one != nil {
			// Quantity and IntOrString: v2 has no oneOf (a property
			// named oneOf, in a CRD's schema, is a schema, not a list)
			out := obj{"type": "string"}
			for k, e := range v {
				if k != "oneOf" {
					out[k] = e
				}
			}
			return out
		}
		if all, ok := v["allOf"].([]any); ok && len(all) == 1 {
			if ref, ok := all[0].(obj)["$ref"]; ok {
				unwrapped := obj{"$ref": ref}
				for k, e := range v {
					if k != "allOf" && k != "default" {
						unwrapped[k] = e
					}
				}
				v = unwrapped
			}
		}
		out := obj{}
		for k, e := range v {
			if ref, ok := e.(string); ok && k == "$ref" {
				out[k] = strings.Replace(ref, "#/components/schemas/", "#/definitions/", 1)
				continue
			}
			out[k] = v2Schema(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = v2Schema(e)
		}
		return out
	}
	return v
}
