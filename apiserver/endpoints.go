package apiserver

//lint:file-ignore SA1019 v1 Endpoints are deprecated, and served and kept as kube does (G.10)

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/store"
)

// Endpoints (v1), stored with kube-apiserver's defaults, validation and
// Tables (D.5); EndpointSlices are apiserver/registry/discovery's. The endpoints
// and endpointslice controllers write them for Services with a selector
// (G.10); anyone may write them for a Service without one.

// EndpointsGVR and EndpointSlicesGVR name the two resources.
var (
	EndpointsGVR      = coreGV.WithResource("endpoints")
	EndpointSlicesGVR = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
)

// endpointsDeprecation is the warning kube-apiserver adds to every request
// on v1 Endpoints, which Kubernetes 1.33 deprecated in favour of
// EndpointSlices.
const endpointsDeprecation = "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"

func endpointsResource() *Resource {
	return &Resource{GVR: EndpointsGVR, Kind: "Endpoints", Singular: "endpoints", Namespaced: true, ShortNames: []string{"ep"},
		ValidateName: apivalidation.NameIsDNSSubdomain, Deprecation: endpointsDeprecation,
		Defaults: defaultEndpoints, Validate: validateEndpoints, Table: endpointsTable}
}

// defaultEndpoints gives each port kube's protocol, TCP.
func defaultEndpoints(obj runtime.Object) {
	e := obj.(*corev1.Endpoints)
	for i := range e.Subsets {
		for j := range e.Subsets[i].Ports {
			if p := &e.Subsets[i].Ports[j]; p.Protocol == "" {
				p.Protocol = corev1.ProtocolTCP
			}
		}
	}
}

// validateEndpoints is kube's ValidateEndpoints: every subset holds an
// address, each address a valid IP a pod could have, a hostname that is a
// DNS label and a node name that is a subdomain; each port a number, a
// protocol and, when there are several, a name.
func validateEndpoints(obj, old runtime.Object) field.ErrorList {
	e := obj.(*corev1.Endpoints)
	var oldIPs []string
	if old != nil {
		for _, ss := range old.(*corev1.Endpoints).Subsets {
			for _, a := range ss.Addresses {
				oldIPs = append(oldIPs, a.IP)
			}
			for _, a := range ss.NotReadyAddresses {
				oldIPs = append(oldIPs, a.IP)
			}
		}
	}
	var errs field.ErrorList
	path := field.NewPath("subsets")
	for i := range e.Subsets {
		ss := &e.Subsets[i]
		sp := path.Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(sp, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(&ss.Addresses[j], oldIPs, sp.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(&ss.NotReadyAddresses[j], oldIPs, sp.Child("notReadyAddresses").Index(j))...)
		}
		for j := range ss.Ports {
			errs = append(errs, validateEndpointPort(&ss.Ports[j], len(ss.Ports) > 1, sp.Child("ports").Index(j))...)
		}
	}
	return errs
}

func validateEndpointAddress(a *corev1.EndpointAddress, oldIPs []string, path *field.Path) field.ErrorList {
	errs := validation.IsValidIPForLegacyField(path.Child("ip"), a.IP, true, oldIPs)
	if a.Hostname != "" {
		errs = append(errs, DNSLabel(path.Child("hostname"), a.Hostname)...)
	}
	if a.NodeName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*a.NodeName, false) {
			errs = append(errs, field.Invalid(path.Child("nodeName"), *a.NodeName, msg))
		}
	}
	return append(errs, NonSpecialIP(path.Child("ip"), a.IP)...)
}

func validateEndpointPort(p *corev1.EndpointPort, requireName bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && p.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else if p.Name != "" {
		errs = append(errs, DNSLabel(path.Child("name"), p.Name)...)
	}
	for _, msg := range validation.IsValidPortNum(int(p.Port)) {
		errs = append(errs, field.Invalid(path.Child("port"), p.Port, msg))
	}
	errs = append(errs, OneOf(path.Child("protocol"), p.Protocol, portProtocols)...)
	if p.AppProtocol != nil {
		errs = append(errs, qualifiedName(path.Child("appProtocol"), *p.AppProtocol)...)
	}
	return errs
}

// endpointsTable is kube's: NAME, ENDPOINTS (the first three ip:port
// pairs of ready addresses, "+ N more..." after them, <none> without
// subsets) and AGE.
var endpointsTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{NameColumn,
		{Name: "Endpoints", Type: "string", Description: corev1.Endpoints{}.SwaggerDoc()["subsets"]},
		AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		e := obj.(*corev1.Endpoints)
		return []any{e.Name, formatEndpoints(e), Age(e.CreationTimestamp, now)}
	},
}

func formatEndpoints(e *corev1.Endpoints) string {
	if len(e.Subsets) == 0 {
		return "<none>"
	}
	const most = 3
	var list []string
	count := 0
	for _, ss := range e.Subsets {
		if len(ss.Ports) == 0 {
			// A headless Service's endpoints may have no ports.
			for _, a := range ss.Addresses {
				count++
				if len(list) < most {
					list = append(list, a.IP)
				}
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				count++
				if len(list) < most {
					list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
				}
			}
		}
	}
	out := strings.Join(list, ",")
	if count > most {
		out += fmt.Sprintf(" + %d more...", count-most)
	}
	return out
}

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
		res, ok := s.reg.get(w.gvr)
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

// ptrTo returns a pointer to a copy of v.
func ptrTo[T any](v T) *T { return &v }
