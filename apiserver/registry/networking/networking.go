// Package networking is the networking.k8s.io/v1 API group, with
// kube-apiserver's validation, defaults and Tables (D.19): Ingresses and
// the IngressClasses they name, NetworkPolicies, and the ServiceCIDRs
// and IPAddresses of Services' cluster IPs. The DefaultIngressClass
// admission plugin (apiserver/admission) gives an Ingress that names no
// class the default one; the API server itself creates the default
// ServiceCIDR, "kubernetes", from its service cluster IP range.
package networking

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{networkPolicyResource(), ingressClassResource(), ingressResource(),
		ipAddressResource(), serviceCIDRResource()}
}

var gv = networkingv1.SchemeGroupVersion

// declarativeLast puts the errors kube finds by its declarative
// validation (those marked covered by it) after the others, in the order
// kube-apiserver reports them.
func declarativeLast(errs field.ErrorList) field.ErrorList {
	var out, later field.ErrorList
	for _, e := range errs {
		if e.CoveredByDeclarative {
			later = append(later, e)
		} else {
			out = append(out, e)
		}
	}
	return append(out, later...)
}
