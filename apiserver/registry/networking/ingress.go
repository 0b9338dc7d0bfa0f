package networking

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/kubegate/kubegate/apiserver"
)

// ingressClassAnnotation is the deprecated annotation that named an
// Ingress's class before spec.ingressClassName.
const ingressClassAnnotation = "kubernetes.io/ingress.class"

// ingressResource is the Ingress kind, with its status subresource.
func ingressResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: gv.WithResource("ingresses"), Kind: "Ingress", Singular: "ingress", Namespaced: true,
		ShortNames: []string{"ing"}, Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()},
		ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true,
		Validate: validateIngress, ValidateStatus: validateIngressStatus, ResetStatus: resetIngressStatus,
		Warnings: ingressWarnings, Table: ingressTable}
}

func resetIngressStatus(obj, old runtime.Object) {
	in := obj.(*networkingv1.Ingress)
	in.Status = networkingv1.IngressStatus{}
	if old != nil {
		in.Status = old.(*networkingv1.Ingress).Status
	}
}

// ingressWarnings: a new Ingress that names its class only by the
// deprecated annotation is warned about it.
func ingressWarnings(obj, old runtime.Object) []string {
	in := obj.(*networkingv1.Ingress)
	if _, ok := in.Annotations[ingressClassAnnotation]; ok && old == nil && in.Spec.IngressClassName == nil {
		return []string{fmt.Sprintf("annotation %q is deprecated, please use 'spec.ingressClassName' instead", ingressClassAnnotation)}
	}
	return nil
}

// ingressOptions are what an update lets through because the stored
// Ingress, written by an older server, already has it.
type ingressOptions struct {
	invalidSecretName, invalidWildcardRule bool
}

// validateIngress is kube's Ingress validation (D.19): a default backend
// or rules; hosts that are DNS names (a wildcard only as the first
// label) and not IPs; HTTP paths with a pathType and, for Exact and
// Prefix, an absolute path without // /./ /../ or an encoded slash;
// backends naming a service (a DNS label, a port by name or number) or a
// resource, never both; TLS hosts and secret names; and, on create, the
// class annotation agreeing with ingressClassName.
func validateIngress(obj, old runtime.Object) field.ErrorList {
	in := obj.(*networkingv1.Ingress)
	var opts ingressOptions
	if o, ok := old.(*networkingv1.Ingress); ok {
		opts = ingressOptionsFor(o)
	}
	spec := field.NewPath("spec")
	var errs field.ErrorList
	s := &in.Spec
	if len(s.Rules) == 0 && s.DefaultBackend == nil {
		errs = append(errs, field.Invalid(spec, s.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if s.DefaultBackend != nil {
		errs = append(errs, validateBackend(s.DefaultBackend, spec.Child("defaultBackend"))...)
	}
	for i := range s.Rules {
		errs = append(errs, validateIngressRule(&s.Rules[i], spec.Child("rules").Index(i), opts)...)
	}
	errs = append(errs, validateIngressTLS(s.TLS, spec.Child("tls"), opts)...)
	if s.IngressClassName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*s.IngressClassName, false) {
			errs = append(errs, field.Invalid(spec.Child("ingressClassName"), *s.IngressClassName, msg))
		}
	}
	if v, ok := in.Annotations[ingressClassAnnotation]; ok && old == nil && s.IngressClassName != nil && v != *s.IngressClassName {
		errs = append(errs, field.Invalid(field.NewPath("annotations").Child(ingressClassAnnotation), v, "must match `ingressClassName` when both are specified"))
	}
	return errs
}

// ingressOptionsFor lets an update keep a TLS secret name, or the rules
// of a wildcard host, that the stored Ingress has and that would not pass
// today.
func ingressOptionsFor(old *networkingv1.Ingress) ingressOptions {
	var opts ingressOptions
	for _, tls := range old.Spec.TLS {
		if len(tlsSecretName(tls.SecretName)) > 0 {
			opts.invalidSecretName = true
		}
	}
	for i := range old.Spec.Rules {
		r := &old.Spec.Rules[i]
		if strings.Contains(r.Host, "*") && len(validateRuleValue(&r.IngressRuleValue, nil)) > 0 {
			opts.invalidWildcardRule = true
		}
	}
	return opts
}

func tlsSecretName(name string) []string {
	if name == "" {
		return nil
	}
	return apivalidation.NameIsDNSSubdomain(name, false)
}

func validateHost(host string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := validation.IsDNS1123Subdomain
	if strings.Contains(host, "*") {
		check = validation.IsWildcardDNS1123Subdomain
	}
	for _, msg := range check(host) {
		errs = append(errs, field.Invalid(path, host, msg))
	}
	return errs
}

func validateIngressTLS(tls []networkingv1.IngressTLS, path *field.Path, opts ingressOptions) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tls {
		for j, host := range t.Hosts {
			errs = append(errs, validateHost(host, path.Index(i).Child("hosts").Index(j))...)
		}
		if !opts.invalidSecretName {
			for _, msg := range tlsSecretName(t.SecretName) {
				errs = append(errs, field.Invalid(path.Index(i).Child("secretName"), t.SecretName, msg))
			}
		}
	}
	return errs
}

func validateIngressRule(r *networkingv1.IngressRule, path *field.Path, opts ingressOptions) field.ErrorList {
	var errs field.ErrorList
	wildcard := false
	if r.Host != "" {
		if isIP(r.Host) {
			errs = append(errs, field.Invalid(path.Child("host"), r.Host, "must be a DNS name, not an IP address"))
		}
		wildcard = strings.Contains(r.Host, "*")
		errs = append(errs, validateHost(r.Host, path.Child("host"))...)
	}
	if !wildcard || !opts.invalidWildcardRule {
		errs = append(errs, validateRuleValue(&r.IngressRuleValue, path)...)
	}
	return errs
}

func validateRuleValue(v *networkingv1.IngressRuleValue, path *field.Path) field.ErrorList {
	if v.HTTP == nil {
		return nil
	}
	httpPath := path.Child("http")
	var errs field.ErrorList
	if len(v.HTTP.Paths) == 0 {
		errs = append(errs, field.Required(httpPath.Child("paths"), ""))
	}
	for i := range v.HTTP.Paths {
		errs = append(errs, validateHTTPPath(&v.HTTP.Paths[i], httpPath.Child("paths").Index(i))...)
	}
	return errs
}

var pathTypes = []string{string(networkingv1.PathTypeExact), string(networkingv1.PathTypeImplementationSpecific), string(networkingv1.PathTypePrefix)}

// validateHTTPPath checks a path by its pathType, then its backend.
func validateHTTPPath(p *networkingv1.HTTPIngressPath, path *field.Path) field.ErrorList {
	if p.PathType == nil {
		return field.ErrorList{field.Required(path.Child("pathType"), "pathType must be specified")}
	}
	var errs field.ErrorList
	switch *p.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(p.Path, "/") {
			errs = append(errs, field.Invalid(path.Child("path"), p.Path, "must be an absolute path"))
		}
		for _, seq := range []string{"//", "/./", "/../", "%2f", "%2F"} {
			if strings.Contains(p.Path, seq) {
				errs = append(errs, field.Invalid(path.Child("path"), p.Path, fmt.Sprintf("must not contain '%s'", seq)))
			}
		}
		for _, suffix := range []string{"/..", "/."} {
			if strings.HasSuffix(p.Path, suffix) {
				errs = append(errs, field.Invalid(path.Child("path"), p.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if p.Path != "" && !strings.HasPrefix(p.Path, "/") {
			errs = append(errs, field.Invalid(path.Child("path"), p.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("pathType"), *p.PathType, pathTypes))
	}
	return append(errs, validateBackend(&p.Backend, path.Child("backend"))...)
}

// validateBackend: a service (a DNS label and one port, by name or
// number) or a resource reference, exactly one of them.
func validateBackend(b *networkingv1.IngressBackend, path *field.Path) field.ErrorList {
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(path, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		return validateTypedReference(b.Resource, path.Child("resource"))
	case b.Service == nil:
		return field.ErrorList{field.Invalid(path, "", "resource or service backend is required")}
	}
	svc := path.Child("service")
	var errs field.ErrorList
	if b.Service.Name == "" {
		errs = append(errs, field.Required(svc.Child("name"), ""))
	}
	for _, msg := range nameIsDNSLabel(b.Service.Name) {
		errs = append(errs, field.Invalid(svc.Child("name"), b.Service.Name, msg))
	}
	port := b.Service.Port
	switch {
	case port.Name != "" && port.Number != 0:
		errs = append(errs, field.Invalid(path, "", "cannot set both port name & port number"))
	case port.Name != "":
		for _, msg := range validation.IsValidPortName(port.Name) {
			errs = append(errs, field.Invalid(svc.Child("port", "name"), port.Name, msg))
		}
	case port.Number != 0:
		for _, msg := range validation.IsValidPortNum(int(port.Number)) {
			errs = append(errs, field.Invalid(svc.Child("port", "number"), port.Number, msg))
		}
	default:
		errs = append(errs, field.Required(path, "port name or number is required"))
	}
	return errs
}

func nameIsDNSLabel(name string) []string {
	if name == "" {
		return nil
	}
	return apivalidation.NameIsDNSLabel(name, false)
}

// validateTypedReference checks a backend's resource: a DNS subdomain
// group if any, and a kind and a name that may be path segments.
func validateTypedReference(r *corev1.TypedLocalObjectReference, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.APIGroup != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*r.APIGroup) {
			errs = append(errs, field.Invalid(path.Child("apiGroup"), *r.APIGroup, msg))
		}
	}
	errs = append(errs, pathSegment(path.Child("kind"), r.Kind)...)
	return append(errs, pathSegment(path.Child("name"), r.Name)...)
}

// pathSegment requires v and checks that it may be a path segment.
func pathSegment(path *field.Path, v string) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(path, "").MarkCoveredByDeclarative()}
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(v) {
		errs = append(errs, field.Invalid(path, v, msg))
	}
	return errs
}

// validateIngressStatus checks the load balancer's addresses: IPs (an
// update may keep a legacy form it has) and hostnames that are DNS names.
func validateIngressStatus(obj, old runtime.Object) field.ErrorList {
	lb := obj.(*networkingv1.Ingress).Status.LoadBalancer
	var oldIPs []string
	if o, ok := old.(*networkingv1.Ingress); ok {
		for _, in := range o.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				oldIPs = append(oldIPs, in.IP)
			}
		}
	}
	path := field.NewPath("status", "loadBalancer", "ingress")
	var errs field.ErrorList
	for i, in := range lb.Ingress {
		p := path.Index(i)
		if in.IP != "" {
			errs = append(errs, validation.IsValidIPForLegacyField(p.Child("ip"), in.IP, true, oldIPs)...)
		}
		if in.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(in.Hostname) {
				errs = append(errs, field.Invalid(p.Child("hostname"), in.Hostname, msg))
			}
			if isIP(in.Hostname) {
				errs = append(errs, field.Invalid(p.Child("hostname"), in.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

// ingressTable has the columns of kubectl get ingress.
var ingressTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Class", Type: "string", Description: "The name of the IngressClass resource that should be used for additional configuration"},
		{Name: "Hosts", Type: "string", Description: "Hosts that incoming requests are matched against before the ingress rule"},
		{Name: "Address", Type: "string", Description: "Address is a list containing ingress points for the load-balancer"},
		{Name: "Ports", Type: "string", Description: "Ports of TLS configurations that open"},
		apiserver.AgeColumn,
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		in := obj.(*networkingv1.Ingress)
		class := "<none>"
		if in.Spec.IngressClassName != nil {
			class = *in.Spec.IngressClassName
		}
		ports := "80"
		if len(in.Spec.TLS) > 0 {
			ports = "80, 443"
		}
		return []any{in.Name, class, ingressHosts(in.Spec.Rules), ingressAddress(in.Status.LoadBalancer), ports, apiserver.Age(in.CreationTimestamp, now)}
	},
}

// ingressHosts lists the rules' hosts, up to three, and how many rules
// come after the third host ("*" for no host at all).
func ingressHosts(rules []networkingv1.IngressRule) string {
	const shown = 3
	var hosts []string
	more := false
	for _, r := range rules {
		if len(hosts) == shown {
			more = true
			break
		}
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	if len(hosts) == 0 {
		return "*"
	}
	s := strings.Join(hosts, ",")
	if more {
		s += fmt.Sprintf(" + %d more...", len(rules)-shown)
	}
	return s
}

// ingressAddress lists the load balancer's IPs or hostnames, sorted and
// without repeats.
func ingressAddress(lb networkingv1.IngressLoadBalancerStatus) string {
	seen := map[string]bool{}
	var addrs []string
	for _, in := range lb.Ingress {
		a := in.IP
		if a == "" {
			a = in.Hostname
		}
		if a != "" && !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	sort.Strings(addrs)
	return strings.Join(addrs, ",")
}

// isIP reports whether s parses as an IP address, leading zeros
// allowed, as kube's check that a host is a name and not an address.
func isIP(s string) bool { return netutils.ParseIPSloppy(s) != nil }
