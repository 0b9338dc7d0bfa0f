package resource

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validate"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// defaultResourceClaim gives each exact request, and each alternative
// of a request, the allocation mode ExactCount and a count of 1, and
// their tolerations the operator Equal.
func defaultResourceClaim(obj runtime.Object) {
	defaultDeviceClaim(&obj.(*resourcev1.ResourceClaim).Spec.Devices)
}

func defaultResourceClaimTemplate(obj runtime.Object) {
	defaultDeviceClaim(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec.Devices)
}

func defaultDeviceClaim(d *resourcev1.DeviceClaim) {
	for i := range d.Requests {
		r := &d.Requests[i]
		if e := r.Exactly; e != nil {
			defaultAllocationMode(&e.AllocationMode, &e.Count)
			defaultTolerations(e.Tolerations)
		}
		for j := range r.FirstAvailable {
			s := &r.FirstAvailable[j]
			defaultAllocationMode(&s.AllocationMode, &s.Count)
			defaultTolerations(s.Tolerations)
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

func defaultTolerations(ts []resourcev1.DeviceToleration) {
	for i := range ts {
		if ts[i].Operator == "" {
			ts[i].Operator = resourcev1.DeviceTolerationOpEqual
		}
	}
}

// validateResourceClaim: the requests on create; afterwards the spec
// never changes, which kube's declared rule reports without the value.
func validateResourceClaim(obj, old runtime.Object) field.ErrorList {
	c := obj.(*resourcev1.ResourceClaim)
	if old != nil {
		if !apiequality.Semantic.DeepEqual(c.Spec, old.(*resourcev1.ResourceClaim).Spec) {
			return field.ErrorList{field.Invalid(field.NewPath("spec"), nil, "field is immutable")}
		}
		return nil
	}
	return validateDeviceClaim(&c.Spec.Devices, field.NewPath("spec", "devices"))
}

// validateResourceClaimTemplate: as a claim's, but the spec that does not
// change is reported with its value, in kube's internal form.
func validateResourceClaimTemplate(obj, old runtime.Object) field.ErrorList {
	t := obj.(*resourcev1.ResourceClaimTemplate)
	if old != nil {
		if o := old.(*resourcev1.ResourceClaimTemplate); !apiequality.Semantic.DeepEqual(t.Spec, o.Spec) {
			return field.ErrorList{field.Invalid(field.NewPath("spec"), goFieldNames{reflect.ValueOf(t.Spec)}, "field is immutable")}
		}
		return nil
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

// validateResourceClaimStatus: a bounded list of consumers, each named by
// a resource and a UID, and only on an allocated claim.
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
	var c checks
	names := map[string]sets.Set[string]{}
	for _, r := range d.Requests {
		subs := sets.New[string]()
		for _, s := range r.FirstAvailable {
			subs.Insert(s.Name)
		}
		names[r.Name] = subs
	}
	rp := p.Child("requests")
	if len(d.Requests) > resourcev1.DeviceRequestsMaxSize {
		c.declared = append(c.declared, field.TooMany(rp, len(d.Requests), resourcev1.DeviceRequestsMaxSize))
	} else {
		c.declared = append(c.declared, duplicates(d.Requests, func(r resourcev1.DeviceRequest) string { return r.Name }, rp)...)
		for i := range d.Requests {
			validateDeviceRequest(&c, &d.Requests[i], rp.Index(i))
		}
	}
	cp := p.Child("constraints")
	if len(d.Constraints) > resourcev1.DeviceConstraintsMaxSize {
		c.declared = append(c.declared, field.TooMany(cp, len(d.Constraints), resourcev1.DeviceConstraintsMaxSize))
	} else {
		for i, con := range d.Constraints {
			validateRequestRefs(&c, con.Requests, names, cp.Index(i).Child("requests"))
			switch {
			case con.MatchAttribute != nil:
				c.declared = append(c.declared, validate.ResourceFullyQualifiedName(context.Background(), operation.Operation{}, cp.Index(i).Child("matchAttribute"), con.MatchAttribute, nil)...)
			case con.DistinctAttribute != nil:
				c.declared = append(c.declared, validate.ResourceFullyQualifiedName(context.Background(), operation.Operation{}, cp.Index(i).Child("distinctAttribute"), con.DistinctAttribute, nil)...)
			default:
				c.hand = append(c.hand, field.Required(cp.Index(i), "exactly one of \"matchAttribute\" or \"distinctAttribute\" is required, but multiple fields are set"))
			}
		}
	}
	fp := p.Child("config")
	if len(d.Config) > resourcev1.DeviceConfigMaxSize {
		c.declared = append(c.declared, field.TooMany(fp, len(d.Config), resourcev1.DeviceConfigMaxSize))
	} else {
		for i := range d.Config {
			validateRequestRefs(&c, d.Config[i].Requests, names, fp.Index(i).Child("requests"))
			validateDeviceConfiguration(&c, &d.Config[i].DeviceConfiguration, fp.Index(i))
		}
	}
	return c.list()
}

// duplicates reports each item of list whose key an earlier item has, as
// kube's declared rule of a list keyed by name does: with the whole item.
func duplicates[T any](list []T, key func(T) string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, item := range list {
		if k := key(item); seen.Has(k) {
			errs = append(errs, field.Duplicate(p.Index(i), item))
		} else {
			seen.Insert(k)
		}
	}
	return errs
}

const requestRefMessage = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"

// validateRequestRefs checks that each name is a request of the claim, or
// a request and one of its alternatives as REQUEST/SUBREQUEST.
func validateRequestRefs(c *checks, refs []string, names map[string]sets.Set[string], p *field.Path) {
	if len(refs) > resourcev1.DeviceRequestsMaxSize {
		c.declared = append(c.declared, field.TooMany(p, len(refs), resourcev1.DeviceRequestsMaxSize))
		return
	}
	c.declared = append(c.declared, duplicates(refs, func(s string) string { return s }, p)...)
	for i, ref := range refs {
		ip := p.Index(i)
		parts := strings.Split(ref, "/")
		if len(parts) > 2 {
			c.hand = append(c.hand, field.Invalid(ip, ref, requestRefMessage))
			continue
		}
		for _, part := range parts {
			c.hand = append(c.hand, invalidEach(ip, part, validation.IsDNS1123Label(part))...)
		}
		if subs, ok := names[parts[0]]; !ok || len(parts) == 2 && !subs.Has(parts[1]) {
			c.hand = append(c.hand, field.Invalid(ip, ref, requestRefMessage))
		}
	}
}

func validateDeviceRequest(c *checks, r *resourcev1.DeviceRequest, p *field.Path) {
	c.hand = append(c.hand, invalidEach(p.Child("name"), r.Name, validation.IsDNS1123Label(r.Name))...)
	switch {
	case r.Exactly == nil && len(r.FirstAvailable) == 0:
		c.hand = append(c.hand, field.Required(p, "exactly one of `exactly` or `firstAvailable` is required"))
	case r.Exactly != nil && len(r.FirstAvailable) > 0:
		c.hand = append(c.hand, field.Invalid(p, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
	case r.Exactly != nil:
		e := r.Exactly
		validateExactClass(c, e.DeviceClassName, p.Child("exactly", "deviceClassName"))
		validateDeviceSelection(c, e.Selectors, e.AllocationMode, e.Count, e.Tolerations, p.Child("exactly"))
	case len(r.FirstAvailable) > resourcev1.FirstAvailableDeviceRequestMaxSize:
		c.declared = append(c.declared, field.TooMany(p.Child("firstAvailable"), len(r.FirstAvailable), resourcev1.FirstAvailableDeviceRequestMaxSize))
	default:
		fp := p.Child("firstAvailable")
		c.declared = append(c.declared, duplicates(r.FirstAvailable, func(s resourcev1.DeviceSubRequest) string { return s.Name }, fp)...)
		for i, s := range r.FirstAvailable {
			sp := fp.Index(i)
			c.hand = append(c.hand, invalidEach(sp.Child("name"), s.Name, validation.IsDNS1123Label(s.Name))...)
			if s.DeviceClassName == "" {
				c.declared = append(c.declared, field.Required(sp.Child("deviceClassName"), ""))
			} else {
				c.declared = append(c.declared, validate.LongName(context.Background(), operation.Operation{}, sp.Child("deviceClassName"), &s.DeviceClassName, nil)...)
			}
			validateDeviceSelection(c, s.Selectors, s.AllocationMode, s.Count, s.Tolerations, sp)
		}
	}
}

func validateExactClass(c *checks, class string, p *field.Path) {
	if class == "" {
		c.hand = append(c.hand, field.Required(p, ""))
		return
	}
	c.hand = append(c.hand, invalidEach(p, class, validation.IsDNS1123Subdomain(class))...)
}

// validateDeviceSelection checks what an exact request and an alternative
// share: the selectors, the allocation mode with its count and the
// tolerations.
func validateDeviceSelection(c *checks, selectors []resourcev1.DeviceSelector, mode resourcev1.DeviceAllocationMode, count int64,
	tolerations []resourcev1.DeviceToleration, p *field.Path) {
	validateSelectors(c, selectors, p.Child("selectors"))
	switch mode {
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			c.hand = append(c.hand, field.Invalid(p.Child("count"), count, fmt.Sprintf("must not be specified when allocationMode is '%s'", mode)))
		}
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			c.hand = append(c.hand, field.Invalid(p.Child("count"), count, "must be greater than zero"))
		}
	default:
		c.declared = append(c.declared, field.NotSupported(p.Child("allocationMode"), mode,
			[]resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount}))
	}
	tp := p.Child("tolerations")
	if len(tolerations) > resourcev1.DeviceTolerationsMaxLength {
		c.declared = append(c.declared, field.TooMany(tp, len(tolerations), resourcev1.DeviceTolerationsMaxLength))
		return
	}
	for i := range tolerations {
		validateToleration(c, &tolerations[i], tp.Index(i))
	}
}

// validateToleration: the value against the operator (by hand); the key,
// the operator and the effect (declared).
func validateToleration(c *checks, t *resourcev1.DeviceToleration, p *field.Path) {
	if t.Key != "" {
		c.declared = append(c.declared, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
	}
	switch t.Operator {
	case resourcev1.DeviceTolerationOpExists:
		if t.Value != "" {
			c.hand = append(c.hand, field.Invalid(p.Child("value"), t.Value, "must be empty for operator `Exists`"))
		}
	case resourcev1.DeviceTolerationOpEqual:
		c.hand = append(c.hand, invalidEach(p.Child("value"), t.Value, validation.IsValidLabelValue(t.Value))...)
	case "":
		c.declared = append(c.declared, field.Required(p.Child("operator"), ""))
	default:
		c.declared = append(c.declared, field.NotSupported(p.Child("operator"), t.Operator,
			[]resourcev1.DeviceTolerationOperator{resourcev1.DeviceTolerationOpEqual, resourcev1.DeviceTolerationOpExists}))
	}
	if t.Effect != "" && !isTaintEffect(t.Effect) {
		c.declared = append(c.declared, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
	}
}
