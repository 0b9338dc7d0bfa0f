package apiserver

//lint:file-ignore SA1019 v1 Endpoints are deprecated, and served and kept as kube does (G.10)

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/store"
)

// Endpoints (v1) are apiserver/registry/core's and EndpointSlices
// apiserver/registry/discovery's; the server writes the kubernetes
// Service's at start, to the address clients reach it at.

// EndpointsGVR and EndpointSlicesGVR name the two resources.
var (
	EndpointsGVR      = coreGV.WithResource("endpoints")
	EndpointSlicesGVR = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
)

// ensureKubernetesEndpoints writes the Endpoints and the EndpointSlice of
// the kubernetes Service in default when the server starts, as
// kube-apiserver's endpoint reconciler does: the address clients reach the
// server at (ExternalAddress, when its host is an IP an endpoint may
// hold) on port https. A stale pair, from an earlier address, is
// overwritten; without an IP to give, nothing is written.
func (s *Server) ensureKubernetesEndpoints(ctx context.Context, external string, port int) error {
	host, _, err := net.SplitHostPort(external)
	if err != nil {
		return nil
	}
	addr, err := netip.ParseAddr(host)
	if err != nil || len(NonSpecialIP(field.NewPath("ip"), host)) > 0 {
		// No IP, or one no endpoint may hold (loopback): the Endpoints'
		// validation would refuse it, as kube-apiserver's reconciler's
		// write is refused.
		return nil
	}
	if port == 0 {
		port = 6443
	}
	ip := addr.Unmap().String()
	at := discoveryv1.AddressTypeIPv4
	if addr.Unmap().Is6() {
		at = discoveryv1.AddressTypeIPv6
	}
	meta := func(labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault, Labels: labels}
	}
	ep := &corev1.Endpoints{ObjectMeta: meta(map[string]string{discoveryv1.LabelSkipMirror: "true"}),
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: ip}},
			Ports: []corev1.EndpointPort{{Name: "https", Port: int32(port), Protocol: corev1.ProtocolTCP}}}}}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: meta(map[string]string{discoveryv1.LabelServiceName: "kubernetes"}),
		AddressType: at,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptrTo("https"), Port: ptrTo(int32(port)), Protocol: ptrTo(corev1.ProtocolTCP)}}}
	for _, w := range []struct {
		gvr  schema.GroupVersionResource
		obj  runtime.Object
		same func(stored []byte) bool
	}{
		{EndpointsGVR, ep, func(stored []byte) bool {
			var old corev1.Endpoints
			return UnmarshalStored(stored, &old) == nil && apiequality.Semantic.DeepEqual(old.Subsets, ep.Subsets)
		}},
		{EndpointSlicesGVR, slice, func(stored []byte) bool {
			var old discoveryv1.EndpointSlice
			return UnmarshalStored(stored, &old) == nil && apiequality.Semantic.DeepEqual(old.Endpoints, slice.Endpoints) &&
				apiequality.Semantic.DeepEqual(old.Ports, slice.Ports) && old.AddressType == slice.AddressType
		}},
	} {
		res, ok := s.registry().get(w.gvr)
		if !ok {
			// EndpointSlices are apiserver/registry/discovery's, and a
			// server without them writes none.
			continue
		}
		key := Key(res.GVR, metav1.NamespaceDefault, "kubernetes")
		kv, err := s.cfg.Store.Get(ctx, key)
		switch {
		case err == nil && w.same(kv.Value):
			continue
		case err == nil:
			// A stale address: start again from the current one.
			if _, _, err := s.cfg.Store.Delete(ctx, key, kv.ModRevision); err != nil && !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("replace the kubernetes %s: %w", res.GVR.Resource, err)
			}
		case !errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("check the kubernetes %s: %w", res.GVR.Resource, err)
		}
		if _, err := s.createStored(ctx, res, w.obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create the kubernetes %s: %w", res.GVR.Resource, err)
		}
	}
	return nil
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

// ptrTo returns a pointer to a copy of v.
func ptrTo[T any](v T) *T { return &v }
