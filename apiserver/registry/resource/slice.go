package resource

import (
	"fmt"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const nodeChoice = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"

// validateResourceSlice: the driver and pool, exactly one way of naming
// the nodes, the devices within their limit; on an update the driver,
// the pool's name and the node never change (D.18).
func validateResourceSlice(obj, old runtime.Object) field.ErrorList {
	spec := &obj.(*resourcev1.ResourceSlice).Spec
	p := field.NewPath("spec")
	errs := validateDriverName(spec.Driver, p.Child("driver"))
	errs = append(errs, validatePoolName(spec.Pool.Name, p.Child("pool", "name"))...)
	if spec.Pool.ResourceSliceCount <= 0 {
		errs = append(errs, field.Invalid(p.Child("pool", "resourceSliceCount"), spec.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	if spec.Pool.Generation < 0 {
		errs = append(errs, field.Invalid(p.Child("pool", "generation"), spec.Pool.Generation, "must be greater than or equal to zero"))
	}
	if old != nil {
		o := &old.(*resourcev1.ResourceSlice).Spec
		errs = append(errs, apivalidation.ValidateImmutableField(spec.Pool.Name, o.Pool.Name, p.Child("pool", "name"))...)
		errs = append(errs, apivalidation.ValidateImmutableField(spec.Driver, o.Driver, p.Child("driver"))...)
		errs = append(errs, apivalidation.ValidateImmutableField(spec.NodeName, o.NodeName, p.Child("nodeName"))...)
	}
	errs = append(errs, validateNodeChoice(spec, p)...)
	if spec.SharedCounters != nil && spec.Devices != nil {
		errs = append(errs, field.Invalid(p, "", "only one of `sharedCounters` or `devices` is allowed"))
	}
	c := checks{hand: errs}
	validateDevices(&c, spec, p.Child("devices"))
	return c.list()
}

func validateNodeChoice(spec *resourcev1.ResourceSliceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	var set []string
	if n := spec.NodeName; n != nil {
		if *n == "" {
			errs = append(errs, field.Invalid(p.Child("nodeName"), *n, "must be either unset or set to a non-empty string"))
		} else {
			set = append(set, "`nodeName`")
			errs = append(errs, invalidEach(p.Child("nodeName"), *n, apivalidation.NameIsDNSSubdomain(*n, false))...)
		}
	}
	if s := spec.NodeSelector; s != nil {
		set = append(set, "`nodeSelector`")
		if len(s.NodeSelectorTerms) == 0 {
			errs = append(errs, field.Required(p.Child("nodeSelector", "nodeSelectorTerms"), "must have at least one node selector term"))
		}
		if len(s.NodeSelectorTerms) != 1 {
			errs = append(errs, field.Invalid(p.Child("nodeSelector", "nodeSelectorTerms"), s.NodeSelectorTerms, "must have exactly one node selector term"))
		}
	}
	for _, b := range []struct {
		name string
		v    *bool
	}{{"allNodes", spec.AllNodes}, {"perDeviceNodeSelection", spec.PerDeviceNodeSelection}} {
		switch {
		case b.v == nil:
		case *b.v:
			set = append(set, "`"+b.name+"`")
		default:
			errs = append(errs, field.Invalid(p.Child(b.name), false, "must be either unset or set to true"))
		}
	}
	switch len(set) {
	case 0:
		errs = append(errs, field.Required(p, nodeChoice))
	case 1:
	default:
		errs = append(errs, field.Invalid(p, fmt.Sprintf("{%s}", strings.Join(set, ", ")), nodeChoice+", but multiple fields are set"))
	}
	return errs
}

func validateDevices(c *checks, spec *resourcev1.ResourceSliceSpec, p *field.Path) {
	limit := resourcev1.ResourceSliceMaxDevices
	for _, d := range spec.Devices {
		if len(d.Taints) > 0 || len(d.ConsumesCounters) > 0 {
			limit = resourcev1.ResourceSliceMaxDevicesWithAdvancedFeatures
		}
	}
	if len(spec.Devices) > limit {
		c.hand = append(c.hand, field.TooMany(p, len(spec.Devices), limit))
		return
	}
	seen := sets.New[string]()
	perDevice := spec.PerDeviceNodeSelection != nil && *spec.PerDeviceNodeSelection
	for i := range spec.Devices {
		d := &spec.Devices[i]
		dp := p.Index(i)
		c.hand = append(c.hand, invalidEach(dp.Child("name"), d.Name, validation.IsDNS1123Label(d.Name))...)
		if n := len(d.Attributes) + len(d.Capacity); n > resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
			c.hand = append(c.hand, field.Invalid(dp, n, fmt.Sprintf("the total number of attributes and capacities must not exceed %d", resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice)))
		}
		if len(d.Taints) > resourcev1.DeviceTaintsMaxLength {
			c.hand = append(c.hand, field.TooMany(dp.Child("taints"), len(d.Taints), resourcev1.DeviceTaintsMaxLength))
		} else {
			for j := range d.Taints {
				validateTaint(c, &d.Taints[j], nil, dp.Child("taints").Index(j))
			}
		}
		if !perDevice && (d.NodeName != nil || d.NodeSelector != nil || d.AllNodes != nil) {
			c.hand = append(c.hand, field.Invalid(dp, nil, "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
		}
		if seen.Has(d.Name) {
			c.hand = append(c.hand, field.Duplicate(dp, d.Name))
		}
		seen.Insert(d.Name)
	}
}

// resourceSliceWarnings: a driver's name should be lowercase.
func resourceSliceWarnings(obj, _ runtime.Object) []string {
	d := obj.(*resourcev1.ResourceSlice).Spec.Driver
	if d != strings.ToLower(d) {
		return []string{fmt.Sprintf("spec.driver: driver names should be lowercase; %q contains uppercase characters", d)}
	}
	return nil
}
