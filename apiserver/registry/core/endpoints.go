package core

//lint:file-ignore SA1019 v1 Endpoints are deprecated, and served and kept as kube does (G.10)

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// Endpoints (v1), stored with kube-apiserver's defaults, validation and
// Tables (D.5); EndpointSlices are apiserver/registry/discovery's. The
// endpoints and endpointslice controllers write them for Services with a
// selector (G.10); anyone may write them for a Service without one.
// apiserver writes the kubernetes Service's at start.

// endpointsDeprecation is the warning kube-apiserver adds to every request
// on v1 Endpoints, which Kubernetes 1.33 deprecated in favour of
// EndpointSlices.
const endpointsDeprecation = "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"

func endpointsResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: apiserver.EndpointsGVR, Kind: "Endpoints", Singular: "endpoints", Namespaced: true, ShortNames: []string{"ep"},
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
		errs = append(errs, apiserver.DNSLabel(path.Child("hostname"), a.Hostname)...)
	}
	if a.NodeName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*a.NodeName, false) {
			errs = append(errs, field.Invalid(path.Child("nodeName"), *a.NodeName, msg))
		}
	}
	return append(errs, apiserver.NonSpecialIP(path.Child("ip"), a.IP)...)
}

func validateEndpointPort(p *corev1.EndpointPort, requireName bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && p.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else if p.Name != "" {
		errs = append(errs, apiserver.DNSLabel(path.Child("name"), p.Name)...)
	}
	for _, msg := range validation.IsValidPortNum(int(p.Port)) {
		errs = append(errs, field.Invalid(path.Child("port"), p.Port, msg))
	}
	errs = append(errs, apiserver.OneOf(path.Child("protocol"), p.Protocol, portProtocols)...)
	if p.AppProtocol != nil {
		errs = append(errs, qualifiedName(path.Child("appProtocol"), *p.AppProtocol)...)
	}
	return errs
}

// endpointsTable is kube's: NAME, ENDPOINTS (the first three ip:port
// pairs of ready addresses, "+ N more..." after them, <none> without
// subsets) and AGE.
var endpointsTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Endpoints", Type: "string", Description: corev1.Endpoints{}.SwaggerDoc()["subsets"]},
		apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		e := obj.(*corev1.Endpoints)
		return []any{e.Name, formatEndpoints(e), apiserver.Age(e.CreationTimestamp, now)}
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
