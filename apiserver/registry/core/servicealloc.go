package core

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// The cluster IPs and node ports of Services (D.6): which a Service needs,
// kept, given back or dropped as its type changes. apiserver's allocator
// reserves them in the store around the write, through the
// ServiceAllocation it gives the resource's Allocate and Release hooks.

// defaultIPFamilyPolicy is the ipFamilyPolicy of a Service that names
// none: the one it had, both families for a headless Service without a
// selector, else single-stack.
func defaultIPFamilyPolicy(svc, old *corev1.Service) corev1.IPFamilyPolicy {
	var p corev1.IPFamilyPolicy
	switch {
	case old != nil && old.Spec.IPFamilyPolicy != nil:
		p = *old.Spec.IPFamilyPolicy
	case svc.Spec.ClusterIP == corev1.ClusterIPNone && len(svc.Spec.Selector) == 0:
		// Headless without selector defaults to both families, even
		// where only one is configured: its endpoints are the user's.
		p = corev1.IPFamilyPolicyRequireDualStack
	default:
		p = corev1.IPFamilyPolicySingleStack
	}
	return p
}

// familiesOfClusterIPs refuses more than one cluster IP or family under
// a single-stack policy, and a cluster IP of a family this cluster does
// not serve; it names the family of each cluster IP that has none.
func familiesOfClusterIPs(family corev1.IPFamily, svc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	var errs field.ErrorList
	policyPath := field.NewPath("spec", "ipFamilyPolicy")
	if *spec.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack {
		if len(spec.ClusterIPs) == 2 {
			errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
		}
		if len(spec.IPFamilies) == 2 {
			errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
		}
	}
	for i, ip := range spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			break
		}
		fam := familyOf(ip)
		if i >= len(spec.IPFamilies) {
			if fam != family {
				errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(i), spec.ClusterIPs, fmt.Sprintf("%s is not configured on this cluster", fam)))
			} else {
				spec.IPFamilies = append(spec.IPFamilies, fam)
			}
		}
	}
	return errs
}

// initIPFamilies fills ipFamilyPolicy and ipFamilies as a single-stack
// cluster of family does, and refuses what it cannot serve.
func initIPFamilies(family corev1.IPFamily, svc, old *corev1.Service) error {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if spec.IPFamilyPolicy == nil {
		p := defaultIPFamilyPolicy(svc, old)
		spec.IPFamilyPolicy = &p
	}
	if errs := validateClusterIPFields(svc, old); len(errs) > 0 {
		return apierrors.NewInvalid(serviceKind, svc.Name, errs)
	}
	policy := *spec.IPFamilyPolicy
	policyPath := field.NewPath("spec", "ipFamilyPolicy")
	if errs := familiesOfClusterIPs(family, svc); len(errs) > 0 {
		return apierrors.NewInvalid(serviceKind, svc.Name, errs)
	}
	var errs field.ErrorList
	if spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0 {
		if len(spec.IPFamilies) == 0 {
			spec.IPFamilies = []corev1.IPFamily{family}
		}
		if len(spec.IPFamilies) < 2 && policy != corev1.IPFamilyPolicySingleStack {
			other := corev1.IPv6Protocol
			if spec.IPFamilies[0] == corev1.IPv6Protocol {
				other = corev1.IPv4Protocol
			}
			spec.IPFamilies = append(spec.IPFamilies, other)
		}
		return nil
	}
	if policy == corev1.IPFamilyPolicyRequireDualStack {
		errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "this cluster is not configured for dual-stack services"))
	}
	for i, fam := range spec.IPFamilies {
		if fam != family {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), fam, "not configured on this cluster"))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(serviceKind, svc.Name, errs)
	}
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{family}
	}
	return nil
}

// validateClusterIPFields is the check kube runs before allocating: the
// two fields agree and hold addresses, the IP families and the family
// policy have supported values.
func validateClusterIPFields(svc, old *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	path := field.NewPath("spec", "clusterIPs")
	var errs field.ErrorList
	switch {
	case spec.ClusterIP != "" && len(spec.ClusterIPs) == 0:
		errs = append(errs, field.Required(path, ""))
	case spec.ClusterIP != "" && spec.ClusterIPs[0] != spec.ClusterIP:
		errs = append(errs, field.Invalid(path, spec.ClusterIPs, "first value must match `clusterIP`"))
	case spec.ClusterIP == "" && len(spec.ClusterIPs) != 0:
		errs = append(errs, field.Invalid(path, spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	seen := map[corev1.IPFamily]bool{}
	for i, fam := range spec.IPFamilies {
		p := field.NewPath("spec", "ipFamilies").Index(i)
		if fam != corev1.IPv4Protocol && fam != corev1.IPv6Protocol {
			errs = append(errs, field.NotSupported(p, fam, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}))
		}
		if seen[fam] {
			errs = append(errs, field.Duplicate(p, fam))
		}
		seen[fam] = true
	}
	if pol := spec.IPFamilyPolicy; pol != nil && *pol != corev1.IPFamilyPolicySingleStack &&
		*pol != corev1.IPFamilyPolicyPreferDualStack && *pol != corev1.IPFamilyPolicyRequireDualStack {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "ipFamilyPolicy"), *pol, []corev1.IPFamilyPolicy{
			corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack}))
	}
	var oldIPs []string
	if old != nil {
		oldIPs = old.Spec.ClusterIPs
	}
	for i, ip := range spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(spec.ClusterIPs) > 1 {
				errs = append(errs, field.Invalid(path, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		errs = append(errs, validation.IsValidIPForLegacyField(path.Index(i), ip, true, oldIPs)...)
	}
	if len(spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(path, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	return errs
}

func familyOf(ip string) corev1.IPFamily {
	if a, err := netip.ParseAddr(ip); err == nil && a.Unmap().Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// allocateService reserves the cluster IP and node ports of a Service
// being created (old nil) or updated within a, after filling in from old
// what the client left out; the writer keeps or gives back what a holds
// once the write is done or has failed.
func allocateService(a apiserver.ServiceAllocation, obj, old runtime.Object) error {
	svc := obj.(*corev1.Service)
	var oldSvc *corev1.Service
	if old != nil {
		oldSvc = old.(*corev1.Service)
		keepAllocated(svc, oldSvc)
	}
	syncClusterIPs(svc, oldSvc)
	if err := initIPFamilies(a.Family(), svc, oldSvc); err != nil {
		return err
	}
	if err := allocateClusterIPs(a, svc, oldSvc); err != nil {
		return err
	}
	if err := allocateNodePorts(a, svc, oldSvc); err != nil {
		return err
	}
	if oldSvc != nil {
		dropTypeFields(svc, oldSvc)
	}
	return nil
}

// keepAllocated copies into an update what was allocated and the client
// left out, so that resubmitting the manifest a Service was created from
// keeps its cluster IP and node ports.
func keepAllocated(svc, old *corev1.Service) {
	if needsClusterIP(old) && needsClusterIP(svc) {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = old.Spec.ClusterIP
		}
		if len(svc.Spec.ClusterIPs) == 0 && len(old.Spec.ClusterIPs) > 0 {
			svc.Spec.ClusterIPs = old.Spec.ClusterIPs
		}
	}
	if allocatesNodePorts(old) && allocatesNodePorts(svc) {
		inBoth := map[int32]bool{}
		for _, p := range svc.Spec.Ports {
			for _, o := range old.Spec.Ports {
				if p.NodePort != 0 && p.NodePort == o.NodePort {
					inBoth[p.NodePort] = true
				}
			}
		}
		byName := map[string]int32{}
		for _, o := range old.Spec.Ports {
			byName[o.Name] = o.NodePort
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 && !inBoth[byName[p.Name]] {
				p.NodePort = byName[p.Name]
			}
		}
	}
	if needsHealthCheckPort(old) && needsHealthCheckPort(svc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

// syncClusterIPs keeps clusterIP and clusterIPs[0] together: old clients
// set only the first.
func syncClusterIPs(svc, old *corev1.Service) {
	spec := &svc.Spec
	if old == nil {
		if spec.ClusterIP != "" && len(spec.ClusterIPs) == 0 {
			spec.ClusterIPs = []string{spec.ClusterIP}
		}
		return
	}
	if len(old.Spec.ClusterIPs) > 0 && len(spec.ClusterIPs) == 0 && old.Spec.ClusterIP == spec.ClusterIP {
		spec.ClusterIPs = old.Spec.ClusterIPs
	}
	if old.Spec.ClusterIP != spec.ClusterIP && slices.Equal(old.Spec.ClusterIPs, spec.ClusterIPs) {
		if spec.ClusterIP == "" {
			spec.ClusterIPs = nil
		} else {
			spec.ClusterIPs = []string{spec.ClusterIP}
		}
	}
}

// allocateClusterIPs gives a Service that needs one a cluster IP, the one
// it asks for or a free one, and on an update to ExternalName releases the
// old one.
func allocateClusterIPs(a apiserver.ServiceAllocation, svc, old *corev1.Service) error {
	if old != nil {
		switch {
		case !needsClusterIP(old) && needsClusterIP(svc):
		case isHeadless(old) || !needsClusterIP(old) || needsClusterIP(svc):
			return nil // unchanged; validation refuses a changed IP
		default: // to ExternalName
			for _, ip := range old.Spec.ClusterIPs {
				a.ReleaseIP(old, ip)
			}
			return nil
		}
	}
	if !needsClusterIP(svc) || isHeadless(svc) {
		return nil
	}
	spec := &svc.Spec
	if len(spec.ClusterIPs) == 0 {
		spec.ClusterIPs = []string{""}
	}
	want := spec.ClusterIPs[0]
	if want == "" {
		ip, err := a.NextIP(svc)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP for Service %q: %w", svc.Name, err))
		}
		spec.ClusterIPs[0] = ip.String()
	} else {
		ip, err := netip.ParseAddr(want)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to parse service IP %q", want))
		}
		if err := a.IP(svc, ip); err != nil {
			return apierrors.NewInvalid(serviceKind, svc.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"),
				spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %v: %v", want, err))})
		}
	}
	spec.ClusterIP = spec.ClusterIPs[0]
	return nil
}

// allocateServiceNodePorts reserves the node ports the ports of a
// NodePort or LoadBalancer Service ask for and picks free ones for those
// without; held are those the Service held before an update.
func allocateServiceNodePorts(a apiserver.ServiceAllocation, svc, old *corev1.Service, held []int32) error {
	// A create gives ports of the same number (TCP and UDP 53) one node
	// port; an update allocates each port on its own, as kube does.
	byPort := map[int32]int32{}
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if p.NodePort == 0 && !allocatesNodePorts(svc) {
			continue
		}
		if old == nil {
			if np := byPort[p.Port]; np != 0 && (p.NodePort == 0 || p.NodePort == np) {
				p.NodePort = np
				continue
			}
			if p.NodePort == 0 {
				p.NodePort = requestedNodePort(p.Port, svc.Spec.Ports)
			}
		}
		switch {
		case p.NodePort == 0:
			np, err := a.NextPort(svc)
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", err))
			}
			p.NodePort = np
		case !slices.Contains(held, p.NodePort) && (old == nil || !a.HasPort(p.NodePort)):
			// On a create, a node port asked for by two ports of
			// different numbers is already allocated for the second.
			if err := a.Port(svc, p.NodePort); err != nil {
				return apierrors.NewInvalid(serviceKind, svc.Name, field.ErrorList{field.Invalid(
					field.NewPath("spec", "ports").Index(i).Child("nodePort"), p.NodePort, err.Error())})
			}
		}
		byPort[p.Port] = p.NodePort
	}
	return nil
}

// allocateHealthCheckNodePort reserves, or picks, the health check node
// port of a Service that comes to need one.
func allocateHealthCheckNodePort(a apiserver.ServiceAllocation, svc, old *corev1.Service) error {
	if !needsHealthCheckPort(svc) || old != nil && needsHealthCheckPort(old) {
		return nil
	}
	if hc := svc.Spec.HealthCheckNodePort; hc != 0 {
		if err := a.Port(svc, hc); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate requested HealthCheck NodePort %v: %v", hc, err))
		}
	} else {
		np, err := a.NextPort(svc)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate a HealthCheck NodePort %v: %v", np, err))
		}
		svc.Spec.HealthCheckNodePort = np
	}
	return nil
}

// allocateNodePorts reserves the node ports a NodePort or LoadBalancer
// Service asks for and picks free ones for the ports without, and
// releases on an update those the Service no longer holds.
func allocateNodePorts(a apiserver.ServiceAllocation, svc, old *corev1.Service) error {
	var held []int32
	if old != nil {
		held = nodePorts(old)
	}
	if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		if err := allocateServiceNodePorts(a, svc, old, held); err != nil {
			return err
		}
	}
	if err := allocateHealthCheckNodePort(a, svc, old); err != nil {
		return err
	}
	if old == nil {
		return nil
	}
	keep := map[int32]bool{}
	if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, p := range svc.Spec.Ports {
			keep[p.NodePort] = true
		}
	}
	if needsHealthCheckPort(svc) {
		keep[svc.Spec.HealthCheckNodePort] = true
	}
	for _, np := range held {
		if !keep[np] {
			a.ReleasePort(np)
		}
	}
	return nil
}

// nodePorts lists the node ports a stored Service holds.
func nodePorts(svc *corev1.Service) []int32 {
	var ps []int32
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			ps = append(ps, p.NodePort)
		}
	}
	if needsHealthCheckPort(svc) && svc.Spec.HealthCheckNodePort != 0 {
		ps = append(ps, svc.Spec.HealthCheckNodePort)
	}
	return ps
}

// requestedNodePort is the node port a later entry of ports asks for the
// same port number, 0 if none does.
func requestedNodePort(port int32, ports []corev1.ServicePort) int32 {
	for _, p := range ports {
		if p.Port == port && p.NodePort != 0 {
			return p.NodePort
		}
	}
	return 0
}

// dropTypeFields clears, on a change of type, the allocated fields the new
// type has no use for, when the client sent them back unchanged.
func dropTypeFields(svc, old *corev1.Service) {
	spec := &svc.Spec
	if needsClusterIP(old) && !needsClusterIP(svc) {
		dropClusterIPFields(svc, old)
	}
	if allocatesNodePorts(old) && !allocatesNodePorts(svc) && sameNodePorts(spec.Ports, old.Spec.Ports) {
		for i := range spec.Ports {
			spec.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheckPort(old) && !needsHealthCheckPort(svc) && old.Spec.HealthCheckNodePort == spec.HealthCheckNodePort {
		spec.HealthCheckNodePort = 0
	}
	if old.Spec.Type == corev1.ServiceTypeLoadBalancer && spec.Type != corev1.ServiceTypeLoadBalancer &&
		spec.AllocateLoadBalancerNodePorts != nil && old.Spec.AllocateLoadBalancerNodePorts != nil &&
		*spec.AllocateLoadBalancerNodePorts == *old.Spec.AllocateLoadBalancerNodePorts {
		spec.AllocateLoadBalancerNodePorts = nil
	}
	if externallyReachable(old) && !externallyReachable(svc) && spec.ExternalTrafficPolicy == old.Spec.ExternalTrafficPolicy {
		spec.ExternalTrafficPolicy = ""
	}
	if spec.Type != corev1.ServiceTypeLoadBalancer {
		svc.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	}
}

// dropClusterIPFields clears, on a change to a type without a cluster
// IP, the cluster IPs, families and policy the update kept from old.
func dropClusterIPFields(svc, old *corev1.Service) {
	spec := &svc.Spec
	if slices.Equal(old.Spec.ClusterIPs, spec.ClusterIPs) {
		spec.ClusterIP, spec.ClusterIPs = "", nil
	}
	if len(old.Spec.IPFamilies) == len(spec.IPFamilies) && (len(spec.IPFamilies) == 0 || old.Spec.IPFamilies[0] == spec.IPFamilies[0]) {
		spec.IPFamilies = nil
	}
	if policyOf(old) == policyOf(svc) {
		spec.IPFamilyPolicy = nil
	}
}

// sameNodePorts reports whether two lists of ports have the same node
// ports, in order.
func sameNodePorts(ports, old []corev1.ServicePort) bool {
	if len(ports) != len(old) {
		return false
	}
	for i := range ports {
		if ports[i].NodePort != old[i].NodePort {
			return false
		}
	}
	return true
}

func policyOf(svc *corev1.Service) corev1.IPFamilyPolicy {
	if svc.Spec.IPFamilyPolicy == nil {
		return ""
	}
	return *svc.Spec.IPFamilyPolicy
}

// releaseService gives back what a deleted Service held.
func releaseService(a apiserver.ServiceAllocation, obj runtime.Object) {
	svc := obj.(*corev1.Service)
	if needsClusterIP(svc) && !isHeadless(svc) {
		for _, ip := range svc.Spec.ClusterIPs {
			a.ReleaseIP(svc, ip)
		}
	}
	for _, np := range nodePorts(svc) {
		a.ReleasePort(np)
	}
}
