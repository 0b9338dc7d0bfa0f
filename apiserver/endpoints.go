package apiserver

//lint:file-ignore SA1019 v1 Endpoints are deprecated, and served and kept as kube does (G.10)

import (
	"fmt"
	"net/netip"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Endpoints (v1) are apiserver/registry/core's and EndpointSlices
// apiserver/registry/discovery's; the server keeps the kubernetes
// Service's (kubeendpoints.go).

// EndpointsGVR and EndpointSlicesGVR name the two resources.
var (
	EndpointsGVR      = coreGV.WithResource("endpoints")
	EndpointSlicesGVR = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
)

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

// ptrTo returns a pointer to a copy of v.
func ptrTo[T any](v T) *T { return &v }
