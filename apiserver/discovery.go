package apiserver

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	goruntime "runtime"
	"sort"
	"strings"

	"github.com/go-chi/chi/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// GitVersion is the Kubernetes version the server reports on /version: that
// of the API types it serves (k8s.io/api v0.37.2), as kube-apiserver v1.37.2
// reports it (D.7). kubegate's own version is not here: `kubegate version`
// prints it.
const GitVersion = "v1.37.2"

// openAPIVersion is the info.version of the OpenAPI documents: the major
// and minor version only, as kube-apiserver gives it.
const openAPIVersion = "1.37"

// version answers /version with kube-apiserver's fields. The emulation
// version is the binary's own and the minimum compatibility version one
// minor below, kube's defaults. gitCommit and buildDate, which would be
// Kubernetes' build's, stay empty.
func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	info := &version.Info{Major: "1", Minor: "37", EmulationMajor: "1", EmulationMinor: "37",
		MinCompatibilityMajor: "1", MinCompatibilityMinor: "36", GitVersion: GitVersion, GitTreeState: "clean",
		GoVersion: goruntime.Version(), Compiler: goruntime.Compiler, Platform: goruntime.GOOS + "/" + goruntime.GOARCH}
	// Indented, as kube-apiserver writes it whatever the client accepts.
	data, _ := json.MarshalIndent(info, "", "  ")
	w.Header().Set("Content-Type", mediaJSON)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// kubeGroupPriority is the priority kube-apiserver gives each API group it
// serves (its APIServices' group priority), for the groups kubegate serves.
// Discovery lists groups from the highest priority down, then by name (B.6).
var kubeGroupPriority = map[string]int{
	"":                          18000,
	"apps":                      17800,
	"events.k8s.io":             17750,
	"authentication.k8s.io":     17700,
	"authorization.k8s.io":      17600,
	"batch":                     17400,
	"certificates.k8s.io":       17300,
	"policy":                    17100,
	"rbac.authorization.k8s.io": 17000,
	"apiextensions.k8s.io":      16700,
	"scheduling.k8s.io":         16600,
	"coordination.k8s.io":       16500,
	"discovery.k8s.io":          16200,
	// admissionregistration.k8s.io (I.2)
	"admissionregistration.k8s.io": 16700,
	"apiregistration.k8s.io":       20001,
	"autoscaling":                  17500,
	"networking.k8s.io":            17200,
	"storage.k8s.io":               16800,
	"node.k8s.io":                  16300,
	"resource.k8s.io":              16200,
	"flowcontrol.apiserver.k8s.io": 16100,
	"storagemigration.k8s.io":      15800,
}

// sortGroups puts API group names in kube-apiserver's discovery order.
func sortGroups(groups []string) {
	sort.SliceStable(groups, func(i, j int) bool {
		pi, pj := kubeGroupPriority[groups[i]], kubeGroupPriority[groups[j]]
		if pi != pj {
			return pi > pj
		}
		return groups[i] < groups[j]
	})
}

// groupVersions returns every group (core as "") with its versions, the
// preferred (most stable, newest) first as kube-apiserver orders them.
func (s *Server) groupVersions() map[string][]string { return s.registry().groupVersions(false) }

// groupVersions returns reg's groups with their versions as
// Server.groupVersions does; without those of unstructured kinds when
// typedOnly.
func (reg *registry) groupVersions(typedOnly bool) map[string][]string {
	gv := map[string]map[string]bool{}
	add := func(g, v string) {
		if gv[g] == nil {
			gv[g] = map[string]bool{}
		}
		gv[g][v] = true
	}
	for gvr, res := range reg.byGVR {
		if typedOnly && res.unstructuredKind() {
			continue
		}
		add(gvr.Group, gvr.Version)
	}
	out := map[string][]string{}
	for g, vs := range gv {
		for v := range vs {
			out[g] = append(out[g], v)
		}
		sort.Slice(out[g], func(i, j int) bool {
			return version.CompareKubeAwareVersionStrings(out[g][i], out[g][j]) > 0
		})
	}
	return out
}

func (s *Server) writeDiscovery(w http.ResponseWriter, r *http.Request, obj runtime.Object) {
	out, err := s.negotiate(r, acceptOptions{})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	s.write(w, out, http.StatusOK, obj)
}

func (s *Server) apiVersions(w http.ResponseWriter, r *http.Request) {
	// kube-apiserver serves /api, unlike /apis, from a route that checks
	// the Accept media types first (B.6).
	if err := checkRouteAccept(r, routeMediaTypes); err != nil {
		s.writeErr(w, r, err)
		return
	}
	if s.serveAggregated(w, r, true) {
		return
	}
	addr := s.cfg.ExternalAddress
	if addr == "" {
		addr = r.Host
	}
	s.writeDiscovery(w, r, &metav1.APIVersions{
		TypeMeta:                   metav1.TypeMeta{Kind: "APIVersions"},
		Versions:                   []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: addr}},
	})
}

func (s *Server) apiGroupOf(name string, versions []string) metav1.APIGroup {
	g := metav1.APIGroup{Name: name}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + v, Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	return g
}

func (s *Server) apiGroups(w http.ResponseWriter, r *http.Request) {
	if s.serveAggregated(w, r, false) {
		return
	}
	reg := s.registry()
	gvs := reg.groupVersions(false)
	remote := s.remoteGroups(reg)
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, g := range discoveryGroups(reg, remote) {
		if rg, ok := remote[g]; ok {
			list.Groups = append(list.Groups, remoteAPIGroup(rg))
			continue
		}
		list.Groups = append(list.Groups, s.apiGroupOf(g, gvs[g]))
	}
	s.writeDiscovery(w, r, list)
}

func (s *Server) apiGroup(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "group")
	vs := s.groupVersions()[name]
	if rg, ok := s.remoteGroups(s.registry())[name]; ok && len(vs) == 0 {
		// kube-aggregator answers a remote group's document itself, from
		// its APIServices.
		g := remoteAPIGroup(rg)
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		s.writeDiscovery(w, r, &g)
		return
	}
	if name == "" || len(vs) == 0 {
		s.notFound(w, r)
		return
	}
	g := s.apiGroupOf(name, vs)
	g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
	s.writeDiscovery(w, r, &g)
}

func (s *Server) apiResources(w http.ResponseWriter, r *http.Request) {
	// kube-apiserver serves these documents from routes that check the
	// Accept media types first (B.6).
	if err := checkRouteAccept(r, routeMediaTypes); err != nil {
		s.writeErr(w, r, err)
		return
	}
	gv := schema.GroupVersion{Group: chi.URLParam(r, "group"), Version: chi.URLParam(r, "version")}
	if h, ok := s.remoteHandler(r, gv); ok {
		h.ServeHTTP(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/apis/") && gv.Group == "" {
		s.notFound(w, r)
		return
	}
	list := s.registry().resourceList(gv)
	if list == nil {
		s.notFound(w, r)
		return
	}
	s.writeDiscovery(w, r, list)
}

// verbs are the verbs discovery lists for the resource itself, sorted as
// kube-apiserver sorts them.
func (r *Resource) verbs() metav1.Verbs {
	if r.Verbs != nil {
		return r.Verbs
	}
	if r.NoDeleteCollection {
		return metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
	}
	return metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
}

// storageVersionHash is the hash kube-apiserver publishes for a stored
// resource, by which clients (the storage version migrator) tell when its
// storage version changed: the first 8 bytes of the SHA-256 of
// "GROUP/VERSION/KIND" of the stored kind, in standard base64 (B.6).
func (r *Resource) storageVersionHash() string {
	gvk := r.StoredAs
	if gvk.Empty() {
		gvk = r.gvk()
	}
	sum := sha256.Sum256([]byte(gvk.Group + "/" + gvk.Version + "/" + gvk.Kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// resourceList is the discovery document of one group version; nil when the
// server has no such group version.
func (reg *registry) resourceList(gv schema.GroupVersion) *metav1.APIResourceList {
	var rs []metav1.APIResource
	for gvr, res := range reg.byGVR {
		if gvr.GroupVersion() != gv {
			continue
		}
		if e, ok := res.Subresources[""]; ok {
			rs = append(rs, metav1.APIResource{Name: gvr.Resource, SingularName: res.Singular, Namespaced: res.Namespaced,
				Kind: res.Kind, Verbs: e.Verbs(), ShortNames: res.ShortNames, Categories: res.Categories})
			continue
		}
		rs = append(rs, metav1.APIResource{Name: gvr.Resource, SingularName: res.Singular, Namespaced: res.Namespaced,
			Kind: res.Kind, Verbs: res.verbs(), ShortNames: res.ShortNames, Categories: res.Categories,
			StorageVersionHash: res.storageVersionHash()})
		for _, sub := range res.Subresources {
			rs = append(rs, subresourceDiscovery(res, sub))
		}
	}
	if len(rs) == 0 {
		return nil
	}
	sort.Slice(rs, func(i, j int) bool { return discoveryLess(reg, gv, rs[i].Name, rs[j].Name) })
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv.String(), APIResources: rs}
	if gv == coreGV {
		// kube-apiserver's /api/v1 document has a kind but no apiVersion.
		list.APIVersion = ""
	}
	return list
}

// subresourceDiscovery is the discovery entry of a subresource of res.
func subresourceDiscovery(res *Resource, sub Subresource) metav1.APIResource {
	k := sub.Kind()
	if k.Kind == "" {
		k.Kind = res.Kind
	}
	return metav1.APIResource{Name: res.GVR.Resource + "/" + sub.Name(), Namespaced: res.Namespaced, Group: k.Group, Version: k.Version,
		Kind: k.Kind, Verbs: sub.Verbs()}
}

// discoveryLess orders a group version's discovery entries by name, a
// resource before its subresources, which come by name too except for an
// unstructured kind's (a custom resource's): kube lists its status before
// its scale.
func discoveryLess(reg *registry, gv schema.GroupVersion, a, b string) bool {
	pa, sa, _ := strings.Cut(a, "/")
	pb, sb, _ := strings.Cut(b, "/")
	if pa != pb || sa == "" || sb == "" {
		return a < b
	}
	if res, ok := reg.get(gv.WithResource(pa)); ok && res.unstructuredKind() {
		rank := map[string]int{"status": 1, "scale": 2}
		if rank[sa] != rank[sb] {
			return rank[sa] < rank[sb]
		}
	}
	return sa < sb
}

// GroupPriority is the priority kube-apiserver gives group, which its
// local APIServices carry as their group priority; false for a group
// kube does not serve.
func GroupPriority(group string) (int32, bool) {
	p, ok := kubeGroupPriority[group]
	return int32(p), ok
}

// TypedGroupVersions returns the group versions of the kinds the server
// serves from its registry, custom resources aside, in no order.
func (s *Server) TypedGroupVersions() []schema.GroupVersion {
	var gvs []schema.GroupVersion
	for g, vs := range s.registry().groupVersions(true) {
		for _, v := range vs {
			gvs = append(gvs, schema.GroupVersion{Group: g, Version: v})
		}
	}
	return gvs
}
