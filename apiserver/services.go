package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/store"
)

// Services (D.6): the defaults kube-apiserver gives a Service, and its
// cluster IPs and node ports, taken from the allocator in alloc.go around
// the write.

var servicesGVR = coreGV.WithResource("services")

var serviceKind = schema.GroupKind{Kind: "Service"}

// defaultService fills the defaults kube-apiserver's decoding gives every
// Service written, create or update.
func defaultService(obj runtime.Object) {
	spec := &obj.(*corev1.Service).Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		if c := spec.SessionAffinityConfig; c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			timeout := corev1.DefaultClientIPServiceAffinitySeconds
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
		}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if externallyReachable(obj.(*corev1.Service)) && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.Type == corev1.ServiceTypeExternalName {
		// kube defaults it on ExternalName too, but drops it on every
		// read; never storing it shows the same.
		spec.InternalTrafficPolicy = nil
	} else if spec.InternalTrafficPolicy == nil {
		p := corev1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &p
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		t := true
		spec.AllocateLoadBalancerNodePorts = &t
	}
}

func resetServiceStatus(obj, old runtime.Object) {
	svc := obj.(*corev1.Service)
	if old == nil {
		svc.Status = corev1.ServiceStatus{}
		return
	}
	svc.Status = old.(*corev1.Service).Status
}

// externallyReachable: node ports, a load balancer or external IPs.
func externallyReachable(svc *corev1.Service) bool {
	t := svc.Spec.Type
	return t == corev1.ServiceTypeNodePort || t == corev1.ServiceTypeLoadBalancer ||
		t == corev1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0
}

func needsClusterIP(svc *corev1.Service) bool { return svc.Spec.Type != corev1.ServiceTypeExternalName }

func isHeadless(svc *corev1.Service) bool {
	return len(svc.Spec.ClusterIPs) > 0 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

// allocatesNodePorts reports whether ports without a nodePort get one.
func allocatesNodePorts(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

func needsHealthCheckPort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// allocateService reserves the cluster IP and node ports of a Service
// being created (old nil) or updated, after filling in from old what the
// client left out, and returns the allocation to finish once the write is
// done or has failed.
func (al *serviceAllocator) allocateService(ctx context.Context, obj, old runtime.Object, dry bool) (*allocation, error) {
	svc := obj.(*corev1.Service)
	var oldSvc *corev1.Service
	if old != nil {
		oldSvc = old.(*corev1.Service)
		keepAllocated(svc, oldSvc)
	}
	syncClusterIPs(svc, oldSvc)
	if err := al.initIPFamilies(svc, oldSvc); err != nil {
		return nil, err
	}
	a := al.begin(ctx, dry)
	if err := allocateClusterIPs(a, svc, oldSvc); err != nil {
		a.finish(false)
		return nil, err
	}
	if err := allocateNodePorts(a, svc, oldSvc); err != nil {
		a.finish(false)
		return nil, err
	}
	if oldSvc != nil {
		dropTypeFields(svc, oldSvc)
	}
	return a, nil
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
	if old.Spec.ClusterIP != spec.ClusterIP && sameStrings(old.Spec.ClusterIPs, spec.ClusterIPs) {
		if spec.ClusterIP == "" {
			spec.ClusterIPs = nil
		} else {
			spec.ClusterIPs = []string{spec.ClusterIP}
		}
	}
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// allocateClusterIPs gives a Service that needs one a cluster IP, the one
// it asks for or a free one, and on an update to ExternalName releases the
// old one.
func allocateClusterIPs(a *allocation, svc, old *corev1.Service) error {
	if old != nil {
		switch {
		case !needsClusterIP(old) && needsClusterIP(svc):
		case isHeadless(old) || !needsClusterIP(old) || needsClusterIP(svc):
			return nil // unchanged; validation refuses a changed IP
		default: // to ExternalName
			for _, ip := range old.Spec.ClusterIPs {
				a.releaseIP(ip)
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
		ip, err := a.nextIP(svc)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP for Service %q: %w", svc.Name, err))
		}
		spec.ClusterIPs[0] = ip.String()
	} else {
		ip, err := netip.ParseAddr(want)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to parse service IP %q", want))
		}
		if err := a.ip(svc, ip); err != nil {
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
func allocateServiceNodePorts(a *allocation, svc, old *corev1.Service, held []int32) error {
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
			np, err := a.nextPort(svc)
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", err))
			}
			p.NodePort = np
		case !containsPort(held, p.NodePort) && (old == nil || !a.hasPort(p.NodePort)):
			// On a create, a node port asked for by two ports of
			// different numbers is already allocated for the second.
			if err := a.port(svc, p.NodePort); err != nil {
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
func allocateHealthCheckNodePort(a *allocation, svc, old *corev1.Service) error {
	if !needsHealthCheckPort(svc) || old != nil && needsHealthCheckPort(old) {
		return nil
	}
	if hc := svc.Spec.HealthCheckNodePort; hc != 0 {
		if err := a.port(svc, hc); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate requested HealthCheck NodePort %v: %v", hc, err))
		}
	} else {
		np, err := a.nextPort(svc)
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
func allocateNodePorts(a *allocation, svc, old *corev1.Service) error {
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
			a.releasePort(np)
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

func containsPort(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
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
	if sameStrings(old.Spec.ClusterIPs, spec.ClusterIPs) {
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
func (al *serviceAllocator) releaseService(ctx context.Context, obj runtime.Object) {
	svc := obj.(*corev1.Service)
	a := al.begin(ctx, false)
	if needsClusterIP(svc) && !isHeadless(svc) {
		for _, ip := range svc.Spec.ClusterIPs {
			a.releaseIP(ip)
		}
	}
	for _, np := range nodePorts(svc) {
		a.releasePort(np)
	}
	a.finish(true)
}

// validateServiceUpdate refuses a change of cluster IP, which kube never
// allows but through ExternalName.
func validateServiceUpdate(obj, old runtime.Object) field.ErrorList {
	if old == nil {
		return nil
	}
	svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
	if !needsClusterIP(svc) || !needsClusterIP(oldSvc) || isHeadless(svc) && isHeadless(oldSvc) {
		return nil
	}
	ips, oldIPs := svc.Spec.ClusterIPs, oldSvc.Spec.ClusterIPs
	path := field.NewPath("spec", "clusterIPs")
	var errs field.ErrorList
	switch {
	case len(ips) == len(oldIPs):
		for i := range oldIPs {
			if ips[i] != oldIPs[i] {
				errs = append(errs, field.Invalid(path.Index(i), ips, "may not change once set"))
			}
		}
	case len(ips) == 0:
		errs = append(errs, field.Invalid(path.Index(0), ips, "primary clusterIP can not be unset"))
	case len(oldIPs) > 0 && ips[0] != oldIPs[0]:
		errs = append(errs, field.Invalid(path.Index(0), ips, "may not change once set"))
	}
	return errs
}

// ensureKubernetesService creates the kubernetes Service in default, as
// kube-apiserver does at start: the first address of the service range,
// port 443 (https) to the API server's port.
func (s *Server) ensureKubernetesService(ctx context.Context, port int) error {
	if port == 0 {
		port = 6443
	}
	res, _ := s.reg.get(servicesGVR)
	if _, err := s.cfg.Store.Get(ctx, Key(servicesGVR, metav1.NamespaceDefault, "kubernetes")); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("check the kubernetes service: %w", err)
	}
	ip := s.svcAlloc.first.String()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt(port)}},
			// As kube-apiserver writes it: the cluster IP and a single-stack
			// policy, the rest from the defaults and the allocation.
			ClusterIP: ip, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
		},
	}
	if _, err := s.createStored(ctx, res, svc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the kubernetes service: %w", err)
	}
	return nil
}
