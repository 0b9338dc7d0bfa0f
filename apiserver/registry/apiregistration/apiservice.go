// Package apiregistration is the apiregistration.k8s.io API group:
// APIServices, which name who serves each group version (I.3). The
// server keeps a local APIService for every group version it serves
// (apiserver/server); one that names a service is validated and stored as
// kube's aggregator stores it, but kubegate does not proxy to it yet.
package apiregistration

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/client/applyconfiguration"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/apiserver"
)

// APIServicesGVR is where APIServices are served.
var APIServicesGVR = apiregistrationv1.SchemeGroupVersion.WithResource("apiservices")

// scheme names the group's kinds for its type converter.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(apiregistrationv1.AddToScheme(s))
	return s
}()

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{{
		GVR: APIServicesGVR, Kind: "APIService", Singular: "apiservice", Categories: []string{"api-extensions"},
		Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()},
		ValidateName: validateName, Defaults: defaultAPIService, Prepare: prepareAPIService, ResetStatus: resetStatus,
		Validate: validateAPIService, ValidateStatus: validateStatus, Table: apiServiceTable,
		// kube-aggregator's schema types the kind's managed fields.
		TypeConverter: applyconfiguration.NewTypeConverter(scheme),
	}}
}

func resetStatus(obj, old runtime.Object) {
	s := obj.(*apiregistrationv1.APIService)
	s.Status = apiregistrationv1.APIServiceStatus{}
	if old != nil {
		s.Status = *old.(*apiregistrationv1.APIService).Status.DeepCopy()
	}
}

// defaultAPIService gives a service kube's port, 443.
func defaultAPIService(obj runtime.Object) {
	if svc := obj.(*apiregistrationv1.APIService).Spec.Service; svc != nil && svc.Port == nil {
		svc.Port = ptr.To[int32](443)
	}
}

// prepareAPIService marks a new local APIService available, as kube's
// aggregator does as it stores one.
func prepareAPIService(obj, old runtime.Object) {
	s := obj.(*apiregistrationv1.APIService)
	if old == nil && s.Spec.Service == nil {
		s.Status.Conditions = []apiregistrationv1.APIServiceCondition{LocalAvailable(metav1.NewTime(time.Now().Truncate(time.Second)))}
	}
}

// LocalAvailable is the Available condition of a local APIService.
func LocalAvailable(now metav1.Time) apiregistrationv1.APIServiceCondition {
	return apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue,
		LastTransitionTime: now, Reason: "Local", Message: "Local APIServices are always available"}
}

// validateName: a name that can be a path segment; that it is the
// version and group is checked with the spec.
func validateName(name string, _ bool) []string {
	for _, bad := range []string{".", ".."} {
		if name == bad {
			return []string{fmt.Sprintf(`may not be '%s'`, bad)}
		}
	}
	for _, bad := range []string{"/", "%"} {
		if strings.Contains(name, bad) {
			return []string{fmt.Sprintf(`may not contain '%s'`, bad)}
		}
	}
	return nil
}

// validateAPIService checks the name against the spec, the group and
// version, the priorities, and what a local or a service's APIService
// may hold (I.3).
func validateAPIService(obj, _ runtime.Object) field.ErrorList {
	s := obj.(*apiregistrationv1.APIService)
	spec := &s.Spec
	var errs field.ErrorList
	if want := spec.Version + "." + spec.Group; s.Name != want && len(validateName(s.Name, false)) == 0 && s.Name != "" {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), s.Name, fmt.Sprintf("must be `spec.version+\".\"+spec.group`: %q", want)))
	}
	p := field.NewPath("spec")
	if spec.Group == "" && spec.Version != "v1" {
		errs = append(errs, field.Required(p.Child("group"), "only v1 may have an empty group and it better be legacy kube"))
	}
	if spec.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(spec.Group) {
			errs = append(errs, field.Invalid(p.Child("group"), spec.Group, msg))
		}
	}
	for _, msg := range validation.IsDNS1035Label(spec.Version) {
		errs = append(errs, field.Invalid(p.Child("version"), spec.Version, msg))
	}
	if spec.GroupPriorityMinimum <= 0 || spec.GroupPriorityMinimum > 20000 {
		errs = append(errs, field.Invalid(p.Child("groupPriorityMinimum"), spec.GroupPriorityMinimum, "must be positive and less than 20000"))
	}
	if spec.VersionPriority <= 0 || spec.VersionPriority > 1000 {
		errs = append(errs, field.Invalid(p.Child("versionPriority"), spec.VersionPriority, "must be positive and less than 1000"))
	}
	svc := spec.Service
	if svc == nil {
		if len(spec.CABundle) != 0 {
			errs = append(errs, field.Invalid(p.Child("caBundle"), fmt.Sprintf("%d bytes", len(spec.CABundle)), "local APIServices may not have a caBundle"))
		}
		if spec.InsecureSkipTLSVerify {
			errs = append(errs, field.Invalid(p.Child("insecureSkipTLSVerify"), spec.InsecureSkipTLSVerify, "local APIServices may not have insecureSkipTLSVerify"))
		}
		return errs
	}
	if svc.Namespace == "" {
		errs = append(errs, field.Required(p.Child("service", "namespace"), ""))
	}
	if svc.Name == "" {
		errs = append(errs, field.Required(p.Child("service", "name"), ""))
	}
	port := ptr.Deref(svc.Port, 0)
	if msgs := validation.IsValidPortNum(int(port)); msgs != nil {
		errs = append(errs, field.Invalid(p.Child("service", "port"), port, "port is not valid: "+strings.Join(msgs, ", ")))
	}
	if spec.InsecureSkipTLSVerify && len(spec.CABundle) > 0 {
		errs = append(errs, field.Invalid(p.Child("insecureSkipTLSVerify"), spec.InsecureSkipTLSVerify, "may not be true if caBundle is present"))
	}
	return errs
}

// validateStatus: each condition's status is True, False or Unknown.
func validateStatus(obj, _ runtime.Object) field.ErrorList {
	var errs field.ErrorList
	for i, c := range obj.(*apiregistrationv1.APIService).Status.Conditions {
		switch c.Status {
		case apiregistrationv1.ConditionTrue, apiregistrationv1.ConditionFalse, apiregistrationv1.ConditionUnknown:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("status", "conditions").Index(i).Child("status"), c.Status,
				[]string{string(apiregistrationv1.ConditionTrue), string(apiregistrationv1.ConditionFalse), string(apiregistrationv1.ConditionUnknown)}))
		}
	}
	return errs
}

// apiServiceTable is kube's: the service or Local, and whether it is
// available, with the reason when it is not (B.5).
var apiServiceTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Service", Type: "string", Description: "The reference to the service that hosts this API endpoint."},
		{Name: "Available", Type: "string", Description: "Whether this service is available."},
		apiserver.AgeColumn,
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		s := obj.(*apiregistrationv1.APIService)
		service := "Local"
		if svc := s.Spec.Service; svc != nil {
			service = svc.Namespace + "/" + svc.Name
		}
		available := string(apiregistrationv1.ConditionUnknown)
		for _, c := range s.Status.Conditions {
			if c.Type != apiregistrationv1.Available {
				continue
			}
			available = string(c.Status)
			if c.Status != apiregistrationv1.ConditionTrue && c.Reason != "" {
				available = fmt.Sprintf("%s (%s)", c.Status, c.Reason)
			}
			break
		}
		return []any{s.Name, service, available, apiserver.Age(s.CreationTimestamp, now)}
	},
}

// versionPriority is the version priority kube-apiserver gives the local
// APIService of each group version it serves; the group's priority is its
// discovery priority (apiserver.GroupPriority).
var versionPriority = map[schema.GroupVersion]int32{
	{Version: "v1"}:                1,
	{Group: "apps", Version: "v1"}: 15, {Group: "autoscaling", Version: "v1"}: 15, {Group: "autoscaling", Version: "v2"}: 30,
	{Group: "batch", Version: "v1"}: 15, {Group: "networking.k8s.io", Version: "v1"}: 15, {Group: "policy", Version: "v1"}: 15,
	{Group: "storage.k8s.io", Version: "v1"}: 15, {Group: "scheduling.k8s.io", Version: "v1"}: 15, {Group: "node.k8s.io", Version: "v1"}: 15,
	{Group: "resource.k8s.io", Version: "v1"}: 21, {Group: "events.k8s.io", Version: "v1"}: 15, {Group: "authentication.k8s.io", Version: "v1"}: 15,
	{Group: "authorization.k8s.io", Version: "v1"}: 15, {Group: "certificates.k8s.io", Version: "v1"}: 15,
	{Group: "rbac.authorization.k8s.io", Version: "v1"}: 15, {Group: "apiextensions.k8s.io", Version: "v1"}: 15,
	{Group: "admissionregistration.k8s.io", Version: "v1"}: 15, {Group: "coordination.k8s.io", Version: "v1"}: 15,
	{Group: "discovery.k8s.io", Version: "v1"}: 15, {Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: 21,
	{Group: "storagemigration.k8s.io", Version: "v1"}: 15,
}

// The priorities of a custom resource definition's APIServices, kube's
// crd-autoregister's.
const (
	crdGroupPriority   = 1000
	crdVersionPriority = 100
)

// AutomanagedLabel says how the server keeps a local APIService: onstart
// for a built-in group version, true for a custom resource's.
const AutomanagedLabel = "kube-aggregator.kubernetes.io/automanaged"

// Local returns the local APIService kube-apiserver keeps for gv, a
// built-in group version with its group's priority groupPriority; false
// when kube gives gv none.
func Local(gv schema.GroupVersion, groupPriority int32) (*apiregistrationv1.APIService, bool) {
	vp, ok := versionPriority[gv]
	if !ok {
		return nil, false
	}
	return local(gv, groupPriority, vp), true
}

// LocalCustom returns the local APIService of a custom resource
// definition's served version gv.
func LocalCustom(gv schema.GroupVersion) *apiregistrationv1.APIService {
	return local(gv, crdGroupPriority, crdVersionPriority)
}

func local(gv schema.GroupVersion, groupPriority, vp int32) *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group},
		Spec: apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version, GroupPriorityMinimum: groupPriority, VersionPriority: vp}}
}
