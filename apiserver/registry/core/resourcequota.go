package core

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// ResourceQuotasGVR is the resource of the quotas the ResourceQuota
// admission plugin charges.
var ResourceQuotasGVR = corev1.SchemeGroupVersion.WithResource("resourcequotas")

// resourceQuotaResource is the ResourceQuota kind (D.14): short name
// "quota", a status subresource (status.hard and status.used, which the
// ResourceQuota admission plugin and the resource quota controller keep),
// kube's validation of spec.hard, scopes and scopeSelector, and its Table.
func resourceQuotaResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: ResourceQuotasGVR, Kind: "ResourceQuota", Singular: "resourcequota", Namespaced: true,
		ShortNames: []string{"quota"}, ReturnDeleted: true, Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()},
		ValidateName: apivalidation.NameIsDNSSubdomain, Validate: validateResourceQuota, ValidateStatus: validateResourceQuotaStatus,
		ResetStatus: resetResourceQuotaStatus, Warnings: resourceQuotaWarnings, Table: resourceQuotaTable}
}

func resetResourceQuotaStatus(obj, old runtime.Object) {
	q := obj.(*corev1.ResourceQuota)
	q.Status = corev1.ResourceQuotaStatus{}
	if old != nil {
		q.Status = old.(*corev1.ResourceQuota).Status
	}
}

// validateResourceQuota applies kube's ValidateResourceQuota: spec.hard's
// names and quantities, the scopes and the scope selector valid for them,
// and on an update the same scopes. kube walks spec.hard in no fixed
// order; kubegate walks it sorted.
func validateResourceQuota(obj, old runtime.Object) field.ErrorList {
	q := obj.(*corev1.ResourceQuota)
	spec := field.NewPath("spec")
	errs := validateQuotaList(q.Spec.Hard, spec.Child("hard"))
	errs = append(errs, validateQuotaScopes(&q.Spec, spec)...)
	if q.Spec.ScopeSelector != nil {
		errs = append(errs, validateScopeSelector(&q.Spec, spec.Child("scopeSelector"))...)
	}
	errs = uniqueErrors(errs)
	if old == nil {
		st := field.NewPath("status")
		errs = append(errs, validateQuotaList(q.Status.Hard, st.Child("hard"))...)
		return append(errs, validateQuotaList(q.Status.Used, st.Child("used"))...)
	}
	if !sameScopes(q.Spec.Scopes, old.(*corev1.ResourceQuota).Spec.Scopes) {
		errs = append(errs, field.Invalid(spec.Child("scopes"), q.Spec.Scopes, apivalidation.FieldImmutableErrorMsg))
	}
	return errs
}

// uniqueErrors drops the repeats of an error, as kube's answer lists
// each once (a scope unfit for two resources).
func uniqueErrors(errs field.ErrorList) field.ErrorList {
	seen := map[string]bool{}
	out := errs[:0]
	for _, e := range errs {
		if msg := e.Error(); !seen[msg] {
			seen[msg] = true
			out = append(out, e)
		}
	}
	return out
}

func sameScopes(a, b []corev1.ResourceQuotaScope) bool {
	set := func(s []corev1.ResourceQuotaScope) []corev1.ResourceQuotaScope {
		s = slices.Clone(s)
		slices.Sort(s)
		return slices.Compact(s)
	}
	return slices.Equal(set(a), set(b))
}

// validateResourceQuotaStatus is kube's check of a status update: a
// resourceVersion, and status.hard and status.used as spec.hard.
func validateResourceQuotaStatus(obj, _ runtime.Object) field.ErrorList {
	q := obj.(*corev1.ResourceQuota)
	var errs field.ErrorList
	if q.ResourceVersion == "" {
		errs = append(errs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	st := field.NewPath("status")
	errs = append(errs, validateQuotaList(q.Status.Hard, st.Child("hard"))...)
	return append(errs, validateQuotaList(q.Status.Used, st.Child("used"))...)
}

// validateQuotaList checks each name as a quota resource and its quantity:
// not negative, and whole for the resources counted in units.
func validateQuotaList(list corev1.ResourceList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedResourceNames(list) {
		p := path.Key(string(name))
		errs = append(errs, validateResourceName(name, p)...)
		if !strings.Contains(string(name), "/") && !standardQuotaResource(name) {
			errs = append(errs, field.Invalid(p, name, "must be a standard resource for quota"))
		}
		v := list[name]
		if v.Cmp(apiresource.Quantity{}) < 0 {
			errs = append(errs, field.Invalid(p, v.String(), apivalidation.IsNegativeErrorMsg))
		}
		if integerQuotaResource(name) && v.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(p, v, "must be an integer"))
		}
	}
	return errs
}

// standardQuotaResource: the resources kube's quota system knows.
func standardQuotaResource(name corev1.ResourceName) bool {
	return name != corev1.ResourceStorage && standardResource(name)
}

// integerQuotaResource: object counts and extended resources.
func integerQuotaResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
		corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers:
		return true
	}
	return extendedResource(name)
}

func standardScope(s corev1.ResourceQuotaScope) bool {
	switch s {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeBestEffort,
		corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeVolumeAttributesClass,
		corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return true
	}
	return false
}

// scopeValidFor: which resources a scope may limit.
func scopeValidFor(s corev1.ResourceQuotaScope, name corev1.ResourceName) bool {
	podCompute := func() bool {
		switch name {
		case corev1.ResourcePods, corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
			corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory:
			return true
		}
		return false
	}
	switch s {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return podCompute()
	case corev1.ResourceQuotaScopeBestEffort:
		return name == corev1.ResourcePods
	case corev1.ResourceQuotaScopeVolumeAttributesClass:
		return name == corev1.ResourcePersistentVolumeClaims || name == corev1.ResourceRequestsStorage
	}
	return true
}

// conflictingScopes: a pair no quota may select both of.
var conflictingScopes = [][2]corev1.ResourceQuotaScope{
	{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort},
	{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating},
}

// validateQuotaScopes checks spec.scopes against each other and spec.hard.
func validateQuotaScopes(s *corev1.ResourceQuotaSpec, spec *field.Path) field.ErrorList {
	if len(s.Scopes) == 0 {
		return nil
	}
	var errs field.ErrorList
	path := spec.Child("scopes")
	for _, scope := range s.Scopes {
		if !standardScope(scope) {
			errs = append(errs, field.Invalid(path, s.Scopes, "unsupported scope"))
		}
		for _, name := range sortedResourceNames(s.Hard) {
			if standardQuotaResource(name) && !scopeValidFor(scope, name) {
				errs = append(errs, field.Invalid(path, s.Scopes, "unsupported scope applied to resource"))
			}
		}
	}
	for _, pair := range conflictingScopes {
		if slices.Contains(s.Scopes, pair[0]) && slices.Contains(s.Scopes, pair[1]) {
			errs = append(errs, field.Invalid(path, s.Scopes, "conflicting scopes"))
		}
	}
	return errs
}

// validateScopeSelector checks each match expression of
// spec.scopeSelector: a known scope valid for spec.hard, an operator its
// scope allows, values as the operator wants them.
func validateScopeSelector(s *corev1.ResourceQuotaSpec, sel *field.Path) field.ErrorList {
	var errs field.ErrorList
	path := sel.Child("matchExpressions")
	var scopes []corev1.ResourceQuotaScope
	for _, req := range s.ScopeSelector.MatchExpressions {
		if !standardScope(req.ScopeName) {
			errs = append(errs, field.Invalid(path.Child("scopeName"), req.ScopeName, "unsupported scope"))
		}
		for _, name := range sortedResourceNames(s.Hard) {
			if standardQuotaResource(name) && !scopeValidFor(req.ScopeName, name) {
				errs = append(errs, field.Invalid(path, s.ScopeSelector, "unsupported scope applied to resource"))
			}
		}
		switch req.ScopeName {
		case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating,
			corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
			if req.Operator != corev1.ScopeSelectorOpExists {
				errs = append(errs, field.Invalid(path.Child("operator"), req.Operator,
					"must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
			}
		}
		switch req.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(path.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(req.Values) != 0 {
				errs = append(errs, field.Invalid(path.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
			}
		default:
			errs = append(errs, field.Invalid(path.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		scopes = append(scopes, req.ScopeName)
	}
	for _, pair := range conflictingScopes {
		if slices.Contains(scopes, pair[0]) && slices.Contains(scopes, pair[1]) {
			errs = append(errs, field.Invalid(path, s.Scopes, "conflicting scopes"))
		}
	}
	return errs
}

// resourceQuotaWarnings warns, on a create, of a request quota above the
// limit quota of the same resource.
func resourceQuotaWarnings(obj, old runtime.Object) []string {
	if old != nil {
		return nil
	}
	hard := obj.(*corev1.ResourceQuota).Spec.Hard
	var w []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceStorage, corev1.ResourceEphemeralStorage} {
		reqName := "requests." + name
		req, hasReq := hard[reqName]
		if !hasReq && (name == corev1.ResourceCPU || name == corev1.ResourceMemory) {
			if req, hasReq = hard[name]; hasReq {
				reqName = name
			}
		}
		limName := "limits." + name
		lim, hasLim := hard[limName]
		if hasReq && hasLim && req.Cmp(lim) > 0 {
			w = append(w, fmt.Sprintf("ResourceQuota %s (%s) should be less than %s (%s)", reqName, req.String(), limName, lim.String()))
		}
	}
	return w
}

// resourceQuotaTable is kube's: used/hard of each resource of status.hard,
// the limits.* in LIMIT and the others in REQUEST.
var resourceQuotaTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Request", Type: "string", Description: "Request represents a minimum amount of cpu/memory that a container may consume."},
		{Name: "Limit", Type: "string", Description: "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."},
		apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		q := obj.(*corev1.ResourceQuota)
		var req, lim []string
		for _, name := range sortedResourceNames(q.Status.Hard) {
			used, hard := q.Status.Used[name], q.Status.Hard[name]
			cell := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
			if strings.HasPrefix(string(name), "limits.") {
				lim = append(lim, cell)
			} else {
				req = append(req, cell)
			}
		}
		return []any{q.Name, strings.Join(req, ", "), strings.Join(lim, ", "), apiserver.Age(q.CreationTimestamp, now)}
	},
}
