package core

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// Services (D.6): the defaults kube-apiserver gives a Service, its
// validation (D.5) and table. Their cluster IPs and node ports are
// reserved around the write by allocateService, in servicealloc.go.
// Fields the defaults always fill (type, sessionAffinity, the traffic
// policies) can only be wrong, never missing.

var serviceKind = schema.GroupKind{Kind: "Service"}

// serviceResource is the Service kind. No controller acts on Services
// but the endpoints controllers; the scheduler's default topology
// spreading reads pods' owners and services.
func serviceResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: corev1.SchemeGroupVersion.WithResource("services"), Kind: "Service", Singular: "service", Namespaced: true,
		ShortNames: []string{"svc"}, Categories: []string{"all"}, Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource(), "proxy": serviceProxy()},
		ReturnDeleted: true, ValidateName: apivalidation.NameIsDNSLabel, Defaults: defaultService, Validate: validateService,
		ResetStatus: resetServiceStatus, Allocate: allocateService, Release: releaseService, Table: serviceTable}
}

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
	errs = append(errs, apiserver.OneOf(specPath.Child("sessionAffinity"), spec.SessionAffinity, sessionAffinities)...)
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityClientIP:
		// The defaults fill the timeout: only its range can be wrong.
		if t := spec.SessionAffinityConfig.ClientIP.TimeoutSeconds; *t <= 0 || *t > maxAffinitySeconds {
			errs = append(errs, field.Invalid(specPath.Child("sessionAffinityConfig", "clientIP", "timeoutSeconds"), *t,
				fmt.Sprintf("must be greater than 0 and less than %d", maxAffinitySeconds)))
		}
	}
	errs = append(errs, validateExternalIPs(spec.ExternalIPs, old, specPath.Child("externalIPs"))...)
	errs = append(errs, apiserver.OneOf(specPath.Child("type"), spec.Type, serviceTypes)...)
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
		errs = append(errs, apiserver.DNSLabel(path.Child("name"), p.Name)...)
		if names[p.Name] {
			errs = append(errs, field.Duplicate(path.Child("name"), p.Name))
		}
		names[p.Name] = true
	}
	for _, msg := range validation.IsValidPortNum(int(p.Port)) {
		errs = append(errs, field.Invalid(path.Child("port"), p.Port, msg))
	}
	errs = append(errs, apiserver.OneOf(path.Child("protocol"), p.Protocol, portProtocols)...)
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
		errs = append(errs, apiserver.NonSpecialIP(p, ip)...)
	}
	return errs
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
		errs = append(errs, apiserver.OneOf(etp, spec.ExternalTrafficPolicy, externalTrafficPol)...)
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

var serviceSpecDoc = corev1.ServiceSpec{}.SwaggerDoc()

var serviceTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Type", Type: "string", Description: serviceSpecDoc["type"]},
		{Name: "Cluster-IP", Type: "string", Description: serviceSpecDoc["clusterIP"]},
		{Name: "External-IP", Type: "string", Description: serviceSpecDoc["externalIPs"]},
		{Name: "Port(s)", Type: "string", Description: serviceSpecDoc["ports"]},
		apiserver.AgeColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: serviceSpecDoc["selector"]},
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		svc := obj.(*corev1.Service)
		clusterIP := "<none>"
		if len(svc.Spec.ClusterIPs) > 0 {
			clusterIP = svc.Spec.ClusterIPs[0]
		}
		var ports []string
		for _, p := range svc.Spec.Ports {
			if p.NodePort > 0 {
				ports = append(ports, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol))
			} else {
				ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
			}
		}
		return []any{svc.Name, string(svc.Spec.Type), clusterIP, serviceExternalIP(svc), apiserver.OrNone(strings.Join(ports, ",")),
			apiserver.Age(svc.CreationTimestamp, now), labels.FormatLabels(svc.Spec.Selector)}
	},
}

// serviceExternalIP is the External-IP cell: the external IPs, for a load
// balancer after its ingress addresses ("<pending>" while it has none), and
// the external name of an ExternalName service. kube-apiserver renders the
// wide form, which does not shorten long load balancer lists.
func serviceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		return apiserver.OrNone(strings.Join(svc.Spec.ExternalIPs, ","))
	case corev1.ServiceTypeLoadBalancer:
		seen := map[string]bool{}
		var ips []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			a := in.IP
			if a == "" {
				a = in.Hostname
			}
			if a != "" && !seen[a] {
				seen[a] = true
				ips = append(ips, a)
			}
		}
		sort.Strings(ips)
		ips = append(ips, svc.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}
