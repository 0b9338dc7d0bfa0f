package apiserver

import (
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Pod spec validation (D.5) for the pod templates of the apps kinds built
// into apiserver: the same rules as apiserver/registry/core's, which
// validates Pods, ReplicationControllers and the batch group's templates.

var (
	restartPolicies = []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}
	dnsPolicies     = []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}
	// pullPolicies and portProtocols are listed sorted, as kube lists them.
	pullPolicies             = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
	portProtocols            = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}
	terminationMessagePolicy = []corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}
)

// PortProtocols returns the protocols a port may have, sorted as kube
// lists them in its errors.
func PortProtocols() []corev1.Protocol { return slices.Clone(portProtocols) }

func validatePodSpec(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	if len(s.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), ""))
	}
	for i := range s.Containers {
		cp := path.Child("containers").Index(i)
		c := &s.Containers[i]
		errs = append(errs, validateContainer(c, cp)...)
		// Regular containers are checked against each other first; init
		// containers then against all names seen.
		if names[c.Name] {
			errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
		}
		names[c.Name] = true
	}
	for i := range s.InitContainers {
		cp := path.Child("initContainers").Index(i)
		c := &s.InitContainers[i]
		errs = append(errs, validateContainer(c, cp)...)
		if names[c.Name] {
			errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
		} else if c.Name != "" {
			names[c.Name] = true
		}
	}
	errs = append(errs, OneOf(path.Child("restartPolicy"), s.RestartPolicy, restartPolicies)...)
	errs = append(errs, OneOf(path.Child("dnsPolicy"), s.DNSPolicy, dnsPolicies)...)
	errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, path.Child("nodeSelector"))...)
	if s.NodeName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(s.NodeName) {
			errs = append(errs, field.Invalid(path.Child("nodeName"), s.NodeName, msg))
		}
	}
	if d := s.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	errs = append(errs, DNSLabel(path.Child("hostname"), s.Hostname)...)
	errs = append(errs, DNSLabel(path.Child("subdomain"), s.Subdomain)...)
	return errs
}

// validateContainer checks what every kind of container needs.
func validateContainer(c *corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else {
		errs = append(errs, DNSLabel(path.Child("name"), c.Name)...)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(path.Child("image"), ""))
	}
	errs = append(errs, OneOf(path.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, terminationMessagePolicy)...)
	errs = append(errs, validatePorts(c.Ports, path.Child("ports"))...)
	for i, e := range c.Env {
		np := path.Child("env").Index(i).Child("name")
		if e.Name == "" {
			errs = append(errs, field.Required(np, ""))
		}
		for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
			if e.Name != "" {
				errs = append(errs, field.Invalid(np, e.Name, msg))
			}
		}
	}
	errs = append(errs, OneOf(path.Child("imagePullPolicy"), c.ImagePullPolicy, pullPolicies)...)
	errs = append(errs, validateResources(&c.Resources, path.Child("resources"))...)
	return errs
}

func validatePorts(ports []corev1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, p := range ports {
		pp := path.Index(i)
		if p.Name != "" {
			msgs := validation.IsValidPortName(p.Name)
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(pp.Child("name"), p.Name, msg))
			}
			if len(msgs) == 0 && names[p.Name] {
				errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
			}
			names[p.Name] = true
		}
		if p.ContainerPort == 0 {
			errs = append(errs, field.Required(pp.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(p.ContainerPort)) {
				errs = append(errs, field.Invalid(pp.Child("containerPort"), p.ContainerPort, msg))
			}
		}
		if p.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(p.HostPort)) {
				errs = append(errs, field.Invalid(pp.Child("hostPort"), p.HostPort, msg))
			}
		}
		errs = append(errs, OneOf(pp.Child("protocol"), p.Protocol, portProtocols)...)
	}
	return errs
}

// validateResources checks that quantities are not negative and requests
// do not exceed limits. Map order makes the order of several errors vary,
// as in kube.
func validateResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	nonNegative := func(q apiresource.Quantity, p *field.Path) {
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
	}
	for name, q := range r.Limits {
		nonNegative(q, path.Child("limits").Key(string(name)))
	}
	for name, q := range r.Requests {
		nonNegative(q, path.Child("requests").Key(string(name)))
		if l, ok := r.Limits[name]; ok && q.Cmp(l) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests"), q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, l.String())))
		}
	}
	return errs
}

// OneOf requires v, a required field, to be one of the supported values,
// as kube reports it: Required when empty, else NotSupported.
func OneOf[T ~string](path *field.Path, v T, supported []T) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	for _, s := range supported {
		if v == s {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(path, v, supported)}
}

// DNSLabel checks an optional RFC 1123 label: an empty v passes.
func DNSLabel(path *field.Path, v string) field.ErrorList {
	if v == "" {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(path, v, msg))
	}
	return errs
}
