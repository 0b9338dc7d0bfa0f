package apiserver

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"maps"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
)

// openAPIWithCustom returns the OpenAPI v3 documents served now: those of
// the typed kinds, built once, and, for each group version of custom
// resources, their documents merged as kube merges them, built again
// when the registry changes (I.2).
func (s *Server) openAPIWithCustom() *openAPIDocs {
	typed := s.openAPI()
	reg := s.registry()
	if c := s.openapiCustom.Load(); c != nil && c.reg == reg {
		return c.docs
	}
	byGV := map[schema.GroupVersion][]*spec3.OpenAPI{}
	for gvr, res := range reg.byGVR {
		if res.OpenAPIV3 != nil {
			byGV[gvr.GroupVersion()] = append(byGV[gvr.GroupVersion()], res.OpenAPIV3)
		}
	}
	docs := typed
	if len(byGV) > 0 {
		docs = &openAPIDocs{docs: maps.Clone(typed.docs)}
		for gv, specs := range byGV {
			merged, err := builder.MergeSpecsV3(specs...)
			if err != nil {
				s.log.Warn("openapi: merge custom resource documents", "groupVersion", gv.String(), "err", err)
				continue
			}
			body, err := json.Marshal(merged)
			if err != nil {
				s.log.Warn("openapi: encode custom resource documents", "groupVersion", gv.String(), "err", err)
				continue
			}
			sum := sha512.Sum512(body)
			docs.docs[gvPath(gv)] = openAPIDoc{body: body, hash: strings.ToUpper(hex.EncodeToString(sum[:]))}
		}
		paths := obj{}
		for p, doc := range docs.docs {
			paths[p] = obj{"serverRelativeURL": "/openapi/v3/" + p + "?hash=" + doc.hash}
		}
		docs.root, _ = json.Marshal(obj{"paths": paths})
	}
	s.openapiCustom.Store(&customOpenAPI{reg: reg, docs: docs})
	return docs
}
