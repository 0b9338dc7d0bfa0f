package networking

import (
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/kubegate/kubegate/apiserver"
)

// serviceCIDRResource is the ServiceCIDR kind, with its status
// subresource. The API server creates the default one, "kubernetes".
func serviceCIDRResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: apiserver.ServiceCIDRsGVR, Kind: "ServiceCIDR", Singular: "servicecidr",
		Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()},
		ValidateName: apivalidation.NameIsDNSSubdomain, Validate: validateServiceCIDR, ValidateStatus: noStatusRules,
		ResetStatus: resetServiceCIDRStatus, Table: serviceCIDRTable}
}

func resetServiceCIDRStatus(obj, old runtime.Object) {
	sc := obj.(*networkingv1.ServiceCIDR)
	sc.Status = networkingv1.ServiceCIDRStatus{}
	if old != nil {
		sc.Status = old.(*networkingv1.ServiceCIDR).Status
	}
}

// noStatusRules: kube checks nothing of a ServiceCIDR's status but its
// metadata.
func noStatusRules(_, _ runtime.Object) field.ErrorList { return nil }

// validateServiceCIDR: one or two CIDRs, two being one of each IP family;
// an update changes none of them but may add a second to the first.
func validateServiceCIDR(obj, old runtime.Object) field.ErrorList {
	cidrs := obj.(*networkingv1.ServiceCIDR).Spec.CIDRs
	path := field.NewPath("spec", "cidrs")
	o, ok := old.(*networkingv1.ServiceCIDR)
	if !ok {
		return validateCIDRs(cidrs, path)
	}
	was := o.Spec.CIDRs
	switch {
	case len(was) == len(cidrs):
		var errs field.ErrorList
		for i := range was {
			if was[i] != cidrs[i] {
				errs = append(errs, field.Invalid(path.Index(i), cidrs[i], apivalidation.FieldImmutableErrorMsg))
			}
		}
		return errs
	case len(was) == 1 && len(cidrs) == 2:
		var errs field.ErrorList
		if cidrs[0] != was[0] {
			errs = append(errs, field.Invalid(path.Index(0), cidrs[0], apivalidation.FieldImmutableErrorMsg))
		}
		return append(errs, validateCIDRs(cidrs, path)...)
	}
	return field.ErrorList{field.Invalid(path, cidrs, apivalidation.FieldImmutableErrorMsg)}
}

// internalServiceCIDRSpec is kube's internal ServiceCIDRSpec, which the
// error for too many CIDRs shows with its Go field name.
type internalServiceCIDRSpec struct{ CIDRs []string }

func validateCIDRs(cidrs []string, path *field.Path) field.ErrorList {
	switch {
	case len(cidrs) == 0:
		return field.ErrorList{field.Required(path, "at least one CIDR required")}
	case len(cidrs) > 2:
		return field.ErrorList{field.Invalid(path, internalServiceCIDRSpec{CIDRs: cidrs}, "may only hold up to 2 values")}
	}
	var errs field.ErrorList
	for i, c := range cidrs {
		errs = append(errs, validation.IsValidCIDR(path.Index(i), c)...)
	}
	if len(cidrs) == 2 {
		if f := netutils.IPFamilyOfCIDRString(cidrs[0]); f != netutils.IPFamilyUnknown && f == netutils.IPFamilyOfCIDRString(cidrs[1]) {
			errs = append(errs, field.Invalid(path, cidrs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
		}
	}
	return errs
}

// serviceCIDRTable has the columns of kubectl get servicecidr.
var serviceCIDRTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "CIDRs", Type: "string", Description: networkingv1.ServiceCIDRSpec{}.SwaggerDoc()["cidrs"]},
		apiserver.AgeColumn,
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		sc := obj.(*networkingv1.ServiceCIDR)
		return []any{sc.Name, strings.Join(sc.Spec.CIDRs, ","), apiserver.Age(sc.CreationTimestamp, now)}
	},
}

// ipAddressResource is the IPAddress kind, named by the address it holds
// for its parent (the API server's allocator holds a Service's cluster
// IPs with them).
func ipAddressResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: apiserver.IPAddressesGVR, Kind: "IPAddress", Singular: "ipaddress", ShortNames: []string{"ip"},
		ValidateName: ipAddressName, Validate: validateIPAddress, Table: ipAddressTable}
}

// ipAddressName: the name is an IP address in its canonical form.
func ipAddressName(name string, _ bool) []string {
	var msgs []string
	for _, err := range validation.IsValidIP(&field.Path{}, name) {
		msgs = append(msgs, err.Detail)
	}
	return msgs
}

// validateIPAddress: a parent reference with a resource and a name that
// may be path segments, a DNS subdomain group if any; it never changes.
func validateIPAddress(obj, old runtime.Object) field.ErrorList {
	ip := obj.(*networkingv1.IPAddress)
	path := field.NewPath("spec", "parentRef")
	if o, ok := old.(*networkingv1.IPAddress); ok {
		// kube's declarative check says so without the value.
		if !apiequality.Semantic.DeepEqual(ip.Spec.ParentRef, o.Spec.ParentRef) {
			return field.ErrorList{field.Invalid(path, nil, apivalidation.FieldImmutableErrorMsg)}
		}
		return nil
	}
	ref := ip.Spec.ParentRef
	if ref == nil {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	if ref.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Group) {
			errs = append(errs, field.Invalid(path.Child("group"), ref.Group, msg))
		}
	}
	errs = append(errs, pathSegment(path.Child("resource"), ref.Resource)...)
	errs = append(errs, pathSegment(path.Child("name"), ref.Name)...)
	if ref.Namespace != "" {
		errs = append(errs, pathSegment(path.Child("namespace"), ref.Namespace)...)
	}
	return declarativeLast(errs)
}

// ipAddressTable has kube's two columns for IPAddresses, and its rows
// three cells: the age follows the parent.
var ipAddressTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "ParentRef", Type: "string", Description: networkingv1.IPAddressSpec{}.SwaggerDoc()["parentRef"]},
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		ip := obj.(*networkingv1.IPAddress)
		parent := "<none>"
		if ref := ip.Spec.ParentRef; ref != nil {
			parent = strings.ToLower(schema.GroupResource{Group: ref.Group, Resource: ref.Resource}.String())
			if ref.Namespace != "" {
				parent += "/" + ref.Namespace
			}
			parent += "/" + ref.Name
		}
		return []any{ip.Name, parent, apiserver.Age(ip.CreationTimestamp, now)}
	},
}
