package apiserver

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Service validation (D.5): kube's rules for a Service's spec, in kube's
// order, checked after the defaults and the allocation of cluster IPs and
// node ports (which check the IP fields themselves, in svcalloc.go).
// Fields the defaults always fill (type, sessionAffinity, the traffic
// policies) can only be wrong, never missing.

var (
	// Listed sorted, as kube lists them.
	serviceTypes       = []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort}
	sessionAffinities  = []corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}
	externalTrafficPol = []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}
	internalTrafficPol = []corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}
)

// maxAffinitySeconds bounds a ClientIP session affinity: one day.
const maxAffinitySeconds = 86400

// validateService checks a Service on create and, with old not nil, on
// update, where kube first checks what may not change.
func validateService(obj, old runtime.Object) field.ErrorList {
	svc := obj.(*corev1.Service)
	var errs field.ErrorList
	if old != nil {
		errs = append(errs, validateServiceUpdate(obj, old)...)
		errs = append(errs, validateLoadBalancerClassUpdate(svc, old.(*corev1.Service))...)
		if o := old.(*corev1.Service); needsHealthCheckPort(o) && needsHealthCheckPort(svc) && o.Spec.HealthCheckNodePort != svc.Spec.HealthCheckNodePort {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "healthCheckNodePort"), "field is immutable"))
		}
	}
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	headless := len(spec.ClusterIPs) == 1 && spec.ClusterIPs[0] == corev1.ClusterIPNone
	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("ports"), ""))
	}
	switch spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if headless {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0],
				fmt.Sprintf("may not be set to 'None' for %s services", spec.Type)))
		}
	case corev1.ServiceTypeExternalName:
		errs = append(errs, validateExternalName(spec, specPath)...)
	}
	names := map[string]bool{}
	for i := range spec.Ports {
		errs = append(errs, validateServicePort(&spec.Ports[i], len(spec.Ports) > 1, names, specPath.Child("ports").Index(i))...)
	}
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}
	errs = append(errs, OneOf(specPath.Child("sessionAffinity"), spec.SessionAffinity, sessionAffinities)...)
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityClientIP:
		// The defaults fill the timeout: only its range can be wrong.
		if t := spec.SessionAffinityConfig.ClientIP.TimeoutSeconds; *t <= 0 || *t > maxAffinitySeconds {
			errs = append(errs, field.Invalid(specPath.Child("sessionAffinityConfig", "clientIP", "timeoutSeconds"), *t,
				fmt.Sprintf("must be greater than 0 and less than %d", maxAffinitySeconds)))
		}
	}
	errs = append(errs, validateExternalIPs(spec.ExternalIPs, old, specPath.Child("externalIPs"))...)
	errs = append(errs, OneOf(specPath.Child("type"), spec.Type, serviceTypes)...)
	errs = append(errs, validateServicePortSets(spec, specPath.Child("ports"))...)
	errs = append(errs, validateLoadBalancerFields(spec, old, specPath)...)
	errs = append(errs, validateTrafficPolicies(svc, specPath)...)
	return errs
}

// validateLoadBalancerFields checks the fields only a LoadBalancer
// Service may set: source ranges, node port allocation and class.
func validateLoadBalancerFields(spec *corev1.ServiceSpec, old runtime.Object, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.LoadBalancerSourceRanges) > 0 {
		// kube names this field with a capital L.
		p := specPath.Child("LoadBalancerSourceRanges")
		if spec.Type != corev1.ServiceTypeLoadBalancer {
			errs = append(errs, field.Forbidden(p, "may only be used when `type` is 'LoadBalancer'"))
		}
		var oldRanges []string
		if old != nil {
			for _, r := range old.(*corev1.Service).Spec.LoadBalancerSourceRanges {
				oldRanges = append(oldRanges, strings.TrimSpace(r))
			}
		}
		for i, r := range spec.LoadBalancerSourceRanges {
			errs = append(errs, validation.IsValidCIDRForLegacyField(p.Index(i), strings.TrimSpace(r), true, oldRanges)...)
		}
	}
	if spec.AllocateLoadBalancerNodePorts != nil && spec.Type != corev1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.LoadBalancerClass != nil {
		if spec.Type == corev1.ServiceTypeLoadBalancer {
			errs = append(errs, qualifiedName(specPath.Child("loadBalancerClass"), *spec.LoadBalancerClass)...)
		} else {
			errs = append(errs, field.Forbidden(specPath.Child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"))
		}
	}
	return errs
}

func validateExternalName(spec *corev1.ServiceSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.ClusterIPs) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
	}
	if len(spec.IPFamilies) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
	}
	if spec.IPFamilyPolicy != nil {
		errs = append(errs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
	}
	// A trailing dot marks the name fully qualified.
	name := strings.TrimSuffix(spec.ExternalName, ".")
	if name == "" {
		return append(errs, field.Required(specPath.Child("externalName"), ""))
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(specPath.Child("externalName"), name, msg))
	}
	return errs
}

// validateServicePort checks one port; with several ports each needs a
// name, unique among them (names collects those seen).
func validateServicePort(p *corev1.ServicePort, requireName bool, names map[string]bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case p.Name == "" && requireName:
		errs = append(errs, field.Required(path.Child("name"), ""))
	case p.Name != "":
		errs = append(errs, DNSLabel(path.Child("name"), p.Name)...)
		if names[p.Name] {
			errs = append(errs, field.Duplicate(path.Child("name"), p.Name))
		}
		names[p.Name] = true
	}
	for _, msg := range validation.IsValidPortNum(int(p.Port)) {
		errs = append(errs, field.Invalid(path.Child("port"), p.Port, msg))
	}
	errs = append(errs, OneOf(path.Child("protocol"), p.Protocol, portProtocols)...)
	if p.TargetPort.Type == intstr.String {
		for _, msg := range validation.IsValidPortName(p.TargetPort.StrVal) {
			errs = append(errs, field.Invalid(path.Child("targetPort"), p.TargetPort.StrVal, msg))
		}
	} else {
		for _, msg := range validation.IsValidPortNum(p.TargetPort.IntValue()) {
			errs = append(errs, field.Invalid(path.Child("targetPort"), p.TargetPort.IntValue(), msg))
		}
	}
	if p.AppProtocol != nil {
		errs = append(errs, qualifiedName(path.Child("appProtocol"), *p.AppProtocol)...)
	}
	return errs
}

// validateExternalIPs requires addresses a node could own; an address the
// old Service already held is kept even where the rules have tightened.
func validateExternalIPs(ips []string, old runtime.Object, path *field.Path) field.ErrorList {
	var oldIPs []string
	if old != nil {
		oldIPs = old.(*corev1.Service).Spec.ExternalIPs
	}
	var errs field.ErrorList
	for i, ip := range ips {
		p := path.Index(i)
		if bad := validation.IsValidIPForLegacyField(p, ip, true, oldIPs); len(bad) > 0 {
			errs = append(errs, bad...)
			continue
		}
		errs = append(errs, NonSpecialIP(p, ip)...)
	}
	return errs
}

// NonSpecialIP refuses, as kube's ValidateNonSpecialIP, an address no
// node or pod could be reached at: unspecified, loopback or link-local.
// An address the parser refuses gets no error here.
func NonSpecialIP(p *field.Path, ip string) field.ErrorList {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return nil
	}
	a = a.Unmap()
	switch {
	case a.IsUnspecified():
		return field.ErrorList{field.Invalid(p, ip, fmt.Sprintf("may not be unspecified (%v)", ip))}
	case a.IsLoopback():
		return field.ErrorList{field.Invalid(p, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)")}
	case a.IsLinkLocalUnicast():
		return field.ErrorList{field.Invalid(p, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")}
	case a.IsLinkLocalMulticast():
		return field.ErrorList{field.Invalid(p, ip, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")}
	}
	return nil
}

// servicePortKey is how kube shows a duplicated port: its internal
// ServicePort, JSON with Go field names, holding only protocol and port.
type servicePortKey struct {
	Name        string
	Protocol    corev1.Protocol
	AppProtocol *string
	Port        int32
	TargetPort  intstr.IntOrString
	NodePort    int32
}

// validateServicePortSets refuses node ports on a ClusterIP Service and
// the same port or node port twice for one protocol.
func validateServicePortSets(spec *corev1.ServiceSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Type == corev1.ServiceTypeClusterIP {
		for i, p := range spec.Ports {
			if p.NodePort != 0 {
				errs = append(errs, field.Forbidden(path.Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}
	type key struct {
		proto corev1.Protocol
		port  int32
	}
	nodePorts := map[key]bool{}
	for i, p := range spec.Ports {
		if p.NodePort == 0 {
			continue
		}
		k := key{p.Protocol, p.NodePort}
		if nodePorts[k] {
			errs = append(errs, field.Duplicate(path.Index(i).Child("nodePort"), p.NodePort))
		}
		nodePorts[k] = true
	}
	ports := map[key]bool{}
	for i, p := range spec.Ports {
		k := key{p.Protocol, p.Port}
		if ports[k] {
			errs = append(errs, field.Duplicate(path.Index(i), servicePortKey{Protocol: p.Protocol, Port: p.Port}))
		}
		ports[k] = true
	}
	return errs
}

// validateTrafficPolicies checks the external traffic policy (only for
// Services reachable from outside), the health check node port (only for
// a LoadBalancer of policy Local) and the internal traffic policy.
func validateTrafficPolicies(svc *corev1.Service, specPath *field.Path) field.ErrorList {
	spec := &svc.Spec
	var errs field.ErrorList
	etp := specPath.Child("externalTrafficPolicy")
	if !externallyReachable(svc) {
		if spec.ExternalTrafficPolicy != "" {
			errs = append(errs, field.Invalid(etp, spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		}
	} else {
		errs = append(errs, OneOf(etp, spec.ExternalTrafficPolicy, externalTrafficPol)...)
	}
	hc := specPath.Child("healthCheckNodePort")
	if !needsHealthCheckPort(svc) {
		if spec.HealthCheckNodePort != 0 {
			errs = append(errs, field.Invalid(hc, spec.HealthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		}
	} else if spec.HealthCheckNodePort == 0 {
		errs = append(errs, field.Required(hc, ""))
	} else {
		for _, msg := range validation.IsValidPortNum(int(spec.HealthCheckNodePort)) {
			errs = append(errs, field.Invalid(hc, spec.HealthCheckNodePort, msg))
		}
	}
	// An empty policy sent is kept: it is not supported, not missing.
	if p := spec.InternalTrafficPolicy; p != nil && *p != corev1.ServiceInternalTrafficPolicyCluster && *p != corev1.ServiceInternalTrafficPolicyLocal {
		errs = append(errs, field.NotSupported(specPath.Child("internalTrafficPolicy"), *p, internalTrafficPol))
	}
	return errs
}

// validateLoadBalancerClassUpdate: a LoadBalancer keeps its class.
func validateLoadBalancerClassUpdate(svc, old *corev1.Service) field.ErrorList {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || old.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return nil
	}
	a, b := svc.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass
	if a == nil && b == nil || a != nil && b != nil && *a == *b {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "loadBalancerClass"), a, "may not change once set")}
}

// qualifiedName checks a name with an optional DNS subdomain prefix, as
// label keys are.
func qualifiedName(path *field.Path, v string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(v) {
		errs = append(errs, field.Invalid(path, v, msg))
	}
	return errs
}
