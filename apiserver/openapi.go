package apiserver

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	aggregatoropenapi "k8s.io/kube-aggregator/pkg/generated/openapi"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

//go:generate go run ../internal/gen/openapimarkers -o zz_generated.openapimarkers.go k8s.io/api/core/v1 k8s.io/api/apps/v1 k8s.io/api/batch/v1 k8s.io/api/certificates/v1 k8s.io/api/authentication/v1 k8s.io/api/authorization/v1 k8s.io/api/autoscaling/v1 k8s.io/api/coordination/v1 k8s.io/api/discovery/v1 k8s.io/api/events/v1 k8s.io/api/policy/v1 k8s.io/api/rbac/v1 k8s.io/api/scheduling/v1 k8s.io/api/admissionregistration/v1 k8s.io/api/autoscaling/v2 k8s.io/api/networking/v1 k8s.io/api/storage/v1 k8s.io/api/node/v1 k8s.io/api/resource/v1 k8s.io/api/flowcontrol/v1 k8s.io/api/storagemigration/v1 k8s.io/apimachinery/pkg/apis/meta/v1

// The OpenAPI v3 documents: one per group version, generated from the Go
// types. Each operation carries x-kubernetes-group-version-kind and the
// PATCH operations the fieldValidation parameter, which is what kubectl
// checks before leaving validation to the server; the schemas carry the
// strategic-merge extensions kubectl apply uses.

type openAPIDocs struct {
	root []byte
	docs map[string]openAPIDoc // "api/v1", "apis/G/V"
}

// customOpenAPI is the OpenAPI v3 documents of one registry: the typed
// kinds' and those of its custom resources.
type customOpenAPI struct {
	reg  *registry
	docs *openAPIDocs
}

type openAPIDoc struct {
	body []byte
	hash string
}

type obj = map[string]any

func (s *Server) openAPI() *openAPIDocs {
	s.openapiOnce.Do(func() {
		d := &openAPIDocs{docs: map[string]openAPIDoc{}}
		paths := obj{}
		for g, vs := range s.registry().groupVersions(true) {
			for _, v := range vs {
				gv := schema.GroupVersion{Group: g, Version: v}
				body, _ := json.Marshal(s.openAPIGroupVersion(gv))
				sum := sha512.Sum512(body)
				p := gvPath(gv)
				doc := openAPIDoc{body: body, hash: strings.ToUpper(hex.EncodeToString(sum[:]))}
				d.docs[p] = doc
				paths[p] = obj{"serverRelativeURL": "/openapi/v3/" + p + "?hash=" + doc.hash}
			}
		}
		d.root, _ = json.Marshal(obj{"paths": paths})
		s.openapi = d
	})
	return s.openapi
}

// gvPath is "api/v1" or "apis/GROUP/VERSION".
func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// openAPIRoot serves the index of the OpenAPI v3 documents, labelled
// text/plain as kube-apiserver labels it (B.7).
func (s *Server) openAPIRoot(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(s.openAPIWithCustom().root)
}

func (s *Server) openAPIDoc(w http.ResponseWriter, r *http.Request) {
	doc, ok := s.openAPIWithCustom().docs[strings.TrimPrefix(r.URL.Path, "/openapi/v3/")]
	if !ok {
		s.notFound(w, r)
		return
	}
	w.Header().Set("Content-Type", mediaJSON)
	w.Header().Set("Etag", `"`+doc.hash+`"`)
	if r.URL.Query().Get("hash") == doc.hash {
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", "Fri, 01 Jan 2100 00:00:00 GMT")
	}
	_, _ = w.Write(doc.body)
}

// openAPIGroupVersion builds the document of one group version.
func (s *Server) openAPIGroupVersion(gv schema.GroupVersion) obj {
	g := &schemaGen{schemas: obj{}}
	paths := obj{}
	prefix := "/" + gvPath(gv)
	gvkExt := func(kind string) obj { return obj{"group": gv.Group, "version": gv.Version, "kind": kind} }
	refOf := func(o runtime.Object) obj { return g.kind(o, s.scheme) }
	for gvr, res := range s.registry().byGVR {
		if gvr.GroupVersion() != gv || res.unstructuredKind() {
			continue
		}
		if res.virtual() {
			readOnlyPaths(paths, prefix, gvr, res, gvkExt(res.Kind), refOf, s.scheme)
			continue
		}
		item := refOf(s.newObject(res))
		listObj, _ := s.scheme.New(gv.WithKind(res.Kind + "List"))
		list := refOf(listObj)
		ext := gvkExt(res.Kind)
		coll, one := prefix+"/"+gvr.Resource, prefix+"/"+gvr.Resource+"/{name}"
		params := []any{pathParam("name")}
		collParams := []any{}
		if res.Namespaced {
			paths[coll] = obj{"get": op("list", ext, list, listParams())}
			coll = prefix + "/namespaces/{namespace}/" + gvr.Resource
			one = prefix + "/namespaces/{namespace}/" + gvr.Resource + "/{name}"
			params = append(params, pathParam("namespace"))
			collParams = append(collParams, pathParam("namespace"))
		}
		collOps := obj{
			"get":        op("list", ext, list, listParams()),
			"post":       withBody(op("post", ext, item, writeParams()), item),
			"parameters": collParams,
		}
		if !res.NoDeleteCollection {
			collOps["delete"] = op("deletecollection", ext, g.ref(reflect.TypeOf(metav1.Status{})), listParams())
		}
		paths[coll] = collOps
		paths[one] = obj{
			"get":        op("get", ext, item, nil),
			"put":        withBody(op("put", ext, item, writeParams()), item),
			"patch":      patchBody(op("patch", ext, item, append(writeParams(), queryParam("force", "boolean"))), g),
			"delete":     op("delete", ext, item, []any{queryParam("gracePeriodSeconds", "integer"), queryParam("propagationPolicy", "string"), queryParam("dryRun", "string")}),
			"parameters": params,
		}
		for name, sub := range res.Subresources {
			shape := openAPINone
			if b, ok := sub.(*subresource); ok {
				shape = b.openAPI
			}
			switch shape {
			case openAPIObject:
				paths[one+"/"+name] = obj{
					"get":        op("get", ext, item, nil),
					"put":        withBody(op("put", ext, item, writeParams()), item),
					"patch":      patchBody(op("patch", ext, item, append(writeParams(), queryParam("force", "boolean"))), g),
					"parameters": params,
				}
			case openAPIScale:
				scale := refOf(&autoscalingv1.Scale{})
				scaleExt := obj{"group": scaleGVK.Group, "version": scaleGVK.Version, "kind": scaleGVK.Kind}
				paths[one+"/"+name] = obj{
					"get":        op("get", scaleExt, scale, nil),
					"put":        withBody(op("put", scaleExt, scale, writeParams()), scale),
					"patch":      patchBody(op("patch", scaleExt, scale, append(writeParams(), queryParam("force", "boolean"))), g),
					"parameters": params,
				}
			}
		}
	}
	for _, c := range s.creatorEntries(gv) {
		item := refOf(c.c.New())
		p := prefix + "/" + c.gvr.Resource
		var params []any
		if c.c.Namespaced() {
			p = prefix + "/namespaces/{namespace}/" + c.gvr.Resource
			params = append(params, pathParam("namespace"))
		}
		if c.subresource != "" {
			p += "/{name}/" + c.subresource
			params = append(params, pathParam("name"))
		}
		ext := obj{"group": c.gvk.Group, "version": c.gvk.Version, "kind": c.gvk.Kind}
		paths[p] = obj{"post": withBody(op("post", ext, item, writeParams()), item), "parameters": params}
	}
	return obj{
		"openapi":    "3.0.0",
		"info":       obj{"title": "Kubernetes", "version": openAPIVersion},
		"paths":      paths,
		"components": obj{"schemas": g.schemas},
	}
}

// creatorEntries are the Creators' entries under group version gv.
func (s *Server) creatorEntries(gv schema.GroupVersion) []*creatorEntry {
	var out []*creatorEntry
	for gvr, res := range s.registry().byGVR {
		if gvr.GroupVersion() != gv {
			continue
		}
		for _, sub := range res.Subresources {
			if c, ok := sub.(*creatorEntry); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

func op(action string, gvk obj, resp obj, params []any) obj {
	o := obj{
		"x-kubernetes-action":             action,
		"x-kubernetes-group-version-kind": gvk,
		"responses": obj{"200": obj{"description": "OK", "content": obj{
			mediaJSON: obj{"schema": resp}, mediaYAML: obj{"schema": resp}, mediaProtobuf: obj{"schema": resp}}}},
	}
	if params != nil {
		o["parameters"] = params
	}
	return o
}

func withBody(o obj, schema obj) obj {
	o["requestBody"] = obj{"required": true, "content": obj{mediaJSON: obj{"schema": schema}, mediaYAML: obj{"schema": schema}, mediaProtobuf: obj{"schema": schema}}}
	return o
}

func patchBody(o obj, g *schemaGen) obj {
	patch := g.ref(reflect.TypeOf(metav1.Patch{}))
	content := obj{}
	for _, ct := range []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"} {
		content[ct] = obj{"schema": patch}
	}
	o["requestBody"] = obj{"required": true, "content": content}
	return o
}

func pathParam(name string) obj {
	return obj{"name": name, "in": "path", "required": true, "schema": obj{"type": "string", "uniqueItems": true}}
}

func queryParam(name, typ string) obj {
	return obj{"name": name, "in": "query", "schema": obj{"type": typ, "uniqueItems": true}}
}

func writeParams() []any {
	return []any{queryParam("dryRun", "string"), queryParam("fieldManager", "string"), queryParam("fieldValidation", "string")}
}

func listParams() []any {
	ps := []any{}
	for _, p := range []string{"allowWatchBookmarks:boolean", "continue:string", "fieldSelector:string", "labelSelector:string",
		"limit:integer", "resourceVersion:string", "resourceVersionMatch:string", "sendInitialEvents:boolean", "timeoutSeconds:integer", "watch:boolean"} {
		name, typ, _ := strings.Cut(p, ":")
		ps = append(ps, queryParam(name, typ))
	}
	return ps
}

// schemaGen derives OpenAPI schemas from Go types by their json tags.
type schemaGen struct {
	schemas obj
}

var (
	timeType     = reflect.TypeOf(metav1.Time{})
	microType    = reflect.TypeOf(metav1.MicroTime{})
	quantityType = reflect.TypeOf(apiresource.Quantity{})
	intstrType   = reflect.TypeOf(intstr.IntOrString{})
	rawType      = reflect.TypeOf(runtime.RawExtension{})
	durationType = reflect.TypeOf(metav1.Duration{})
	fieldsV1Type = reflect.TypeOf(metav1.FieldsV1{})
)

// kind returns a reference to the schema of a top-level kind, marked with
// its group, version and kind.
func (g *schemaGen) kind(o runtime.Object, scheme *runtime.Scheme) obj {
	t := reflect.TypeOf(o).Elem()
	ref := g.ref(t)
	if kinds, _, err := scheme.ObjectKinds(o); err == nil {
		var exts []any
		sort.Slice(kinds, func(i, j int) bool { return kinds[i].String() < kinds[j].String() })
		for _, k := range kinds {
			exts = append(exts, obj{"group": k.Group, "version": k.Version, "kind": k.Kind})
		}
		g.schemas[schemaName(t)].(obj)["x-kubernetes-group-version-kind"] = exts
	}
	return ref
}

// schemaName is the name kube gives a type's schema, e.g.
// io.k8s.api.core.v1.Pod for k8s.io/api/core/v1.Pod.
func schemaName(t reflect.Type) string {
	p := t.PkgPath()
	if rest, ok := strings.CutPrefix(p, "k8s.io/"); ok {
		p = "io.k8s." + strings.ReplaceAll(rest, "/", ".")
	} else {
		p = strings.ReplaceAll(p, "/", ".")
	}
	return p + "." + t.Name()
}

// ref returns the schema of a field of type t: inline for scalars, lists and
// maps, a $ref to components for structs and the well-known types.
func (g *schemaGen) ref(t reflect.Type) obj {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := wellKnownSchema(t); ok {
		name := schemaName(t)
		g.schemas[name] = s
		return obj{"$ref": "#/components/schemas/" + name}
	}
	if t == durationType {
		return obj{"type": "string"}
	}
	switch t.Kind() {
	case reflect.String:
		if e, ok := openAPIEnums[typeKey(t)]; ok {
			return obj{"type": "string", "enum": e.values}
		}
		return obj{"type": "string"}
	case reflect.Bool:
		return obj{"type": "boolean"}
	case reflect.Int32, reflect.Int16, reflect.Int8, reflect.Uint16, reflect.Uint8:
		return obj{"type": "integer", "format": "int32"}
	case reflect.Int, reflect.Int64, reflect.Uint32, reflect.Uint64, reflect.Uint:
		return obj{"type": "integer", "format": "int64"}
	case reflect.Float32, reflect.Float64:
		return obj{"type": "number", "format": "double"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return obj{"type": "string", "format": "byte"}
		}
		return obj{"type": "array", "items": g.ref(t.Elem())}
	case reflect.Map:
		return obj{"type": "object", "additionalProperties": g.ref(t.Elem())}
	case reflect.Interface:
		return obj{}
	case reflect.Struct:
		name := schemaName(t)
		if _, ok := g.schemas[name]; !ok {
			s := obj{"type": "object"}
			g.schemas[name] = s // before the fields, for recursive types
			docs := swaggerDoc(t)
			if d := docs[""]; d != "" {
				s["description"] = d
			}
			props := obj{}
			var required []any
			g.fields(t, docs, props, &required)
			if len(props) > 0 { // kube leaves a struct without fields without properties
				s["properties"] = props
			}
			if len(required) > 0 {
				s["required"] = required
			}
		}
		return obj{"$ref": "#/components/schemas/" + name}
	}
	return obj{}
}

// swaggerDoc returns the descriptions generated into t's SwaggerDoc
// method, as every type of k8s.io/api and apimachinery's meta/v1 has: key
// "" describes the type, the others its fields by json name. kube's
// OpenAPI definitions carry the same comments.
func swaggerDoc(t reflect.Type) map[string]string {
	type documented interface{ SwaggerDoc() map[string]string }
	if d, ok := reflect.Zero(t).Interface().(documented); ok {
		return d.SwaggerDoc()
	}
	return generatedDoc(t)
}

// generatedDocs are kube-aggregator's generated OpenAPI definitions, which
// describe the apiregistration types (and the meta/v1 ones they use) that
// have no SwaggerDoc method, by model name.
var generatedDocs = sync.OnceValue(func() map[string]common.OpenAPIDefinition {
	return aggregatoropenapi.GetOpenAPIDefinitions(func(path string) spec.Ref { return spec.MustCreateRef(path) })
})

// generatedDoc returns t's descriptions from generatedDocs, as
// swaggerDoc's; nil when t has none there.
func generatedDoc(t reflect.Type) map[string]string {
	type named interface{ OpenAPIModelName() string }
	name := typeKey(t)
	if n, ok := reflect.Zero(t).Interface().(named); ok {
		name = n.OpenAPIModelName()
	}
	def, ok := generatedDocs()[name]
	if !ok {
		return nil
	}
	docs := map[string]string{"": def.Schema.Description}
	for field, prop := range def.Schema.Properties {
		docs[field] = prop.Description
	}
	return docs
}

// openAPIEnum is a string type marked +enum: its values and the lines
// describing them, which kube's descriptions of its fields end with.
type openAPIEnum struct {
	values []string
	lines  []string
}

// typeKey is "PKGPATH.Name", the key of the generated tables.
func typeKey(t reflect.Type) string {
	return t.PkgPath() + "." + t.Name()
}

// fields adds the properties of struct t, described by docs, to props,
// and the names of those that are required to required: a field without
// omitempty, unless its source marks it +optional, or one marked
// +required, as kube's generator decides (zz_generated.openapimarkers.go
// has the markers).
func (g *schemaGen) fields(t reflect.Type, docs map[string]string, props obj, required *[]any) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if name == "" && (f.Anonymous || strings.Contains(opts, "inline")) {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, swaggerDoc(ft), props, required)
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := slices.Contains(strings.Split(opts, ","), "omitempty")
		if marked, ok := openAPIMarkedOptional[typeKey(t)+"."+name]; ok {
			optional = marked
		}
		if !optional {
			*required = append(*required, name)
		}
		s := g.ref(f.Type)
		desc := docs[name]
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if e, ok := openAPIEnums[typeKey(ft)]; ok && ft.Kind() == reflect.String {
			if openAPIEnumAfterBlank[typeKey(t)+"."+name] {
				desc += "\n"
			}
			desc += "\n\nPossible enum values:\n" + strings.Join(e.lines, "\n")
		}
		strategy, key := f.Tag.Get("patchStrategy"), f.Tag.Get("patchMergeKey")
		if desc != "" || strategy != "" || key != "" {
			// A $ref has no siblings in OpenAPI 3.0: kube wraps it.
			if _, isRef := s["$ref"]; isRef {
				s = obj{"allOf": []any{s}}
			}
			if desc != "" {
				s["description"] = desc
			}
			if strategy != "" {
				s["x-kubernetes-patch-strategy"] = strategy
			}
			if key != "" {
				s["x-kubernetes-patch-merge-key"] = key
			}
		}
		props[name] = s
	}
}

// readOnlyPaths adds the paths of a virtual resource whose entry serves
// only get and list of a kind of the scheme (componentstatuses), as kube
// documents them; other virtual resources have none here.
func readOnlyPaths(paths obj, prefix string, gvr schema.GroupVersionResource, res *Resource, ext obj, refOf func(runtime.Object) obj, scheme *runtime.Scheme) {
	if !slices.Equal(res.Subresources[""].Verbs(), []string{"get", "list"}) || res.Namespaced {
		return
	}
	item, err := scheme.New(gvr.GroupVersion().WithKind(res.Kind))
	if err != nil {
		return
	}
	listObj, err := scheme.New(gvr.GroupVersion().WithKind(res.Kind + "List"))
	if err != nil {
		return
	}
	coll := prefix + "/" + gvr.Resource
	paths[coll] = obj{"get": op("list", ext, refOf(listObj), listParams()), "parameters": []any{}}
	paths[coll+"/{name}"] = obj{"get": op("get", ext, refOf(item), nil), "parameters": []any{pathParam("name")}}
}
