package autoscaling

import (
	"encoding/json"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The annotations in which autoscaling/v1 keeps what only v2 can hold
// (D.15): the metrics other than the CPU utilization target, the metrics'
// statuses, the behavior and the conditions. They never reach storage:
// a write through either version drops them.
const (
	metricSpecsAnnotation    = "autoscaling.alpha.kubernetes.io/metrics"
	metricStatusesAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	conditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	behaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
	toleranceDownAnnotation  = "autoscaling.alpha.kubernetes.io/scale-down-tolerance"
	toleranceUpAnnotation    = "autoscaling.alpha.kubernetes.io/scale-up-tolerance"
	// defaultCPUUtilization is the target of an autoscaler given no
	// metric.
	defaultCPUUtilization = 80
)

// roundTripAnnotations are the annotations above, which neither version
// serves as the user's own.
var roundTripAnnotations = []string{metricSpecsAnnotation, behaviorAnnotation, toleranceDownAnnotation,
	toleranceUpAnnotation, metricStatusesAnnotation, conditionsAnnotation}

var (
	v1GVK = autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler")
	v2GVK = autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler")
)

// dropRoundTrip returns annotations without the round-trip ones, a copy
// when it had any.
func dropRoundTrip(annotations map[string]string) map[string]string {
	out := annotations
	copied := false
	for _, k := range roundTripAnnotations {
		if _, ok := out[k]; ok {
			if !copied {
				out = make(map[string]string, len(annotations))
				for ak, av := range annotations {
					out[ak] = av
				}
				copied = true
			}
			delete(out, k)
		}
	}
	return out
}

// The behavior annotation holds kube's internal form of the behavior,
// whose fields have no JSON names: these types give the same encoding.
type (
	behaviorJSON struct {
		ScaleUp   *scalingRulesJSON
		ScaleDown *scalingRulesJSON
	}
	scalingRulesJSON struct {
		StabilizationWindowSeconds *int32
		SelectPolicy               *autoscalingv2.ScalingPolicySelect
		Policies                   []scalingPolicyJSON
		Tolerance                  *resource.Quantity
	}
	scalingPolicyJSON struct {
		Type          autoscalingv2.HPAScalingPolicyType
		Value         int32
		PeriodSeconds int32
	}
)

func rulesToJSON(r *autoscalingv2.HPAScalingRules) *scalingRulesJSON {
	if r == nil {
		return nil
	}
	out := &scalingRulesJSON{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
	if r.Policies != nil {
		out.Policies = make([]scalingPolicyJSON, len(r.Policies))
		for i, p := range r.Policies {
			out.Policies[i] = scalingPolicyJSON(p)
		}
	}
	return out
}

func rulesFromJSON(r *scalingRulesJSON) *autoscalingv2.HPAScalingRules {
	if r == nil {
		return nil
	}
	out := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
	if r.Policies != nil {
		out.Policies = make([]autoscalingv2.HPAScalingPolicy, len(r.Policies))
		for i, p := range r.Policies {
			out.Policies[i] = autoscalingv2.HPAScalingPolicy(p)
		}
	}
	return out
}

// isCPUUtilization: the metric v1's targetCPUUtilizationPercentage is.
func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
		m.Resource.Target.AverageUtilization != nil
}

// toV1 is hpa in autoscaling/v1, what v1 has no field for kept in the
// round-trip annotations, as kube converts it (D.15).
func toV1(in *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv1.HorizontalPodAutoscaler, error) {
	out := &autoscalingv1.HorizontalPodAutoscaler{TypeMeta: in.TypeMeta, ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.SetGroupVersionKind(v1GVK)
	s := &in.Spec
	out.Spec = autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(s.ScaleTargetRef),
		MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas}
	var other []autoscalingv1.MetricSpec
	for _, m := range s.Metrics {
		if isCPUUtilization(m) {
			if out.Spec.TargetCPUUtilizationPercentage == nil {
				out.Spec.TargetCPUUtilizationPercentage = ptrTo(*m.Resource.Target.AverageUtilization)
			}
			continue
		}
		other = append(other, metricSpecToV1(m))
	}
	st := &in.Status
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{ObservedGeneration: st.ObservedGeneration, LastScaleTime: st.LastScaleTime,
		CurrentReplicas: st.CurrentReplicas, DesiredReplicas: st.DesiredReplicas}
	current := make([]autoscalingv1.MetricStatus, len(st.CurrentMetrics))
	for i, m := range st.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
			m.Resource.Current.AverageUtilization != nil {
			out.Status.CurrentCPUUtilizationPercentage = ptrTo(*m.Resource.Current.AverageUtilization)
		}
		current[i] = metricStatusToV1(m)
	}
	conditions := make([]autoscalingv1.HorizontalPodAutoscalerCondition, len(st.Conditions))
	for i, c := range st.Conditions {
		conditions[i] = autoscalingv1.HorizontalPodAutoscalerCondition{Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type),
			Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message, ObservedGeneration: c.ObservedGeneration}
	}
	annotations := dropRoundTrip(out.Annotations)
	set := func(key string, v any) error {
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("convert HorizontalPodAutoscaler to autoscaling/v1: %w", err)
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[key] = string(data)
		return nil
	}
	var err error
	if len(other) > 0 {
		err = set(metricSpecsAnnotation, other)
	}
	if err == nil && len(st.CurrentMetrics) > 0 {
		err = set(metricStatusesAnnotation, current)
	}
	if err == nil && s.Behavior != nil {
		err = set(behaviorAnnotation, behaviorJSON{ScaleUp: rulesToJSON(s.Behavior.ScaleUp), ScaleDown: rulesToJSON(s.Behavior.ScaleDown)})
	}
	if err == nil && len(st.Conditions) > 0 {
		err = set(conditionsAnnotation, conditions)
	}
	out.Annotations = annotations
	return out, err
}

// toV2 is hpa in autoscaling/v2, read back from the round-trip
// annotations; an autoscaler without any metric targets 80% CPU.
func toV2(in *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{TypeMeta: in.TypeMeta, ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.SetGroupVersionKind(v2GVK)
	s := &in.Spec
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(s.ScaleTargetRef),
		MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas}
	if s.TargetCPUUtilizationPercentage != nil {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(*s.TargetCPUUtilizationPercentage)}
	}
	st := &in.Status
	out.Status = autoscalingv2.HorizontalPodAutoscalerStatus{ObservedGeneration: st.ObservedGeneration, LastScaleTime: st.LastScaleTime,
		CurrentReplicas: st.CurrentReplicas, DesiredReplicas: st.DesiredReplicas}
	if st.CurrentCPUUtilizationPercentage != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
				Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptrTo(*st.CurrentCPUUtilizationPercentage)}}}}
	}
	a := in.Annotations
	var other []autoscalingv1.MetricSpec
	if enc, ok := a[metricSpecsAnnotation]; ok && json.Unmarshal([]byte(enc), &other) == nil {
		metrics := make([]autoscalingv2.MetricSpec, 0, len(other)+1)
		for _, m := range other {
			metrics = append(metrics, metricSpecToV2(m))
		}
		out.Spec.Metrics = append(metrics, out.Spec.Metrics...)
	}
	var b behaviorJSON
	if enc, ok := a[behaviorAnnotation]; ok && json.Unmarshal([]byte(enc), &b) == nil && (b.ScaleUp != nil || b.ScaleDown != nil) {
		out.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rulesFromJSON(b.ScaleUp), ScaleDown: rulesFromJSON(b.ScaleDown)}
	}
	var current []autoscalingv1.MetricStatus
	if enc, ok := a[metricStatusesAnnotation]; ok && json.Unmarshal([]byte(enc), &current) == nil {
		out.Status.CurrentMetrics = make([]autoscalingv2.MetricStatus, len(current))
		for i, m := range current {
			out.Status.CurrentMetrics[i] = metricStatusToV2(m)
		}
	}
	if len(out.Spec.Metrics) == 0 {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(defaultCPUUtilization)}
	}
	var conditions []autoscalingv1.HorizontalPodAutoscalerCondition
	if enc, ok := a[conditionsAnnotation]; ok && json.Unmarshal([]byte(enc), &conditions) == nil {
		out.Status.Conditions = make([]autoscalingv2.HorizontalPodAutoscalerCondition, len(conditions))
		for i, c := range conditions {
			out.Status.Conditions[i] = autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type),
				Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message, ObservedGeneration: c.ObservedGeneration}
		}
	}
	out.Annotations = dropRoundTrip(out.Annotations)
	return out
}

func cpuUtilization(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptrTo(percent)}}}
}

func ptrTo[T any](v T) *T { return &v }

// convertor converts HorizontalPodAutoscalers between autoscaling/v1 and
// v2, typed or unstructured (as the managed fields hand them over), for
// apiserver.Resource.Convertor.
type convertor struct{}

var _ runtime.ObjectConvertor = convertor{}

func (convertor) Convert(in, out, _ any) error {
	o, ok := out.(runtime.Object)
	i, ok2 := in.(runtime.Object)
	if !ok || !ok2 {
		return fmt.Errorf("convert %T to %T: not objects", in, out)
	}
	gvk := v2GVK
	if _, isV1 := o.(*autoscalingv1.HorizontalPodAutoscaler); isV1 {
		gvk = v1GVK
	}
	got, err := convertor{}.ConvertToVersion(i, gvk.GroupVersion())
	if err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(mustUnstructured(got), o)
}

func mustUnstructured(obj runtime.Object) map[string]any {
	m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	return m
}

func (convertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{v2GVK, v1GVK})
	if !ok {
		return nil, fmt.Errorf("convert HorizontalPodAutoscaler: no version of %v", gv)
	}
	var v1 *autoscalingv1.HorizontalPodAutoscaler
	var v2 *autoscalingv2.HorizontalPodAutoscaler
	switch obj := in.(type) {
	case *autoscalingv1.HorizontalPodAutoscaler:
		v1 = obj
	case *autoscalingv2.HorizontalPodAutoscaler:
		v2 = obj
	case runtime.Unstructured:
		content := obj.UnstructuredContent()
		if in.GetObjectKind().GroupVersionKind() == v1GVK {
			v1 = &autoscalingv1.HorizontalPodAutoscaler{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, v1); err != nil {
				return nil, err
			}
		} else {
			v2 = &autoscalingv2.HorizontalPodAutoscaler{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, v2); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("convert %T: not a HorizontalPodAutoscaler", in)
	}
	switch {
	case target == v1GVK && v1 != nil:
		out := v1.DeepCopy()
		out.SetGroupVersionKind(v1GVK)
		return out, nil
	case target == v1GVK:
		return toV1(v2)
	case v2 != nil:
		out := v2.DeepCopy()
		out.SetGroupVersionKind(v2GVK)
		return out, nil
	}
	// kube defaults what it reads from storage in v2; a v1 object is
	// stored with those defaults so that both versions read them.
	out := toV2(v1)
	defaultV2(out)
	return out, nil
}

func (convertor) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}
