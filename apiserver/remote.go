package apiserver

import (
	"net/http"
	"sort"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Aggregator gives the server the group versions other API servers
// serve: those of the APIServices that name a service (I.3). The server
// asks it only about a group version it does not serve itself, and only
// once the request is authenticated and authorized, as kube-aggregator's
// proxy sits behind kube-apiserver's filters.
type Aggregator interface {
	// Handler returns what serves the requests under /apis/GROUP/VERSION
	// of gv; false when no APIService with a service names gv.
	Handler(gv schema.GroupVersion) (http.Handler, bool)
	// Groups returns the API groups other servers serve, in no order.
	Groups() []RemoteGroup
}

// RemoteGroup is an API group other servers serve.
type RemoteGroup struct {
	Name string
	// Priority is the highest groupPriorityMinimum of the group's
	// APIServices; discovery lists groups from the highest down.
	Priority int32
	// Versions are the group's versions, preferred first.
	Versions []string
	// Discovery holds, for aggregated discovery, each version whose
	// server has answered discovery (a version that no longer answers
	// keeps what it last said, marked Stale); nil when none has.
	Discovery []apidiscoveryv2.APIVersionDiscovery
}

// customGroupPriority is the group priority of custom resources'
// APIServices, which places their groups in discovery among the remote
// ones.
const customGroupPriority = 1000

// remoteHandler returns the aggregator's handler of the request's group
// version when the server does not serve that group version itself.
func (s *Server) remoteHandler(r *http.Request, gv schema.GroupVersion) (http.Handler, bool) {
	if s.cfg.Aggregator == nil || gv.Group == "" || !strings.HasPrefix(r.URL.Path, "/apis/") || s.registry().servesGroupVersion(gv) {
		return nil, false
	}
	return s.cfg.Aggregator.Handler(gv)
}

// remoteGroups returns the aggregator's groups that the server does not
// serve itself, by name.
func (s *Server) remoteGroups(reg *registry) map[string]RemoteGroup {
	if s.cfg.Aggregator == nil {
		return nil
	}
	local := map[string]bool{}
	for _, g := range reg.groups {
		local[g] = true
	}
	out := map[string]RemoteGroup{}
	for _, g := range s.cfg.Aggregator.Groups() {
		if !local[g.Name] && g.Name != "" && len(g.Versions) > 0 {
			out[g.Name] = g
		}
	}
	return out
}

// discoveryGroups returns the names of the groups of reg and the remote
// groups in discovery order: by group priority (a custom resource's
// group has 1000, as its APIService), then by name.
func discoveryGroups(reg *registry, remote map[string]RemoteGroup) []string {
	if len(remote) == 0 {
		return reg.groups
	}
	prio := map[string]int{}
	groups := make([]string, 0, len(reg.groups)+len(remote))
	for _, g := range reg.groups {
		p, ok := kubeGroupPriority[g]
		if !ok {
			p = customGroupPriority
		}
		prio[g] = p
		groups = append(groups, g)
	}
	for g, rg := range remote {
		prio[g] = int(rg.Priority)
		groups = append(groups, g)
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if prio[groups[i]] != prio[groups[j]] {
			return prio[groups[i]] > prio[groups[j]]
		}
		return groups[i] < groups[j]
	})
	return groups
}

// remoteAPIGroup is the legacy discovery of a remote group, as
// kube-aggregator writes it from the APIServices.
func remoteAPIGroup(rg RemoteGroup) metav1.APIGroup {
	g := metav1.APIGroup{Name: rg.Name}
	for _, v := range rg.Versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: rg.Name + "/" + v, Version: v})
	}
	if len(g.Versions) > 0 {
		g.PreferredVersion = g.Versions[0]
	}
	return g
}

// servesGroupVersion reports whether reg has a resource in gv.
func (reg *registry) servesGroupVersion(gv schema.GroupVersion) bool {
	for gvr := range reg.byGVR {
		if gvr.GroupVersion() == gv {
			return true
		}
	}
	return false
}
