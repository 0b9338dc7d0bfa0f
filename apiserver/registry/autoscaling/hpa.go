// Package autoscaling is the autoscaling API group's
// HorizontalPodAutoscalers, served in autoscaling/v2 and autoscaling/v1
// (D.15): one object, stored in v2 and converted to v1 as it is read,
// what v1 has no field for kept in annotations.
package autoscaling

import (
	"fmt"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	v2 := hpaResource(autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"))
	v2.Defaults = defaultV2
	v1 := hpaResource(autoscalingv1.SchemeGroupVersion.WithResource("horizontalpodautoscalers"))
	v1.Defaults = defaultV1
	v1.GenerationChanged = func(obj, old runtime.Object) bool {
		return !apiequality.Semantic.DeepEqual(asV2(obj).Spec, asV2(old).Spec)
	}
	return []*apiserver.Resource{v2, v1}
}

// hpaResource is the HorizontalPodAutoscalers of one version, stored in
// autoscaling/v2.
func hpaResource(gvr schema.GroupVersionResource) *apiserver.Resource {
	return &apiserver.Resource{GVR: gvr, Kind: "HorizontalPodAutoscaler", Singular: "horizontalpodautoscaler",
		Namespaced: true, ShortNames: []string{"hpa"}, Categories: []string{"all"},
		Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()},
		StoredAs:     v2GVK, Convertor: convertor{}, ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true,
		Validate: validateHPA, ValidateStatus: validateHPAStatus, ResetStatus: resetHPAStatus, Table: hpaTable}
}

// asV2 is an autoscaler of either version in autoscaling/v2.
func asV2(obj runtime.Object) *autoscalingv2.HorizontalPodAutoscaler {
	switch hpa := obj.(type) {
	case *autoscalingv2.HorizontalPodAutoscaler:
		return hpa
	case *autoscalingv1.HorizontalPodAutoscaler:
		return toV2(hpa)
	}
	panic(fmt.Sprintf("autoscaling: %T is not a HorizontalPodAutoscaler", obj))
}

// defaultV1: minReplicas is 1, and the object is what kube makes of it
// through its internal form: its annotations and the v1 fields they
// hold rewritten, 80% CPU without any metric (D.15).
func defaultV1(obj runtime.Object) {
	hpa := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	if hpa.Spec.MinReplicas == nil {
		hpa.Spec.MinReplicas = ptrTo[int32](1)
	}
	out, err := toV1(toV2(hpa))
	if err != nil {
		return
	}
	// The status annotations the writer did not send stay out: kube
	// stores the status it decoded, which they would change (a v1
	// metric's current value is never unset).
	for _, k := range statusAnnotations {
		if _, sent := hpa.Annotations[k]; !sent {
			delete(out.Annotations, k)
		}
	}
	if len(out.Annotations) == 0 {
		out.Annotations = hpa.Annotations
	}
	hpa.ObjectMeta, hpa.Spec, hpa.Status = out.ObjectMeta, out.Spec, out.Status
}

// defaultV2: minReplicas is 1, no metric is 80% CPU, and a behavior's
// missing rules are kube's (D.15).
func defaultV2(obj runtime.Object) {
	hpa := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if hpa.Spec.MinReplicas == nil {
		hpa.Spec.MinReplicas = ptrTo[int32](1)
	}
	if len(hpa.Spec.Metrics) == 0 {
		hpa.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(defaultCPUUtilization)}
	}
	if b := hpa.Spec.Behavior; b != nil {
		b.ScaleUp = withRules(b.ScaleUp, autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptrTo[int32](0),
			SelectPolicy: ptrTo(autoscalingv2.MaxChangePolicySelect), Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
				{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}})
		b.ScaleDown = withRules(b.ScaleDown, autoscalingv2.HPAScalingRules{
			SelectPolicy: ptrTo(autoscalingv2.MaxChangePolicySelect), Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}})
	}
}

// withRules is the default rules def with what given sets.
func withRules(given *autoscalingv2.HPAScalingRules, def autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if given == nil {
		return &def
	}
	if given.SelectPolicy != nil {
		def.SelectPolicy = given.SelectPolicy
	}
	if given.StabilizationWindowSeconds != nil {
		def.StabilizationWindowSeconds = given.StabilizationWindowSeconds
	}
	if given.Policies != nil {
		def.Policies = given.Policies
	}
	if given.Tolerance != nil {
		def.Tolerance = given.Tolerance
	}
	return &def
}

// statusAnnotations are the round-trip annotations that hold status.
var statusAnnotations = []string{metricStatusesAnnotation, conditionsAnnotation}

// resetHPAStatus copies old's status into obj (clears it on create); in
// v1, the status held in annotations too.
func resetHPAStatus(obj, old runtime.Object) {
	switch hpa := obj.(type) {
	case *autoscalingv2.HorizontalPodAutoscaler:
		hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
		if old != nil {
			hpa.Status = old.(*autoscalingv2.HorizontalPodAutoscaler).Status
		}
	case *autoscalingv1.HorizontalPodAutoscaler:
		hpa.Status = autoscalingv1.HorizontalPodAutoscalerStatus{}
		var from map[string]string
		if old != nil {
			o := old.(*autoscalingv1.HorizontalPodAutoscaler)
			hpa.Status, from = o.Status, o.Annotations
		}
		for _, k := range statusAnnotations {
			v, ok := from[k]
			if _, had := hpa.Annotations[k]; !ok && had {
				delete(hpa.Annotations, k)
			} else if ok {
				if hpa.Annotations == nil {
					hpa.Annotations = map[string]string{}
				}
				hpa.Annotations[k] = v
			}
		}
	}
}

// validateHPA checks the spec as kube-apiserver does, in v2's form
// whatever the version written (D.15).
func validateHPA(obj, old runtime.Object) field.ErrorList {
	hpa := asV2(obj)
	var oldHPA *autoscalingv2.HorizontalPodAutoscaler
	if old != nil {
		oldHPA = asV2(old)
	}
	return validateSpec(&hpa.Spec, field.NewPath("spec"), specOptions(hpa, oldHPA))
}

// validateHPAStatus: the counts and the conditions' generations are not
// negative.
func validateHPAStatus(obj, _ runtime.Object) field.ErrorList {
	st := asV2(obj).Status
	var errs field.ErrorList
	path := field.NewPath("status")
	for i, c := range st.Conditions {
		if c.ObservedGeneration != nil && *c.ObservedGeneration < 0 {
			errs = append(errs, field.Invalid(path.Child("conditions").Index(i).Child("observedGeneration"), *c.ObservedGeneration, "must be greater than or equal to 0"))
		}
	}
	for _, f := range []struct {
		name string
		v    int32
	}{{"currentReplicas", st.CurrentReplicas}, {"desiredReplicas", st.DesiredReplicas}} {
		if f.v < 0 {
			errs = append(errs, field.Invalid(path.Child(f.name), int64(f.v), "must be greater than or equal to 0"))
		}
	}
	return errs
}

var hpaTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Reference", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]},
		{Name: "Targets", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]},
		{Name: "MinPods", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]},
		{Name: "MaxPods", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]},
		{Name: "Replicas", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]},
		apiserver.AgeColumn,
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		hpa := asV2(obj)
		minPods := "<unset>"
		if hpa.Spec.MinReplicas != nil {
			minPods = fmt.Sprint(*hpa.Spec.MinReplicas)
		}
		ref := hpa.Spec.ScaleTargetRef.Kind + "/" + hpa.Spec.ScaleTargetRef.Name
		return []any{hpa.Name, ref, formatMetrics(hpa.Spec.Metrics, hpa.Status.CurrentMetrics), minPods,
			int64(hpa.Spec.MaxReplicas), int64(hpa.Status.CurrentReplicas), apiserver.Age(hpa.CreationTimestamp, now)}
	},
	// kube prints its internal object, which holds them as fields.
	HiddenAnnotations: roundTripAnnotations,
}

// formatMetrics is the TARGETS column: current/target of the first two
// metrics, and how many more.
func formatMetrics(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	var list []string
	for i, spec := range specs {
		var st *autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = &statuses[i]
		}
		list = append(list, formatMetric(spec, st))
	}
	if len(list) > 2 {
		return strings.Join(list[:2], ", ") + fmt.Sprintf(" + %d more...", len(list)-2)
	}
	return strings.Join(list, ", ")
}

func formatMetric(spec autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) string {
	const unknown = "<unknown>"
	current := unknown
	switch spec.Type {
	case autoscalingv2.ExternalMetricSourceType:
		if spec.External.Target.AverageValue != nil {
			if st != nil && st.External != nil && st.External.Current.AverageValue != nil {
				current = st.External.Current.AverageValue.String()
			}
			return current + "/" + spec.External.Target.AverageValue.String() + " (avg)"
		}
		if st != nil && st.External != nil {
			current = st.External.Current.Value.String()
		}
		return current + "/" + spec.External.Target.Value.String()
	case autoscalingv2.PodsMetricSourceType:
		if st != nil && st.Pods != nil {
			current = st.Pods.Current.AverageValue.String()
		}
		return current + "/" + spec.Pods.Target.AverageValue.String()
	case autoscalingv2.ObjectMetricSourceType:
		if spec.Object.Target.AverageValue != nil {
			if st != nil && st.Object != nil && st.Object.Current.AverageValue != nil {
				current = st.Object.Current.AverageValue.String()
			}
			return current + "/" + spec.Object.Target.AverageValue.String() + " (avg)"
		}
		if st != nil && st.Object != nil {
			current = st.Object.Current.Value.String()
		}
		return current + "/" + spec.Object.Target.Value.String()
	case autoscalingv2.ResourceMetricSourceType:
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.Resource != nil {
			cur = &st.Resource.Current
		}
		return string(spec.Resource.Name) + ": " + formatTarget(spec.Resource.Target, cur)
	case autoscalingv2.ContainerResourceMetricSourceType:
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.ContainerResource != nil {
			cur = &st.ContainerResource.Current
		}
		return string(spec.ContainerResource.Name) + ": " + formatTarget(spec.ContainerResource.Target, cur)
	}
	return "<unknown type>"
}

// formatTarget is a resource metric's current/target, in value or
// utilization.
func formatTarget(t autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if t.AverageValue != nil {
		if cur != nil {
			current = cur.AverageValue.String()
		}
		return current + "/" + t.AverageValue.String()
	}
	if cur != nil && cur.AverageUtilization != nil {
		current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
	}
	target := "<auto>"
	if t.AverageUtilization != nil {
		target = fmt.Sprintf("%d%%", *t.AverageUtilization)
	}
	return current + "/" + target
}
