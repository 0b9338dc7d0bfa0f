package endpoints

//lint:file-ignore SA1019 v1 Endpoints are deprecated, and served and kept as kube does (G.10)

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/dump"
)

// repack puts subsets in the one shape kube's endpoints controller writes
// (G.10): every address once per set of ports it serves, in one subset
// per distinct set; an address not ready on some port is not ready on
// it. Addresses are sorted by IP then target UID; ports and subsets by
// the MD5 of their printed form, which is how kube orders them, so that
// two ports or subsets come out in kube's order.
func repack(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	type addrKey struct {
		ip  string
		uid types.UID
	}
	addrs := map[addrKey]*corev1.EndpointAddress{}
	byPort := map[corev1.EndpointPort]map[*corev1.EndpointAddress]bool{}
	var portOrder []corev1.EndpointPort
	note := func(a *corev1.EndpointAddress, port corev1.EndpointPort, ready bool) {
		k := addrKey{ip: a.IP}
		if a.TargetRef != nil {
			k.uid = a.TargetRef.UID
		}
		have := addrs[k]
		if have == nil {
			c := *a
			have = &c
			addrs[k] = have
		}
		set := byPort[port]
		if set == nil {
			set = map[*corev1.EndpointAddress]bool{}
			byPort[port] = set
			portOrder = append(portOrder, port)
		}
		if was, ok := set[have]; !ok || was {
			set[have] = ready
		}
	}
	for i := range subsets {
		ports := subsets[i].Ports
		if len(ports) == 0 {
			// Addresses without ports (a headless Service's) are kept,
			// under a port that stands for none.
			ports = []corev1.EndpointPort{noPort}
		}
		for _, p := range ports {
			for j := range subsets[i].Addresses {
				note(&subsets[i].Addresses[j], p, true)
			}
			for j := range subsets[i].NotReadyAddresses {
				note(&subsets[i].NotReadyAddresses[j], p, false)
			}
		}
	}
	// Group the ports by the set of addresses (and their readiness) they
	// are served on.
	type group struct {
		set   map[*corev1.EndpointAddress]bool
		ports []corev1.EndpointPort
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, p := range portOrder {
		set := byPort[p]
		k := setKey(set)
		g := byKey[k]
		if g == nil {
			g = &group{set: set}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.ports = append(g.ports, p)
	}
	out := []corev1.EndpointSubset{}
	for _, g := range groups {
		var ss corev1.EndpointSubset
		for a, ready := range g.set {
			if ready {
				ss.Addresses = append(ss.Addresses, *a)
			} else {
				ss.NotReadyAddresses = append(ss.NotReadyAddresses, *a)
			}
		}
		if len(g.ports) != 1 || g.ports[0] != noPort {
			ss.Ports = g.ports
		}
		out = append(out, ss)
	}
	for i := range out {
		slices.SortFunc(out[i].Addresses, compareAddresses)
		slices.SortFunc(out[i].NotReadyAddresses, compareAddresses)
		slices.SortFunc(out[i].Ports, func(a, b corev1.EndpointPort) int { return bytes.Compare(hashOf(a), hashOf(b)) })
	}
	slices.SortFunc(out, func(a, b corev1.EndpointSubset) int { return bytes.Compare(hashOf(a), hashOf(b)) })
	return out
}

// noPort stands for the ports of addresses that have none.
var noPort = corev1.EndpointPort{Port: -1}

// setKey names a set of addresses with their readiness.
func setKey(set map[*corev1.EndpointAddress]bool) string {
	parts := make([]string, 0, len(set))
	for a, ready := range set {
		uid := ""
		if a.TargetRef != nil {
			uid = string(a.TargetRef.UID)
		}
		parts = append(parts, fmt.Sprintf("%s/%s/%t", a.IP, uid, ready))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func compareAddresses(a, b corev1.EndpointAddress) int {
	if c := strings.Compare(a.IP, b.IP); c != 0 {
		return c
	}
	switch {
	case a.TargetRef == nil && b.TargetRef == nil:
		return 0
	case b.TargetRef == nil:
		return 1
	case a.TargetRef == nil:
		return -1
	}
	return strings.Compare(string(a.TargetRef.UID), string(b.TargetRef.UID))
}

// hashOf is the MD5 of v printed as kube prints objects to hash them.
func hashOf(v any) []byte {
	h := md5.Sum([]byte(dump.ForHash(v)))
	return h[:]
}
