package resource

import (
	"context"
	"slices"
	"strings"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validate"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rules here are kube-apiserver's for resource.k8s.io/v1 (D.18).
// Some of kube's rules are written by hand and some declared on the API
// types; a 422 lists the errors of the hand-written ones first, then
// the declared ones in the order of the fields, each list's duplicates
// before the list's items.

// checks collects one object's errors in that order.
type checks struct{ hand, declared field.ErrorList }

func (c *checks) list() field.ErrorList { return append(c.hand, c.declared...) }

// validateDeviceClass: the selectors and the opaque configurations, each
// list within its limit, and an extended resource name if one is given.
func validateDeviceClass(obj, _ runtime.Object) field.ErrorList {
	spec := &obj.(*resourcev1.DeviceClass).Spec
	p := field.NewPath("spec")
	var c checks
	validateSelectors(&c, spec.Selectors, p.Child("selectors"))
	if len(spec.Config) > resourcev1.DeviceConfigMaxSize {
		c.declared = append(c.declared, field.TooMany(p.Child("config"), len(spec.Config), resourcev1.DeviceConfigMaxSize))
	} else {
		for i := range spec.Config {
			validateDeviceConfiguration(&c, &spec.Config[i].DeviceConfiguration, p.Child("config").Index(i))
		}
	}
	if n := spec.ExtendedResourceName; n != nil {
		c.declared = append(c.declared, validate.ExtendedResourceName(context.Background(), operation.Operation{}, p.Child("extendedResourceName"), n, nil)...)
	}
	return c.list()
}

func validateSelectors(c *checks, selectors []resourcev1.DeviceSelector, p *field.Path) {
	if len(selectors) > resourcev1.DeviceSelectorsMaxSize {
		c.declared = append(c.declared, field.TooMany(p, len(selectors), resourcev1.DeviceSelectorsMaxSize))
		return
	}
	for i, s := range selectors {
		if s.CEL == nil {
			c.hand = append(c.hand, field.Required(p.Index(i).Child("cel"), ""))
			continue
		}
		c.hand = append(c.hand, validateCELExpression(s.CEL.Expression, p.Index(i).Child("cel", "expression"))...)
	}
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

// validateDeviceConfiguration: an opaque configuration, its parameters
// (by hand) and its driver's name (declared).
func validateDeviceConfiguration(c *checks, dc *resourcev1.DeviceConfiguration, p *field.Path) {
	if dc.Opaque == nil {
		c.hand = append(c.hand, field.Required(p.Child("opaque"), ""))
		return
	}
	p = p.Child("opaque")
	switch raw := dc.Opaque.Parameters.Raw; {
	case len(raw) == 0:
		c.hand = append(c.hand, field.Required(p.Child("parameters"), ""))
	case len(raw) > resourcev1.OpaqueParametersMaxLength:
		c.hand = append(c.hand, field.TooLong(p.Child("parameters"), "", resourcev1.OpaqueParametersMaxLength))
	}
	d, dp := dc.Opaque.Driver, p.Child("driver")
	switch {
	case d == "":
		c.declared = append(c.declared, field.Required(dp, ""))
	case len(d) > resourcev1.DriverNameMaxLength:
		c.declared = append(c.declared, field.TooLong(dp, "", resourcev1.DriverNameMaxLength))
	}
	if d != "" {
		// A driver's name may have upper case, as a CSI driver's; kube's
		// declared rule for it is this format.
		//lint:ignore SA1019 the format kube-apiserver checks a driver's name by
		c.declared = append(c.declared, invalidEach(dp, d, content.IsDNS1123SubdomainCaseless(d))...)
	}
}

// validateDriverName is the hand-written rule of a CSI driver's name,
// which a DRA driver's follows.
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

var taintEffects = []resourcev1.DeviceTaintEffect{resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNone}

func isTaintEffect(e resourcev1.DeviceTaintEffect) bool {
	return slices.Contains(taintEffects, e)
}

// validateTaint: a label key and a label value if any (by hand), and a
// known effect (declared), checked when the effect is new.
func validateTaint(c *checks, t, old *resourcev1.DeviceTaint, p *field.Path) {
	c.hand = append(c.hand, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
	if t.Value != "" {
		c.hand = append(c.hand, invalidEach(p.Child("value"), t.Value, validation.IsValidLabelValue(t.Value))...)
	}
	if old == nil || old.Effect != t.Effect {
		switch {
		case t.Effect == "":
			c.declared = append(c.declared, field.Required(p.Child("effect"), ""))
		case !isTaintEffect(t.Effect):
			c.declared = append(c.declared, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
		}
	}
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
	var c checks
	if s := spec.DeviceSelector; s != nil {
		p := field.NewPath("spec", "deviceSelector")
		if s.Driver != nil {
			c.hand = append(c.hand, validateDriverName(*s.Driver, p.Child("driver"))...)
		}
		if s.Pool != nil {
			c.hand = append(c.hand, validatePoolName(*s.Pool, p.Child("pool"))...)
		}
		if s.Device != nil {
			c.hand = append(c.hand, invalidEach(p.Child("device"), *s.Device, validation.IsDNS1123Label(*s.Device))...)
		}
	}
	validateTaint(&c, &spec.Taint, oldTaint, field.NewPath("spec", "taint"))
	return c.list()
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
