package networking

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/kubegate/kubegate/apiserver"
)

// networkPolicyResource is the NetworkPolicy kind.
func networkPolicyResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: gv.WithResource("networkpolicies"), Kind: "NetworkPolicy", Singular: "networkpolicy", Namespaced: true,
		ShortNames: []string{"netpol"}, ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true,
		Defaults: defaultNetworkPolicy, Validate: validateNetworkPolicy, Warnings: networkPolicyWarnings, Table: networkPolicyTable}
}

// defaultNetworkPolicy: ports are TCP unless they say otherwise, and a
// policy naming no policyTypes is an Ingress one, and an Egress one too
// when it has egress rules.
func defaultNetworkPolicy(obj runtime.Object) {
	np := obj.(*networkingv1.NetworkPolicy)
	tcp := func(ports []networkingv1.NetworkPolicyPort) {
		for i := range ports {
			if ports[i].Protocol == nil {
				p := corev1.ProtocolTCP
				ports[i].Protocol = &p
			}
		}
	}
	for i := range np.Spec.Ingress {
		tcp(np.Spec.Ingress[i].Ports)
	}
	for i := range np.Spec.Egress {
		tcp(np.Spec.Egress[i].Ports)
	}
	if len(np.Spec.PolicyTypes) == 0 {
		np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(np.Spec.Egress) > 0 {
			np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
}

// policyOptions are what an update lets through because the stored
// policy already has it.
type policyOptions struct {
	selector metav1validation.LabelSelectorValidationOptions
	oldCIDRs []string
}

// validateNetworkPolicy is kube's NetworkPolicy validation (D.19): valid
// selectors, ports (a protocol of TCP, UDP or SCTP; a number with an
// endPort not below it, or a name without one), peers of exactly one
// ipBlock or of pod and namespace selectors, ipBlocks whose except are
// strict subsets of their CIDR, and at most the two policy types. An
// update keeps the CIDRs and the invalid selector values it has.
func validateNetworkPolicy(obj, old runtime.Object) field.ErrorList {
	np := obj.(*networkingv1.NetworkPolicy)
	var opts policyOptions
	if o, ok := old.(*networkingv1.NetworkPolicy); ok {
		opts.selector.AllowInvalidLabelValueInSelector = len(metav1validation.ValidateLabelSelector(&o.Spec.PodSelector, opts.selector, nil)) > 0
		opts.oldCIDRs = policyCIDRs(&o.Spec)
	}
	spec := field.NewPath("spec")
	errs := metav1validation.ValidateLabelSelector(&np.Spec.PodSelector, opts.selector, spec.Child("podSelector"))
	for i, r := range np.Spec.Ingress {
		p := spec.Child("ingress").Index(i)
		errs = append(errs, validateRule(r.Ports, r.From, p, p.Child("from"), opts)...)
	}
	for i, r := range np.Spec.Egress {
		p := spec.Child("egress").Index(i)
		errs = append(errs, validateRule(r.Ports, r.To, p, p.Child("to"), opts)...)
	}
	if len(np.Spec.PolicyTypes) > 2 {
		return declarativeLast(append(errs, field.Invalid(spec.Child("policyTypes"), &np.Spec.PolicyTypes, "may not specify more than two policyTypes")))
	}
	for i, t := range np.Spec.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			errs = append(errs, field.NotSupported(spec.Child("policyTypes").Index(i), t, []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}))
		}
	}
	return declarativeLast(errs)
}

// policyCIDRs lists every CIDR of the policy's ipBlocks.
func policyCIDRs(s *networkingv1.NetworkPolicySpec) []string {
	var cidrs []string
	add := func(peers []networkingv1.NetworkPolicyPeer) {
		for _, p := range peers {
			if p.IPBlock != nil {
				cidrs = append(append(cidrs, p.IPBlock.CIDR), p.IPBlock.Except...)
			}
		}
	}
	for _, r := range s.Ingress {
		add(r.From)
	}
	for _, r := range s.Egress {
		add(r.To)
	}
	return cidrs
}

func validateRule(ports []networkingv1.NetworkPolicyPort, peers []networkingv1.NetworkPolicyPeer, path, peersPath *field.Path, opts policyOptions) field.ErrorList {
	var errs field.ErrorList
	for i := range ports {
		errs = append(errs, validatePolicyPort(&ports[i], path.Child("ports").Index(i))...)
	}
	for i := range peers {
		errs = append(errs, validatePeer(&peers[i], peersPath.Index(i), opts)...)
	}
	return errs
}

func validatePolicyPort(port *networkingv1.NetworkPolicyPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p := port.Protocol; p != nil && *p != corev1.ProtocolTCP && *p != corev1.ProtocolUDP && *p != corev1.ProtocolSCTP {
		errs = append(errs, field.NotSupported(path.Child("protocol"), *p, []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}))
	}
	end := port.EndPort
	switch {
	case port.Port == nil:
		if end != nil {
			errs = append(errs, field.Invalid(path.Child("endPort"), *end, "may not be specified when `port` is not specified"))
		}
	case port.Port.Type == intstr.Int:
		for _, msg := range validation.IsValidPortNum(int(port.Port.IntVal)) {
			errs = append(errs, field.Invalid(path.Child("port"), port.Port.IntVal, msg))
		}
		if end != nil {
			if *end < port.Port.IntVal {
				errs = append(errs, field.Invalid(path.Child("endPort"), *end, "must be greater than or equal to `port`"))
			}
			for _, msg := range validation.IsValidPortNum(int(*end)) {
				errs = append(errs, field.Invalid(path.Child("endPort"), *end, msg))
			}
		}
	default:
		if end != nil {
			errs = append(errs, field.Invalid(path.Child("endPort"), *end, "may not be specified when `port` is non-numeric"))
		}
		for _, msg := range validation.IsValidPortName(port.Port.StrVal) {
			errs = append(errs, field.Invalid(path.Child("port"), port.Port.StrVal, msg))
		}
	}
	return errs
}

func validatePeer(peer *networkingv1.NetworkPolicyPeer, path *field.Path, opts policyOptions) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if peer.PodSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.PodSelector, opts.selector, path.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, opts.selector, path.Child("namespaceSelector"))...)
	}
	if peer.IPBlock != nil {
		n++
		errs = append(errs, validateIPBlock(peer.IPBlock, path.Child("ipBlock"), opts.oldCIDRs)...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Required(path, "must specify a peer"))
	case n > 1 && peer.IPBlock != nil:
		errs = append(errs, field.Forbidden(path, "may not specify both ipBlock and another peer"))
	}
	return errs
}

// validateIPBlock: a CIDR (one the stored policy has passes as it is),
// and excepts that are strict subsets of it.
func validateIPBlock(b *networkingv1.IPBlock, path *field.Path, oldCIDRs []string) field.ErrorList {
	if b.CIDR == "" {
		return field.ErrorList{field.Required(path.Child("cidr"), "").MarkCoveredByDeclarative()}
	}
	errs := validation.IsValidCIDRForLegacyField(path.Child("cidr"), b.CIDR, true, oldCIDRs)
	_, cidr, err := netutils.ParseCIDRSloppy(b.CIDR)
	if err != nil {
		return errs
	}
	bits, _ := cidr.Mask.Size()
	for i, e := range b.Except {
		p := path.Child("except").Index(i)
		errs = append(errs, validation.IsValidCIDRForLegacyField(p, e, true, oldCIDRs)...)
		_, except, err := netutils.ParseCIDRSloppy(e)
		if err != nil {
			continue
		}
		if exceptBits, _ := except.Mask.Size(); !cidr.Contains(except.IP) || bits >= exceptBits {
			errs = append(errs, field.Invalid(p, e, "must be a strict subset of `cidr`"))
		}
	}
	return errs
}

// networkPolicyWarnings warns about ipBlock CIDRs written in a
// non-canonical form.
func networkPolicyWarnings(obj, _ runtime.Object) []string {
	np := obj.(*networkingv1.NetworkPolicy)
	var warnings []string
	check := func(peers []networkingv1.NetworkPolicyPeer, path *field.Path) {
		for i, p := range peers {
			if p.IPBlock == nil {
				continue
			}
			b := path.Index(i).Child("ipBlock")
			warnings = append(warnings, validation.GetWarningsForCIDR(b.Child("cidr"), p.IPBlock.CIDR)...)
			for j, e := range p.IPBlock.Except {
				warnings = append(warnings, validation.GetWarningsForCIDR(b.Child("except").Index(j), e)...)
			}
		}
	}
	spec := field.NewPath("spec")
	for i, r := range np.Spec.Ingress {
		check(r.From, spec.Child("ingress").Index(i).Child("from"))
	}
	for i, r := range np.Spec.Egress {
		check(r.To, spec.Child("egress").Index(i).Child("to"))
	}
	return warnings
}

// networkPolicyTable has the columns of kubectl get networkpolicy.
var networkPolicyTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Pod-Selector", Type: "string", Description: networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]},
		apiserver.AgeColumn,
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		np := obj.(*networkingv1.NetworkPolicy)
		return []any{np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), apiserver.Age(np.CreationTimestamp, now)}
	},
}
