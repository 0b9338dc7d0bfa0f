package resource

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rules here are kube-apiserver's for resource.k8s.io/v1 (D.14).

// validateDeviceClass: the selectors and the opaque configurations, each
// list within its limit, and an extended resource name if one is given.
func validateDeviceClass(obj, _ runtime.Object) field.ErrorList {
	spec := &obj.(*resourcev1.DeviceClass).Spec
	p := field.NewPath("spec")
	errs := validateSelectors(spec.Selectors, p.Child("selectors"))
	if len(spec.Config) > resourcev1.DeviceConfigMaxSize {
		errs = append(errs, field.TooMany(p.Child("config"), len(spec.Config), resourcev1.DeviceConfigMaxSize))
	} else {
		for i := range spec.Config {
			errs = append(errs, validateDeviceConfiguration(&spec.Config[i].DeviceConfiguration, p.Child("config").Index(i))...)
		}
	}
	if n := spec.ExtendedResourceName; n != nil && !isExtendedResourceName(*n) {
		errs = append(errs, field.Invalid(p.Child("extendedResourceName"), *n, "must be a valid extended resource name"))
	}
	return errs
}

// isExtendedResourceName: a qualified name outside kubernetes.io that
// requests.<name> is a qualified name too.
func isExtendedResourceName(name string) bool {
	if strings.HasPrefix(name, corev1.ResourceDefaultNamespacePrefix) || !strings.Contains(name, "/") {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+name)) == 0
}

func validateSelectors(selectors []resourcev1.DeviceSelector, p *field.Path) field.ErrorList {
	if len(selectors) > resourcev1.DeviceSelectorsMaxSize {
		return field.ErrorList{field.TooMany(p, len(selectors), resourcev1.DeviceSelectorsMaxSize)}
	}
	var errs field.ErrorList
	for i, s := range selectors {
		if s.CEL == nil {
			errs = append(errs, field.Required(p.Index(i).Child("cel"), ""))
			continue
		}
		errs = append(errs, validateCELExpression(s.CEL.Expression, p.Index(i).Child("cel", "expression"))...)
	}
	return errs
}

// validateCELExpression checks what can be checked without compiling the
// expression: that there is one, and its length.
func validateCELExpression(expr string, p *field.Path) field.ErrorList {
	switch {
	case strings.TrimSpace(expr) == "":
		return field.ErrorList{field.Required(p, "")}
	case len(expr) > resourcev1.CELSelectorExpressionMaxLength:
		return field.ErrorList{field.TooLong(p, "", resourcev1.CELSelectorExpressionMaxLength)}
	}
	return nil
}

func validateDeviceConfiguration(c *resourcev1.DeviceConfiguration, p *field.Path) field.ErrorList {
	if c.Opaque == nil {
		return field.ErrorList{field.Required(p.Child("opaque"), "")}
	}
	p = p.Child("opaque")
	errs := validateDriverName(c.Opaque.Driver, p.Child("driver"))
	raw := c.Opaque.Parameters.Raw
	switch {
	case len(raw) == 0:
		errs = append(errs, field.Required(p.Child("parameters"), ""))
	case len(raw) > resourcev1.OpaqueParametersMaxLength:
		errs = append(errs, field.TooLong(p.Child("parameters"), "", resourcev1.OpaqueParametersMaxLength))
	}
	return errs
}

// validateDriverName is the rule of a CSI driver's name, which a DRA
// driver's follows.
func validateDriverName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if len(name) > resourcev1.DriverNameMaxLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.DriverNameMaxLength))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

func invalidEach(p *field.Path, value string, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}

func validatePoolName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if len(name) > resourcev1.PoolNameMaxLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.PoolNameMaxLength))
	}
	for _, part := range strings.Split(name, "/") {
		errs = append(errs, invalidEach(p, part, validation.IsDNS1123Subdomain(part))...)
	}
	return errs
}

// defaultResourceClaim gives each exact request, and each alternative
// of a request, the allocation mode ExactCount and a count of 1.
func defaultResourceClaim(obj runtime.Object) {
	defaultDeviceClaim(&obj.(*resourcev1.ResourceClaim).Spec.Devices)
}

func defaultResourceClaimTemplate(obj runtime.Object) {
	defaultDeviceClaim(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec.Devices)
}

func defaultDeviceClaim(d *resourcev1.DeviceClaim) {
	for i := range d.Requests {
		r := &d.Requests[i]
		if r.Exactly != nil {
			defaultAllocationMode(&r.Exactly.AllocationMode, &r.Exactly.Count)
		}
		for j := range r.FirstAvailable {
			defaultAllocationMode(&r.FirstAvailable[j].AllocationMode, &r.FirstAvailable[j].Count)
		}
	}
}

func defaultAllocationMode(mode *resourcev1.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourcev1.DeviceAllocationModeExactCount
	}
	if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

// validateResourceClaim: the requests on create; afterwards the spec
// never changes.
func validateResourceClaim(obj, old runtime.Object) field.ErrorList {
	c := obj.(*resourcev1.ResourceClaim)
	if old != nil {
		return apivalidation.ValidateImmutableField(c.Spec, old.(*resourcev1.ResourceClaim).Spec, field.NewPath("spec"))
	}
	return validateDeviceClaim(&c.Spec.Devices, field.NewPath("spec", "devices"))
}

func validateResourceClaimTemplate(obj, old runtime.Object) field.ErrorList {
	t := obj.(*resourcev1.ResourceClaimTemplate)
	if old != nil {
		return apivalidation.ValidateImmutableField(t.Spec, old.(*resourcev1.ResourceClaimTemplate).Spec, field.NewPath("spec"))
	}
	return validateDeviceClaim(&t.Spec.Spec.Devices, field.NewPath("spec", "spec", "devices"))
}

func resetResourceClaimStatus(obj, old runtime.Object) {
	c := obj.(*resourcev1.ResourceClaim)
	c.Status = resourcev1.ResourceClaimStatus{}
	if old != nil {
		c.Status = *old.(*resourcev1.ResourceClaim).Status.DeepCopy()
	}
}

// validateResourceClaimStatus: at most one allocation result per request
// and a bounded list of consumers, each named by a resource and a UID.
func validateResourceClaimStatus(obj, _ runtime.Object) field.ErrorList {
	status := &obj.(*resourcev1.ResourceClaim).Status
	p := field.NewPath("status", "reservedFor")
	if len(status.ReservedFor) > resourcev1.ResourceClaimReservedForMaxSize {
		return field.ErrorList{field.TooMany(p, len(status.ReservedFor), resourcev1.ResourceClaimReservedForMaxSize)}
	}
	var errs field.ErrorList
	for i, ref := range status.ReservedFor {
		if ref.Resource == "" {
			errs = append(errs, field.Required(p.Index(i).Child("resource"), ""))
		}
		if ref.Name == "" {
			errs = append(errs, field.Required(p.Index(i).Child("name"), ""))
		}
		if ref.UID == "" {
			errs = append(errs, field.Required(p.Index(i).Child("uid"), ""))
		}
	}
	if len(status.ReservedFor) > 0 && status.Allocation == nil {
		errs = append(errs, field.Forbidden(p, "may not be specified when `allocated` is not set"))
	}
	return errs
}

func validateDeviceClaim(d *resourcev1.DeviceClaim, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]sets.Set[string]{}
	rp := p.Child("requests")
	if len(d.Requests) > resourcev1.DeviceRequestsMaxSize {
		errs = append(errs, field.TooMany(rp, len(d.Requests), resourcev1.DeviceRequestsMaxSize))
	} else {
		for i := range d.Requests {
			r := &d.Requests[i]
			errs = append(errs, validateDeviceRequest(r, rp.Index(i))...)
			if _, dup := names[r.Name]; dup {
				errs = append(errs, field.Duplicate(rp.Index(i), r.Name))
			}
			subs := sets.New[string]()
			for _, s := range r.FirstAvailable {
				subs.Insert(s.Name)
			}
			names[r.Name] = subs
		}
	}
	if len(d.Constraints) > resourcev1.DeviceConstraintsMaxSize {
		errs = append(errs, field.TooMany(p.Child("constraints"), len(d.Constraints), resourcev1.DeviceConstraintsMaxSize))
	} else {
		for i, c := range d.Constraints {
			cp := p.Child("constraints").Index(i)
			errs = append(errs, validateRequestRefs(c.Requests, names, cp.Child("requests"))...)
			if c.MatchAttribute == nil && c.DistinctAttribute == nil {
				errs = append(errs, field.Required(cp, "exactly one of \"matchAttribute\" or \"distinctAttribute\" is required, but multiple fields are set"))
			}
		}
	}
	if len(d.Config) > resourcev1.DeviceConfigMaxSize {
		errs = append(errs, field.TooMany(p.Child("config"), len(d.Config), resourcev1.DeviceConfigMaxSize))
	} else {
		for i := range d.Config {
			cp := p.Child("config").Index(i)
			errs = append(errs, validateRequestRefs(d.Config[i].Requests, names, cp.Child("requests"))...)
			errs = append(errs, validateDeviceConfiguration(&d.Config[i].DeviceConfiguration, cp)...)
		}
	}
	return errs
}

const requestRefMessage = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"

// validateRequestRefs checks that each name is a request of the claim, or
// a request and one of its alternatives as REQUEST/SUBREQUEST.
func validateRequestRefs(refs []string, names map[string]sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, ref := range refs {
		ip := p.Index(i)
		parts := strings.Split(ref, "/")
		if len(parts) > 2 {
			errs = append(errs, field.Invalid(ip, ref, requestRefMessage))
			continue
		}
		for _, part := range parts {
			errs = append(errs, invalidEach(ip, part, validation.IsDNS1123Label(part))...)
		}
		subs, ok := names[parts[0]]
		if !ok || len(parts) == 2 && !subs.Has(parts[1]) {
			errs = append(errs, field.Invalid(ip, ref, requestRefMessage))
		}
		if seen.Has(ref) {
			errs = append(errs, field.Duplicate(ip, ref))
		}
		seen.Insert(ref)
	}
	return errs
}

func validateDeviceRequest(r *resourcev1.DeviceRequest, p *field.Path) field.ErrorList {
	errs := invalidEach(p.Child("name"), r.Name, validation.IsDNS1123Label(r.Name))
	switch {
	case r.Exactly == nil && len(r.FirstAvailable) == 0:
		errs = append(errs, field.Required(p, "exactly one of `exactly` or `firstAvailable` is required"))
	case r.Exactly != nil && len(r.FirstAvailable) > 0:
		errs = append(errs, field.Invalid(p, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
	case r.Exactly != nil:
		e := r.Exactly
		errs = append(errs, validateDeviceSelection(e.DeviceClassName, e.Selectors, e.AllocationMode, e.Count, e.Tolerations, p.Child("exactly"))...)
	case len(r.FirstAvailable) > resourcev1.FirstAvailableDeviceRequestMaxSize:
		errs = append(errs, field.TooMany(p.Child("firstAvailable"), len(r.FirstAvailable), resourcev1.FirstAvailableDeviceRequestMaxSize))
	default:
		seen := sets.New[string]()
		for i, s := range r.FirstAvailable {
			sp := p.Child("firstAvailable").Index(i)
			errs = append(errs, invalidEach(sp.Child("name"), s.Name, validation.IsDNS1123Label(s.Name))...)
			errs = append(errs, validateDeviceSelection(s.DeviceClassName, s.Selectors, s.AllocationMode, s.Count, s.Tolerations, sp)...)
			if seen.Has(s.Name) {
				errs = append(errs, field.Duplicate(sp, s.Name))
			}
			seen.Insert(s.Name)
		}
	}
	return errs
}

// validateDeviceSelection checks what an exact request and an alternative
// share: the class, the selectors, the allocation mode with its count and
// the tolerations.
func validateDeviceSelection(class string, selectors []resourcev1.DeviceSelector, mode resourcev1.DeviceAllocationMode, count int64,
	tolerations []resourcev1.DeviceToleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if class == "" {
		errs = append(errs, field.Required(p.Child("deviceClassName"), ""))
	} else {
		errs = append(errs, invalidEach(p.Child("deviceClassName"), class, validation.IsDNS1123Subdomain(class))...)
	}
	errs = append(errs, validateSelectors(selectors, p.Child("selectors"))...)
	switch mode {
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			errs = append(errs, field.Invalid(p.Child("count"), count, fmt.Sprintf("must not be specified when allocationMode is '%s'", mode)))
		}
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			errs = append(errs, field.Invalid(p.Child("count"), count, "must be greater than zero"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("allocationMode"), mode,
			[]resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount}))
	}
	for i, t := range tolerations {
		errs = append(errs, validateToleration(&t, p.Child("tolerations").Index(i))...)
	}
	return errs
}

var taintEffects = []resourcev1.DeviceTaintEffect{resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNone}

func validateToleration(t *resourcev1.DeviceToleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Key != "" {
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
	}
	switch t.Operator {
	case resourcev1.DeviceTolerationOpExists:
		if t.Value != "" {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be empty for operator `Exists`"))
		}
	case resourcev1.DeviceTolerationOpEqual:
		errs = append(errs, invalidEach(p.Child("value"), t.Value, validation.IsValidLabelValue(t.Value))...)
	case "":
		errs = append(errs, field.Required(p.Child("operator"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator,
			[]resourcev1.DeviceTolerationOperator{resourcev1.DeviceTolerationOpEqual, resourcev1.DeviceTolerationOpExists}))
	}
	if t.Effect != "" && !isTaintEffect(t.Effect) {
		errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
	}
	return errs
}

func isTaintEffect(e resourcev1.DeviceTaintEffect) bool {
	for _, known := range taintEffects {
		if e == known {
			return true
		}
	}
	return false
}

// validateTaint: a label key, a label value if any, and a known effect,
// checked when the effect is new.
func validateTaint(t, old *resourcev1.DeviceTaint, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelName(t.Key, p.Child("key"))
	if t.Value != "" {
		errs = append(errs, invalidEach(p.Child("value"), t.Value, validation.IsValidLabelValue(t.Value))...)
	}
	if old == nil || old.Effect != t.Effect {
		switch {
		case t.Effect == "":
			errs = append(errs, field.Required(p.Child("effect"), ""))
		case !isTaintEffect(t.Effect):
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
		}
	}
	return errs
}

// defaultDeviceTaintRule stamps a taint without a time with now, to the
// second.
func defaultDeviceTaintRule(obj runtime.Object) {
	t := &obj.(*resourcev1.DeviceTaintRule).Spec.Taint
	if t.TimeAdded == nil {
		t.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
	}
}

// prepareDeviceTaintRule: a changed effect is a new taint, added now
// unless the writer gave it a time of its own.
func prepareDeviceTaintRule(obj, old runtime.Object) {
	if old == nil {
		return
	}
	t, o := &obj.(*resourcev1.DeviceTaintRule).Spec.Taint, &old.(*resourcev1.DeviceTaintRule).Spec.Taint
	if t.Effect != o.Effect && t.TimeAdded.Equal(o.TimeAdded) {
		t.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
	}
}

func validateDeviceTaintRule(obj, old runtime.Object) field.ErrorList {
	spec := &obj.(*resourcev1.DeviceTaintRule).Spec
	var oldTaint *resourcev1.DeviceTaint
	if old != nil {
		oldTaint = &old.(*resourcev1.DeviceTaintRule).Spec.Taint
	}
	var errs field.ErrorList
	if s := spec.DeviceSelector; s != nil {
		p := field.NewPath("spec", "deviceSelector")
		if s.Driver != nil {
			errs = append(errs, validateDriverName(*s.Driver, p.Child("driver"))...)
		}
		if s.Pool != nil {
			errs = append(errs, validatePoolName(*s.Pool, p.Child("pool"))...)
		}
		if s.Device != nil {
			errs = append(errs, invalidEach(p.Child("device"), *s.Device, validation.IsDNS1123Label(*s.Device))...)
		}
	}
	return append(errs, validateTaint(&spec.Taint, oldTaint, field.NewPath("spec", "taint"))...)
}

func resetDeviceTaintRuleStatus(obj, old runtime.Object) {
	r := obj.(*resourcev1.DeviceTaintRule)
	r.Status = resourcev1.DeviceTaintRuleStatus{}
	if old != nil {
		r.Status = *old.(*resourcev1.DeviceTaintRule).Status.DeepCopy()
	}
}

func validateDeviceTaintRuleStatus(obj, _ runtime.Object) field.ErrorList {
	conds := obj.(*resourcev1.DeviceTaintRule).Status.Conditions
	p := field.NewPath("status", "conditions")
	errs := metav1validation.ValidateConditions(conds, p)
	if len(conds) > resourcev1.DeviceTaintRuleStatusMaxConditions {
		errs = append(errs, field.TooMany(p, len(conds), resourcev1.DeviceTaintRuleStatusMaxConditions))
	}
	return errs
}
