package core

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// limitRangeResource is served as kube-apiserver serves it: namespaced,
// short name "limits", no status, and kube's default Table of NAME and
// CREATED AT (kube has no printer for it).
func limitRangeResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: apiserver.LimitRangesGVR, Kind: "LimitRange", Singular: "limitrange", Namespaced: true,
		ShortNames: []string{"limits"}, ValidateName: apivalidation.NameIsDNSSubdomain,
		Defaults: defaultLimitRange, Prepare: prepareLimitRange, Validate: validateLimitRange}
}

// defaultLimitRange fills a Container item's defaults as kube's decoding
// does: a default limit from max, a default request from the default
// limit, else from min.
func defaultLimitRange(obj runtime.Object) {
	lr := obj.(*corev1.LimitRange)
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		if item.Default == nil {
			item.Default = corev1.ResourceList{}
		}
		if item.DefaultRequest == nil {
			item.DefaultRequest = corev1.ResourceList{}
		}
		fill := func(to, from corev1.ResourceList) {
			for name, q := range from {
				if _, ok := to[name]; !ok {
					to[name] = q.DeepCopy()
				}
			}
		}
		fill(item.Default, item.Max)
		fill(item.DefaultRequest, item.Default)
		fill(item.DefaultRequest, item.Min)
	}
}

// prepareLimitRange names a new limit range without a name (nor
// generateName) with a UUID, as kube's registry does.
func prepareLimitRange(obj, old runtime.Object) {
	if lr := obj.(*corev1.LimitRange); old == nil && lr.Name == "" {
		lr.Name = uuid.NewString()
	}
}

// validateLimitRange applies kube's ValidateLimitRange (D.8): each type
// once, standard or qualified; resource names valid for the type (cpu,
// memory, ephemeral-storage, hugepages-* and extended resources for Pod
// and Container); no default or defaultRequest for Pod; min or max storage
// for PersistentVolumeClaim; min <= defaultRequest <= default <= max;
// maxLimitRequestRatio at least 1 and at most max/min; default equal to
// defaultRequest for resources that cannot be overcommitted. kube walks
// maps in no fixed order; kubegate walks names sorted, so its errors come
// in one order of those kube may give.
func validateLimitRange(obj, _ runtime.Object) field.ErrorList {
	lr := obj.(*corev1.LimitRange)
	var errs field.ErrorList
	seen := map[corev1.LimitType]bool{}
	for i := range lr.Spec.Limits {
		path := field.NewPath("spec", "limits").Index(i)
		item := &lr.Spec.Limits[i]
		errs = append(errs, validateLimitType(item.Type, path.Child("type"))...)
		if seen[item.Type] {
			errs = append(errs, field.Duplicate(path.Child("type"), item.Type))
		}
		seen[item.Type] = true

		names := map[corev1.ResourceName]bool{}
		checkNames := func(list corev1.ResourceList, child string) {
			for _, name := range sortedResourceNames(list) {
				errs = append(errs, validateLimitResourceName(item.Type, name, path.Child(child).Key(string(name)))...)
				names[name] = true
			}
		}
		checkNames(item.Max, "max")
		checkNames(item.Min, "min")
		defaults, defaultRequests := item.Default, item.DefaultRequest
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				errs = append(errs, field.Forbidden(path.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(path.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
			defaults, defaultRequests = nil, nil
		} else {
			checkNames(item.Default, "default")
			checkNames(item.DefaultRequest, "defaultRequest")
		}
		if item.Type == corev1.LimitTypePersistentVolumeClaim {
			_, min := item.Min[corev1.ResourceStorage]
			_, max := item.Max[corev1.ResourceStorage]
			if !min && !max {
				errs = append(errs, field.Required(path.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		checkNames(item.MaxLimitRequestRatio, "maxLimitRequestRatio")

		for _, name := range sortedResourceNames(names) {
			errs = append(errs, validateLimitBounds(name, item, defaults, defaultRequests, path)...)
		}
	}
	return errs
}

// validateLimitBounds checks how an item's values for one resource relate,
// with kube's messages (the default above max names max as the value, as
// kube's does).
func validateLimitBounds(name corev1.ResourceName, item *corev1.LimitRangeItem, defaults, defaultRequests corev1.ResourceList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	key := string(name)
	min, hasMin := item.Min[name]
	max, hasMax := item.Max[name]
	def, hasDef := defaults[name]
	defReq, hasDefReq := defaultRequests[name]
	if hasMin && hasMax && min.Cmp(max) > 0 {
		errs = append(errs, field.Invalid(path.Child("min").Key(key), min, fmt.Sprintf("min value %s is greater than max value %s", min.String(), max.String())))
	}
	if hasDefReq && hasMin && min.Cmp(defReq) > 0 {
		errs = append(errs, field.Invalid(path.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("min value %s is greater than default request value %s", min.String(), defReq.String())))
	}
	if hasDefReq && hasMax && defReq.Cmp(max) > 0 {
		errs = append(errs, field.Invalid(path.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("default request value %s is greater than max value %s", defReq.String(), max.String())))
	}
	if hasDefReq && hasDef && defReq.Cmp(def) > 0 {
		errs = append(errs, field.Invalid(path.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("default request value %s is greater than default limit value %s", defReq.String(), def.String())))
	}
	if hasDef && hasMin && min.Cmp(def) > 0 {
		errs = append(errs, field.Invalid(path.Child("default").Key(key), min, fmt.Sprintf("min value %s is greater than default value %s", min.String(), def.String())))
	}
	if hasDef && hasMax && def.Cmp(max) > 0 {
		errs = append(errs, field.Invalid(path.Child("default").Key(key), max, fmt.Sprintf("default value %s is greater than max value %s", def.String(), max.String())))
	}
	errs = append(errs, validateLimitRatio(item, name, path)...)
	if !overcommitAllowed(name) && hasDef && hasDefReq && def.Cmp(defReq) != 0 {
		errs = append(errs, field.Invalid(path.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("default value %s must equal to defaultRequest value %s in %s", def.String(), defReq.String(), key)))
	}
	return errs
}

// validateLimitRatio checks an item's maxLimitRequestRatio for one
// resource: at least 1, and no more than its max over its min.
func validateLimitRatio(item *corev1.LimitRangeItem, name corev1.ResourceName, path *field.Path) field.ErrorList {
	ratio, hasRatio := item.MaxLimitRequestRatio[name]
	if !hasRatio {
		return nil
	}
	var errs field.ErrorList
	key := string(name)
	min, hasMin := item.Min[name]
	max, hasMax := item.Max[name]
	if ratio.Cmp(*apiresource.NewQuantity(1, apiresource.DecimalSI)) < 0 {
		errs = append(errs, field.Invalid(path.Child("maxLimitRequestRatio").Key(key), ratio, fmt.Sprintf("ratio %s is less than 1", ratio.String())))
	}
	if hasMin && hasMax {
		ratioValue, minValue, maxValue := float64(ratio.Value()), min.Value(), max.Value()
		if ratio.Value() < apiresource.MaxMilliValue && minValue < apiresource.MaxMilliValue && maxValue < apiresource.MaxMilliValue {
			ratioValue, minValue, maxValue = float64(ratio.MilliValue())/1000, min.MilliValue(), max.MilliValue()
		}
		if bound := float64(maxValue) / float64(minValue); ratioValue > bound {
			errs = append(errs, field.Invalid(path.Child("maxLimitRequestRatio").Key(key), ratio, fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), bound)))
		}
	}
	return errs
}

func sortedResourceNames[V any](m map[corev1.ResourceName]V) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// validateLimitType: a qualified name, and one of Pod, Container and
// PersistentVolumeClaim unless it has a prefix.
func validateLimitType(t corev1.LimitType, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(t)) {
		errs = append(errs, field.Invalid(path, t, msg))
	}
	if len(errs) > 0 {
		return errs
	}
	switch t {
	case corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim:
	default:
		if !strings.Contains(string(t), "/") {
			errs = append(errs, field.Invalid(path, t, "must be a standard limit type or fully qualified"))
		}
	}
	return errs
}

// validateLimitResourceName: a container resource for Pod and Container
// items, any standard or qualified resource name for the other types.
func validateLimitResourceName(t corev1.LimitType, name corev1.ResourceName, path *field.Path) field.ErrorList {
	errs := validateResourceName(name, path)
	if t != corev1.LimitTypePod && t != corev1.LimitTypeContainer {
		return errs
	}
	if !strings.Contains(string(name), "/") {
		if !standardContainerResource(name) {
			errs = append(errs, field.Invalid(path, name, "must be a standard resource for containers"))
		}
	} else if !nativeResource(name) && !extendedResource(name) {
		errs = append(errs, field.Invalid(path, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

// validateResourceName: a qualified name, and a standard resource unless
// it has a prefix.
func validateResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	if len(errs) > 0 {
		return errs
	}
	if !strings.Contains(string(name), "/") && !standardResource(name) {
		errs = append(errs, field.Invalid(path, name, "must be a standard resource type or fully qualified"))
	}
	return errs
}

// standardResources are kube's standard resource names (its
// helper.IsStandardResourceName), besides hugepages-*.
var standardResources = map[corev1.ResourceName]bool{
	corev1.ResourceCPU: true, corev1.ResourceMemory: true, corev1.ResourceEphemeralStorage: true,
	corev1.ResourceRequestsCPU: true, corev1.ResourceRequestsMemory: true, corev1.ResourceRequestsEphemeralStorage: true,
	corev1.ResourceLimitsCPU: true, corev1.ResourceLimitsMemory: true, corev1.ResourceLimitsEphemeralStorage: true,
	corev1.ResourcePods: true, corev1.ResourceQuotas: true, corev1.ResourceServices: true,
	corev1.ResourceReplicationControllers: true, corev1.ResourceSecrets: true, corev1.ResourceConfigMaps: true,
	corev1.ResourcePersistentVolumeClaims: true, corev1.ResourceStorage: true, corev1.ResourceRequestsStorage: true,
	corev1.ResourceServicesNodePorts: true, corev1.ResourceServicesLoadBalancers: true,
}

func standardResource(name corev1.ResourceName) bool {
	return standardResources[name] || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) ||
		strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}

func standardContainerResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// nativeResource: unprefixed, or in the kubernetes.io/ namespace.
func nativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// extendedResource: outside kubernetes.io/, not "requests."-prefixed, and
// a qualified name once "requests." is put in front of it.
func extendedResource(name corev1.ResourceName) bool {
	if nativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// overcommitAllowed: native resources other than hugepages.
func overcommitAllowed(name corev1.ResourceName) bool {
	return nativeResource(name) && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}
