// Package discovery is the discovery.k8s.io API group: EndpointSlices,
// stored with kube-apiserver's defaults, validation, warnings and Table
// (D.5, G.10). The server writes the kubernetes Service's slice itself
// when it starts.
package discovery

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry/core"
)

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{{GVR: apiserver.EndpointSlicesGVR, Kind: "EndpointSlice", Singular: "endpointslice", Namespaced: true,
		ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true, GenerationChanged: endpointSliceChanged,
		Defaults: defaultEndpointSlice, Prepare: prepareEndpointSlice, Validate: validateEndpointSlice, Warnings: endpointSliceWarnings, Table: endpointSliceTable}}
}

// defaultEndpointSlice gives each port kube's defaults: an empty name and
// protocol TCP.
func defaultEndpointSlice(obj runtime.Object) {
	es := obj.(*discoveryv1.EndpointSlice)
	for i := range es.Ports {
		p := &es.Ports[i]
		if p.Name == nil {
			p.Name = ptr.To("")
		}
		if p.Protocol == nil {
			p.Protocol = ptr.To(corev1.ProtocolTCP)
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
	errs := apiserver.OneOf(field.NewPath("addressType"), es.AddressType, types)
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
				errs = append(errs, apiserver.NonSpecialIP(p, a)...)
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
		name := ptr.Deref(p.Name, "")
		if name != "" {
			errs = append(errs, apiserver.DNSLabel(pp.Child("name"), name)...)
		}
		if names[name] {
			errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
		}
		names[name] = true
		if p.Protocol == nil {
			errs = append(errs, field.Required(pp.Child("protocol"), ""))
		} else {
			errs = append(errs, apiserver.OneOf(pp.Child("protocol"), *p.Protocol, core.PortProtocols())...)
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
var endpointSliceTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "AddressType", Type: "string", Description: endpointSliceDoc["addressType"]},
		{Name: "Ports", Type: "string", Description: endpointSliceDoc["ports"]},
		{Name: "Endpoints", Type: "string", Description: endpointSliceDoc["endpoints"]},
		apiserver.AgeColumn},
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
		return []any{es.Name, string(es.AddressType), firstThree(ports), firstThree(addrs), apiserver.Age(es.CreationTimestamp, now)}
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
