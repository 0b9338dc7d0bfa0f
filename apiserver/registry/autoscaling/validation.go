package autoscaling

import (
	"fmt"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	// maxPeriodSeconds bounds a scaling policy's period.
	maxPeriodSeconds = 1800
	// maxStabilizationWindowSeconds bounds a rule's stabilization window.
	maxStabilizationWindowSeconds = 3600
)

// refOptions say what a reference's apiVersion may be.
type refOptions struct {
	allowEmptyGroup, allowInvalid bool
}

// options are what kube's strategy lets an autoscaler's spec hold.
type options struct {
	minReplicas       int32
	target, objectRef refOptions
}

// specOptions: minReplicas may be 0 (kube's HPAScaleToZero is on by
// default); a target of an unchanged kind and apiVersion keeps whatever
// apiVersion it had, a ReplicationController needs no group; object
// metrics may name the core group, and any apiVersion when an old one
// was already invalid.
func specOptions(hpa, old *autoscalingv2.HorizontalPodAutoscaler) options {
	opts := options{minReplicas: 0, objectRef: refOptions{allowEmptyGroup: true}}
	ref := hpa.Spec.ScaleTargetRef
	switch {
	case old != nil && old.Spec.ScaleTargetRef.APIVersion == ref.APIVersion && old.Spec.ScaleTargetRef.Kind == ref.Kind:
		opts.target.allowInvalid = true
	case ref.Kind == "ReplicationController":
		opts.target.allowEmptyGroup = true
	}
	if old != nil {
		for _, m := range old.Spec.Metrics {
			if m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil && apiVersionErr(m.Object.DescribedObject.APIVersion, opts.objectRef) != nil {
				opts.objectRef.allowInvalid = true
				break
			}
		}
	}
	return opts
}

func validateSpec(s *autoscalingv2.HorizontalPodAutoscalerSpec, path *field.Path, opts options) field.ErrorList {
	var errs field.ErrorList
	if s.MinReplicas != nil && s.MaxReplicas < *s.MinReplicas {
		errs = append(errs, field.Invalid(path.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	errs = append(errs, validateRef(s.ScaleTargetRef, path.Child("scaleTargetRef"), opts.target)...)
	errs = append(errs, validateMetrics(s.Metrics, path.Child("metrics"), s.MinReplicas, opts.objectRef)...)
	if b := s.Behavior; b != nil {
		errs = append(errs, validateRules(b.ScaleUp, path.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateRules(b.ScaleDown, path.Child("behavior", "scaleDown"))...)
	}
	// kube's declarative validation checks the bounds, and its errors
	// come after the others.
	if s.MinReplicas != nil && *s.MinReplicas < opts.minReplicas {
		errs = append(errs, field.Invalid(path.Child("minReplicas"), *s.MinReplicas, fmt.Sprintf("must be greater than or equal to %d", opts.minReplicas)))
	}
	if s.MaxReplicas == 0 {
		errs = append(errs, field.Required(path.Child("maxReplicas"), ""))
	} else if s.MaxReplicas < 0 {
		errs = append(errs, field.Invalid(path.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to 1"))
	}
	return errs
}

func validateRef(ref autoscalingv2.CrossVersionObjectReference, path *field.Path, opts refOptions) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct{ name, v string }{{"kind", ref.Kind}, {"name", ref.Name}} {
		if f.v == "" {
			errs = append(errs, field.Required(path.Child(f.name), ""))
			continue
		}
		for _, msg := range content.IsPathSegmentName(f.v) {
			errs = append(errs, field.Invalid(path.Child(f.name), f.v, msg))
		}
	}
	if err := apiVersionErr(ref.APIVersion, opts); err != nil {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), ref.APIVersion, err.Error()))
	}
	return errs
}

func apiVersionErr(apiVersion string, opts refOptions) error {
	if opts.allowInvalid {
		return nil
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return err
	}
	if !opts.allowEmptyGroup && gv.Group == "" {
		return fmt.Errorf("apiVersion must specify API group")
	}
	return nil
}

var metricSourceTypes = []string{"ContainerResource", "External", "Object", "Pods", "Resource"}

func validateMetrics(metrics []autoscalingv2.MetricSpec, path *field.Path, minReplicas *int32, opts refOptions) field.ErrorList {
	var errs field.ErrorList
	scalesToZero := false
	for i, m := range metrics {
		errs = append(errs, validateMetric(m, path.Index(i), opts)...)
		scalesToZero = scalesToZero || m.Type == autoscalingv2.ObjectMetricSourceType || m.Type == autoscalingv2.ExternalMetricSourceType
	}
	if minReplicas != nil && *minReplicas == 0 && !scalesToZero {
		errs = append(errs, field.Forbidden(path, "must specify at least one Object or External metric to support scaling to zero replicas"))
	}
	return errs
}

// validateMetric: a known type, whose source alone is given and valid.
func validateMetric(m autoscalingv2.MetricSpec, path *field.Path, opts refOptions) field.ErrorList {
	var errs field.ErrorList
	if m.Type == "" {
		errs = append(errs, field.Required(path.Child("type"), "must specify a metric source type"))
	}
	if !slices.Contains(metricSourceTypes, string(m.Type)) {
		errs = append(errs, field.NotSupported(path.Child("type"), m.Type, metricSourceTypes))
	}
	sources := []struct {
		name    string
		typ     autoscalingv2.MetricSourceType
		present bool
		check   func() field.ErrorList
	}{
		{"object", autoscalingv2.ObjectMetricSourceType, m.Object != nil, func() field.ErrorList { return validateObject(m.Object, path.Child("object"), opts) }},
		{"external", autoscalingv2.ExternalMetricSourceType, m.External != nil, func() field.ErrorList { return validateExternal(m.External, path.Child("external")) }},
		{"pods", autoscalingv2.PodsMetricSourceType, m.Pods != nil, func() field.ErrorList { return validatePods(m.Pods, path.Child("pods")) }},
		{"resource", autoscalingv2.ResourceMetricSourceType, m.Resource != nil, func() field.ErrorList {
			return validateResourceTarget(m.Resource.Name, m.Resource.Target, path.Child("resource"), false)
		}},
		{"containerResource", autoscalingv2.ContainerResourceMetricSourceType, m.ContainerResource != nil, func() field.ErrorList {
			errs := validateContainerResourceName(m.ContainerResource.Name, m.ContainerResource.Container, path.Child("containerResource"))
			return append(errs, validateResourceTarget(m.ContainerResource.Name, m.ContainerResource.Target, path.Child("containerResource"), true)...)
		}},
	}
	var present []string
	expected := ""
	for _, src := range sources {
		if src.present {
			present = append(present, src.name)
			if len(present) == 1 {
				errs = append(errs, src.check()...)
			}
		}
		if m.Type == src.typ {
			expected = src.name
			if !src.present {
				errs = append(errs, field.Required(path.Child(src.name), "must populate information for the given metric source"))
			}
		}
	}
	// kube reports an unknown type twice, and its error list drops the
	// second, the same error.
	if len(present) != 1 {
		for _, name := range present {
			if name != expected {
				errs = append(errs, field.Forbidden(path.Child(name), "must populate the given metric source only"))
			}
		}
	}
	return errs
}

func validateObject(src *autoscalingv2.ObjectMetricSource, path *field.Path, opts refOptions) field.ErrorList {
	errs := validateRef(src.DescribedObject, path.Child("describedObject"), opts)
	errs = append(errs, validateMetricName(src.Metric.Name, path.Child("metric", "name"))...)
	errs = append(errs, validateTarget(src.Target, path.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(path.Child("target", "averageValue"), "must set either a target value or averageValue"))
	}
	return errs
}

func validateExternal(src *autoscalingv2.ExternalMetricSource, path *field.Path) field.ErrorList {
	errs := validateMetricName(src.Metric.Name, path.Child("metric", "name"))
	errs = append(errs, validateTarget(src.Target, path.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(path.Child("target", "averageValue"), "must set either a target value for metric or a per-pod target"))
	}
	if src.Target.Value != nil && src.Target.AverageValue != nil {
		errs = append(errs, field.Forbidden(path.Child("target", "value"), "may not set both a target value for metric and a per-pod target"))
	}
	return errs
}

func validatePods(src *autoscalingv2.PodsMetricSource, path *field.Path) field.ErrorList {
	errs := validateMetricName(src.Metric.Name, path.Child("metric", "name"))
	errs = append(errs, validateTarget(src.Target, path.Child("target"))...)
	if src.Target.AverageValue == nil {
		errs = append(errs, field.Required(path.Child("target", "averageValue"), "must specify a positive target averageValue"))
	}
	return errs
}

// validateResourceTarget checks a resource or container resource metric's
// name (for a resource; a container's is checked apart) and target.
func validateResourceTarget(name corev1.ResourceName, t autoscalingv2.MetricTarget, path *field.Path, container bool) field.ErrorList {
	var errs field.ErrorList
	if !container && name == "" {
		errs = append(errs, field.Required(path.Child("name"), "must specify a resource name"))
	}
	errs = append(errs, validateTarget(t, path.Child("target"))...)
	if t.AverageUtilization == nil && t.AverageValue == nil {
		errs = append(errs, field.Required(path.Child("target", "averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	if t.AverageUtilization != nil && t.AverageValue != nil {
		errs = append(errs, field.Forbidden(path.Child("target", "averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return errs
}

// standardContainerResources are the resources a container may name
// without a domain.
var standardContainerResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}

func validateContainerResourceName(name corev1.ResourceName, container string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case name == "":
		errs = append(errs, field.Required(path.Child("name"), "must specify a resource name"))
	case len(validation.IsQualifiedName(string(name))) > 0:
		for _, msg := range validation.IsQualifiedName(string(name)) {
			errs = append(errs, field.Invalid(path.Child("name"), name, msg))
		}
	case !strings.Contains(string(name), "/") && !slices.Contains(standardContainerResources, name) && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		errs = append(errs, field.Invalid(path.Child("name"), name, "must be a standard resource for containers"))
	}
	if container == "" {
		errs = append(errs, field.Required(path.Child("container"), "must specify a container"))
	} else {
		for _, msg := range validation.IsDNS1123Label(container) {
			errs = append(errs, field.Invalid(path.Child("container"), container, msg))
		}
	}
	return errs
}

func validateTarget(t autoscalingv2.MetricTarget, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Type == "" {
		errs = append(errs, field.Required(path.Child("type"), "must specify a metric target type"))
	}
	if t.Type != autoscalingv2.UtilizationMetricType && t.Type != autoscalingv2.ValueMetricType && t.Type != autoscalingv2.AverageValueMetricType {
		errs = append(errs, field.Invalid(path.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(path.Child("value"), t.Value, "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(path.Child("averageValue"), t.AverageValue, "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(path.Child("averageUtilization"), t.AverageUtilization, "must be greater than 0"))
	}
	return errs
}

func validateMetricName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "must specify a metric name")}
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

var (
	selectPolicies = []string{"Disabled", "Max", "Min"}
	policyTypes    = []string{"Percent", "Pods"}
)

// validateRules: a window within an hour, a known select policy, at
// least one policy, each valid, and a tolerance not negative.
func validateRules(r *autoscalingv2.HPAScalingRules, path *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil && *w < 0 {
		errs = append(errs, field.Invalid(path.Child("stabilizationWindowSeconds"), w, "must be greater than or equal to zero"))
	}
	if w := r.StabilizationWindowSeconds; w != nil && *w > maxStabilizationWindowSeconds {
		errs = append(errs, field.Invalid(path.Child("stabilizationWindowSeconds"), w, fmt.Sprintf("must be less than or equal to %d", maxStabilizationWindowSeconds)))
	}
	if p := r.SelectPolicy; p != nil && !slices.Contains(selectPolicies, string(*p)) {
		errs = append(errs, field.NotSupported(path.Child("selectPolicy"), p, selectPolicies))
	}
	policies := path.Child("policies")
	if len(r.Policies) == 0 {
		errs = append(errs, field.Required(policies, "must specify at least one Policy"))
	}
	for i, p := range r.Policies {
		pp := policies.Index(i)
		if !slices.Contains(policyTypes, string(p.Type)) {
			errs = append(errs, field.NotSupported(pp.Child("type"), p.Type, policyTypes))
		}
		if p.Value <= 0 {
			errs = append(errs, field.Invalid(pp.Child("value"), p.Value, "must be greater than zero"))
		}
		if p.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(pp.Child("periodSeconds"), p.PeriodSeconds, "must be greater than zero"))
		}
		if p.PeriodSeconds > maxPeriodSeconds {
			errs = append(errs, field.Invalid(pp.Child("periodSeconds"), p.PeriodSeconds, fmt.Sprintf("must be less than or equal to %d", maxPeriodSeconds)))
		}
	}
	if t := r.Tolerance; t != nil && t.Sign() < 0 {
		errs = append(errs, field.Invalid(path.Child("tolerance"), t.String(), "must be greater than or equal to 0"))
	}
	return errs
}
