package apiserver

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// serveAggregated answers /api (core) or /apis with an
// apidiscovery.k8s.io/v2 APIGroupDiscoveryList when the Accept header asks
// for one (in JSON, YAML or protobuf), and reports whether it did. Any other
// Accept gets the legacy document, as from kube-apiserver (B.6).
func (s *Server) serveAggregated(w http.ResponseWriter, r *http.Request, core bool) bool {
	out, err := s.negotiate(r, acceptOptions{aggregated: true})
	if err != nil || !out.aggregated {
		return false
	}
	list := s.aggregatedDiscovery(core)
	etag, err := discoveryETag(list)
	if err != nil {
		s.writeErr(w, r, err)
		return true
	}
	// The ETag is the same whatever the encoding, so caches must key on
	// Accept too; a client that has this document already gets a 304.
	w.Header().Set("ETag", etag)
	w.Header().Set("Vary", "Accept")
	w.Header().Set("Cache-Control", "public")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	list.TypeMeta = metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: apidiscoveryv2.SchemeGroupVersion.String()}
	s.write(w, out, http.StatusOK, list)
	return true
}

// discoveryETag is the quoted ETag of an aggregated discovery document: the
// SHA-512, in upper-case hex, of its JSON without kind and apiVersion, as
// kube-apiserver computes it. A client that caches discovery sends it back
// in If-None-Match.
func discoveryETag(list *apidiscoveryv2.APIGroupDiscoveryList) (string, error) {
	data, err := json.Marshal(list)
	if err != nil {
		return "", fmt.Errorf("encode discovery document: %w", err)
	}
	return strconv.Quote(fmt.Sprintf("%X", sha512.Sum512(data))), nil
}

// aggregatedDiscovery returns the groups of the core API (core) or of the
// named API groups in one document: each group version's resources as its
// legacy APIResourceList lists them, with the subresources inside their
// resource.
func (s *Server) aggregatedDiscovery(core bool) *apidiscoveryv2.APIGroupDiscoveryList {
	reg := s.registry()
	var remote map[string]RemoteGroup
	groups := []string{""}
	if !core {
		remote = s.remoteGroups(reg)
		groups = discoveryGroups(reg, remote)
	}
	gvs := reg.groupVersions(false)
	list := &apidiscoveryv2.APIGroupDiscoveryList{Items: []apidiscoveryv2.APIGroupDiscovery{}}
	for _, g := range groups {
		if rg, ok := remote[g]; ok {
			if len(rg.Discovery) > 0 {
				list.Items = append(list.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g}, Versions: rg.Discovery})
			}
			continue
		}
		item := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g}}
		for _, v := range gvs[g] {
			rl := reg.resourceList(schema.GroupVersion{Group: g, Version: v})
			if rl == nil {
				continue
			}
			gv := schema.GroupVersion{Group: g, Version: v}
			item.Versions = append(item.Versions, apidiscoveryv2.APIVersionDiscovery{Version: v,
				Resources: reg.customResponseKinds(gv, resourcesForDiscovery(rl.APIResources)), Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent})
		}
		if len(item.Versions) > 0 {
			list.Items = append(list.Items, item)
		}
	}
	return list
}

// AggregatedResources is the aggregated discovery of the resources of a
// legacy APIResourceList, as kube-aggregator turns a remote server's
// legacy discovery into aggregated discovery.
func AggregatedResources(rs []metav1.APIResource) []apidiscoveryv2.APIResourceDiscovery {
	sorted := slices.Clone(rs)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	return resourcesForDiscovery(sorted)
}

// resourcesForDiscovery turns the entries of a legacy APIResourceList,
// sorted by name so that a resource comes before its subresources, into
// aggregated discovery's resources. The response kind's group and version
// stay empty unless they differ from the group version's, as in the legacy
// list.
func resourcesForDiscovery(rs []metav1.APIResource) []apidiscoveryv2.APIResourceDiscovery {
	var out []apidiscoveryv2.APIResourceDiscovery
	index := map[string]int{}
	for _, r := range rs {
		kind := &metav1.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
		parent, sub, isSub := strings.Cut(r.Name, "/")
		if !isSub {
			scope := apidiscoveryv2.ScopeCluster
			if r.Namespaced {
				scope = apidiscoveryv2.ScopeNamespace
			}
			index[r.Name] = len(out)
			out = append(out, apidiscoveryv2.APIResourceDiscovery{Resource: r.Name, ResponseKind: kind, Scope: scope,
				SingularResource: r.SingularName, Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories})
			continue
		}
		i, ok := index[parent]
		if !ok {
			continue // every subresource kubegate serves belongs to a resource it serves
		}
		out[i].Subresources = append(out[i].Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: sub,
			ResponseKind: kind, Verbs: r.Verbs})
	}
	return out
}

// customResponseKinds gives the response kinds of an unstructured kind
// (a custom resource) and of its subresources of that kind their group
// and version, which kube's discovery of custom resources names.
func (reg *registry) customResponseKinds(gv schema.GroupVersion, rs []apidiscoveryv2.APIResourceDiscovery) []apidiscoveryv2.APIResourceDiscovery {
	fill := func(k *metav1.GroupVersionKind) {
		if k != nil && k.Group == "" && k.Version == "" {
			k.Group, k.Version = gv.Group, gv.Version
		}
	}
	for i := range rs {
		res, ok := reg.get(gv.WithResource(rs[i].Resource))
		if !ok || !res.unstructuredKind() {
			continue
		}
		fill(rs[i].ResponseKind)
		for j := range rs[i].Subresources {
			fill(rs[i].Subresources[j].ResponseKind)
		}
	}
	return rs
}
