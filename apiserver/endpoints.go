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
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/store"
)

// Endpoints (v1) and EndpointSlices (discovery.k8s.io/v1), stored with
// kube-apiserver's defaults, validation and Tables (D.5). The endpoints
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

func endpointSliceResource() *Resource {
	return &Resource{GVR: EndpointSlicesGVR, Kind: "EndpointSlice", Singular: "endpointslice", Namespaced: true,
		ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true, GenerationChanged: endpointSliceChanged,
		Defaults: defaultEndpointSlice, Prepare: prepareEndpointSlice, Validate: validateEndpointSlice, Warnings: endpointSliceWarnings, Table: endpointSliceTable}
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
		errs = append(errs, dnsLabel(path.Child("hostname"), a.Hostname)...)
	}
	if a.NodeName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*a.NodeName, false) {
			errs = append(errs, field.Invalid(path.Child("nodeName"), *a.NodeName, msg))
		}
	}
	return append(errs, nonSpecialIP(path.Child("ip"), a.IP)...)
}

func validateEndpointPort(p *corev1.EndpointPort, requireName bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && p.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else if p.Name != "" {
		errs = append(errs, dnsLabel(path.Child("name"), p.Name)...)
	}
	for _, msg := range validation.IsValidPortNum(int(p.Port)) {
		errs = append(errs, field.Invalid(path.Child("port"), p.Port, msg))
	}
	errs = append(errs, oneOf(path.Child("protocol"), p.Protocol, portProtocols)...)
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

// defaultEndpointSlice gives each port kube's defaults: an empty name and
// protocol TCP.
func defaultEndpointSlice(obj runtime.Object) {
	es := obj.(*discoveryv1.EndpointSlice)
	for i := range es.Ports {
		p := &es.Ports[i]
		if p.Name == nil {
			p.Name = ptrTo("")
		}
		if p.Protocol == nil {
			p.Protocol = ptrTo(corev1.ProtocolTCP)
		}
	}
}

// prepareEndpointSlice clears the deprecated topology of every endpoint
// on a create, and on an update that changes the endpoints, as kube's
// strategy does for v1 requests. Empty lists of endpoints and ports are
// stored as none, as kube stores them (their writer still owns them).
func prepareEndpointSlice(obj, old runtime.Object) {
	es := obj.(*discoveryv1.EndpointSlice)
	if len(es.Endpoints) == 0 {
		es.Endpoints = nil
	}
	if len(es.Ports) == 0 {
		es.Ports = nil
	}
	if old != nil && apiequality.Semantic.DeepEqual(es.Endpoints, old.(*discoveryv1.EndpointSlice).Endpoints) {
		return
	}
	for i := range es.Endpoints {
		es.Endpoints[i].DeprecatedTopology = nil
	}
}

// endpointSliceChanged is what moves an EndpointSlice's generation: any
// change but of its metadata, or of its labels.
func endpointSliceChanged(obj, old runtime.Object) bool {
	a, b := obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice)
	return !apiequality.Semantic.DeepEqual(a.AddressType, b.AddressType) || !apiequality.Semantic.DeepEqual(a.Endpoints, b.Endpoints) ||
		!apiequality.Semantic.DeepEqual(a.Ports, b.Ports) || !apiequality.Semantic.DeepEqual(a.Labels, b.Labels)
}

// The limits of kube's EndpointSlice validation.
const (
	maxSliceEndpoints = 1000
	maxSliceAddresses = 100
	maxSlicePorts     = 100
	maxSliceTopology  = 16
)

var sliceAddressTypes = []discoveryv1.AddressType{discoveryv1.AddressTypeFQDN, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}

// validateEndpointSlice is kube's ValidateEndpointSlice: the address type
// (which may not change), the endpoints and their addresses of that type,
// topology labels and hostnames, and the ports.
func validateEndpointSlice(obj, old runtime.Object) field.ErrorList {
	es := obj.(*discoveryv1.EndpointSlice)
	types := sliceAddressTypes
	if old != nil {
		// An update may keep the address type "IP" that older versions
		// allowed.
		types = append([]discoveryv1.AddressType{discoveryv1.AddressTypeFQDN, "IP"}, sliceAddressTypes[1:]...)
	}
	if old != nil && es.AddressType != old.(*discoveryv1.EndpointSlice).AddressType {
		// kube reports the change alone, without the value.
		return field.ErrorList{field.Invalid(field.NewPath("addressType"), nil, apivalidation.FieldImmutableErrorMsg)}
	}
	errs := oneOf(field.NewPath("addressType"), es.AddressType, types)
	errs = append(errs, validateSlicePorts(es.Ports, field.NewPath("ports"))...)
	return append(errs, validateSliceEndpoints(es.Endpoints, es.AddressType, field.NewPath("endpoints"))...)
}

// endpointSliceWarnings are kube's: a created FQDN slice is deprecated.
func endpointSliceWarnings(obj, old runtime.Object) []string {
	if old == nil && obj.(*discoveryv1.EndpointSlice).AddressType == discoveryv1.AddressTypeFQDN {
		return []string{"spec.addressType: FQDN endpoints are deprecated"}
	}
	return nil
}

func validateSliceEndpoints(eps []discoveryv1.Endpoint, at discoveryv1.AddressType, path *field.Path) field.ErrorList {
	if len(eps) > maxSliceEndpoints {
		return field.ErrorList{field.TooMany(path, len(eps), maxSliceEndpoints)}
	}
	var errs field.ErrorList
	for i, ep := range eps {
		ip := path.Index(i)
		ap := ip.Child("addresses")
		if len(ep.Addresses) == 0 {
			errs = append(errs, field.Required(ap, ""))
		} else if len(ep.Addresses) > maxSliceAddresses {
			errs = append(errs, field.TooMany(ap, len(ep.Addresses), maxSliceAddresses))
		}
		for j, a := range ep.Addresses {
			p := ap.Index(j)
			switch at {
			case "IP":
				errs = append(errs, validation.IsValidIP(p, a)...)
			case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
				if bad := validation.IsValidIP(p, a); len(bad) > 0 {
					errs = append(errs, bad...)
					continue
				}
				if addr, _ := netip.ParseAddr(a); addr.Is4() != (at == discoveryv1.AddressTypeIPv4) {
					// kube names the list, not the address, here.
					errs = append(errs, field.Invalid(ap, a, "must be an "+string(at)+" address"))
				}
				errs = append(errs, nonSpecialIP(p, a)...)
			case discoveryv1.AddressTypeFQDN:
				errs = append(errs, validation.IsFullyQualifiedDomainName(p, a)...)
			}
		}
		tp := ip.Child("deprecatedTopology")
		if len(ep.DeprecatedTopology) > maxSliceTopology {
			errs = append(errs, field.TooMany(tp, len(ep.DeprecatedTopology), maxSliceTopology))
		}
		errs = append(errs, metav1validation.ValidateLabels(ep.DeprecatedTopology, tp)...)
		if ep.Hostname != nil {
			errs = append(errs, dnsLabelRequired(ip.Child("hostname"), *ep.Hostname)...)
		}
	}
	return errs
}

// dnsLabelRequired checks a value that must be a DNS label, empty
// included.
func dnsLabelRequired(path *field.Path, v string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(path, v, msg))
	}
	return errs
}

func validateSlicePorts(ports []discoveryv1.EndpointPort, path *field.Path) field.ErrorList {
	if len(ports) > maxSlicePorts {
		return field.ErrorList{field.TooMany(path, len(ports), maxSlicePorts)}
	}
	var errs field.ErrorList
	names := map[string]bool{}
	for i, p := range ports {
		pp := path.Index(i)
		name := deref(p.Name)
		if name != "" {
			errs = append(errs, dnsLabel(pp.Child("name"), name)...)
		}
		if names[name] {
			errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
		}
		names[name] = true
		if p.Protocol == nil {
			errs = append(errs, field.Required(pp.Child("protocol"), ""))
		} else {
			errs = append(errs, oneOf(pp.Child("protocol"), *p.Protocol, portProtocols)...)
		}
		if p.AppProtocol != nil {
			for _, msg := range validation.IsQualifiedName(*p.AppProtocol) {
				errs = append(errs, field.Invalid(pp.Child("appProtocol"), p.AppProtocol, msg))
			}
		}
	}
	return errs
}

var endpointSliceDoc = discoveryv1.EndpointSlice{}.SwaggerDoc()

// endpointSliceTable is kube's: NAME, ADDRESSTYPE, PORTS and ENDPOINTS
// (the first three of each, "+ N more..." after them, <unset> for none)
// and AGE.
var endpointSliceTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{NameColumn,
		{Name: "AddressType", Type: "string", Description: endpointSliceDoc["addressType"]},
		{Name: "Ports", Type: "string", Description: endpointSliceDoc["ports"]},
		{Name: "Endpoints", Type: "string", Description: endpointSliceDoc["endpoints"]},
		AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		es := obj.(*discoveryv1.EndpointSlice)
		var ports, addrs []string
		for _, p := range es.Ports {
			switch {
			case p.Port != nil:
				ports = append(ports, strconv.Itoa(int(*p.Port)))
			case p.Name != nil:
				ports = append(ports, *p.Name)
			default:
				ports = append(ports, "*")
			}
		}
		for _, ep := range es.Endpoints {
			addrs = append(addrs, ep.Addresses...)
		}
		return []any{es.Name, string(es.AddressType), firstThree(ports), firstThree(addrs), Age(es.CreationTimestamp, now)}
	},
}

// firstThree shows up to three values and how many more there are, as
// kube's printer does; <unset> when there are none.
func firstThree(list []string) string {
	const most = 3
	if len(list) == 0 {
		return "<unset>"
	}
	if len(list) > most {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:most], ","), len(list)-most)
	}
	return strings.Join(list, ",")
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
	if err != nil || len(nonSpecialIP(field.NewPath("ip"), host)) > 0 {
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
		res  *Resource
		obj  runtime.Object
		same func(stored []byte) bool
	}{
		{endpointsResource(), ep, func(stored []byte) bool {
			var old corev1.Endpoints
			return UnmarshalStored(stored, &old) == nil && apiequality.Semantic.DeepEqual(old.Subsets, ep.Subsets)
		}},
		{endpointSliceResource(), slice, func(stored []byte) bool {
			var old discoveryv1.EndpointSlice
			return UnmarshalStored(stored, &old) == nil && apiequality.Semantic.DeepEqual(old.Endpoints, slice.Endpoints) &&
				apiequality.Semantic.DeepEqual(old.Ports, slice.Ports) && old.AddressType == slice.AddressType
		}},
	} {
		res, _ := s.reg.get(w.res.GVR)
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
