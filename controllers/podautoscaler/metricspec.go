package podautoscaler

import (
	"context"
	"errors"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// noCondition is the condition of a metric that worked.
var noCondition autoscalingv2.HorizontalPodAutoscalerCondition

// computeMetric is the replica count one metric asks for and the name the
// rescale reason gives it, with its status written to status; on failure,
// the ScalingActive condition it would set, and an event of its reason.
func (hc *Controller) computeMetric(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, spec autoscalingv2.MetricSpec,
	specReplicas, statusReplicas int32, selector labels.Selector, status *autoscalingv2.MetricStatus) (int32, string, autoscalingv2.HorizontalPodAutoscalerCondition, error) {
	tol := hc.tolerancesOf(hpa)
	switch {
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		n, name, cond, err := hc.objectMetric(ctx, hpa, spec.Object, specReplicas, statusReplicas, tol, selector, status)
		if err != nil {
			return 0, "", cond, fmt.Errorf("failed to get object metric value: %w", err)
		}
		return n, name, noCondition, nil
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		metricSelector, err := metav1.LabelSelectorAsSelector(spec.Pods.Metric.Selector)
		if err == nil {
			var n int32
			var average int64
			n, average, _, err = hc.calc.podsMetric(ctx, specReplicas, milli(spec.Pods.Target.AverageValue), spec.Pods.Metric.Name, tol, hpa.Namespace, selector, metricSelector)
			if err == nil {
				*status = autoscalingv2.MetricStatus{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
					Metric:  autoscalingv2.MetricIdentifier{Name: spec.Pods.Metric.Name, Selector: spec.Pods.Metric.Selector},
					Current: autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(average, resource.DecimalSI)}}}
				return n, "pods metric " + spec.Pods.Metric.Name, noCondition, nil
			}
		}
		return 0, "", hc.unableToCompute(hpa, "FailedGetPodsMetric", err), fmt.Errorf("failed to get pods metric value: %w", err)
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		n, value, name, err := hc.resourceMetric(ctx, specReplicas, spec.Resource.Target, spec.Resource.Name, hpa, "", selector)
		if err != nil {
			return 0, "", hc.unableToCompute(hpa, "FailedGetResourceMetric", err), fmt.Errorf("failed to get %s resource metric value: %w", spec.Resource.Name, err)
		}
		*status = autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: spec.Resource.Name, Current: *value}}
		return n, name, noCondition, nil
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		cr := spec.ContainerResource
		n, value, name, err := hc.resourceMetric(ctx, specReplicas, cr.Target, cr.Name, hpa, cr.Container, selector)
		if err != nil {
			return 0, "", hc.unableToCompute(hpa, "FailedGetContainerResourceMetric", err), fmt.Errorf("failed to get %s container metric value: %w", cr.Container, err)
		}
		*status = autoscalingv2.MetricStatus{Type: autoscalingv2.ContainerResourceMetricSourceType,
			ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{Name: cr.Name, Container: cr.Container, Current: *value}}
		return n, name, noCondition, nil
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		return hc.externalMetric(ctx, hpa, spec.External, specReplicas, statusReplicas, tol, selector, status)
	}
	err := fmt.Errorf("unknown metric source type %q", string(spec.Type))
	return 0, "", hc.unableToCompute(hpa, "InvalidMetricSourceType", err), err
}

// resourceMetric is a Resource or ContainerResource metric: an average
// value target, else an average utilization one.
func (hc *Controller) resourceMetric(ctx context.Context, current int32, target autoscalingv2.MetricTarget, name corev1.ResourceName,
	hpa *autoscalingv2.HorizontalPodAutoscaler, container string, selector labels.Selector) (int32, *autoscalingv2.MetricValueStatus, string, error) {
	tol := hc.tolerancesOf(hpa)
	if target.AverageValue != nil {
		n, average, _, err := hc.calc.rawResource(ctx, current, target.AverageValue.MilliValue(), name, tol, hpa.Namespace, selector, container)
		if err != nil {
			return 0, nil, "", fmt.Errorf("failed to get %s usage: %w", name, err)
		}
		q := quantity(name, average)
		return n, &autoscalingv2.MetricValueStatus{AverageValue: &q}, fmt.Sprintf("%s resource", name), nil
	}
	if target.AverageUtilization == nil {
		return 0, nil, "", errors.New("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")
	}
	n, utilization, average, _, err := hc.calc.resourceUtilization(ctx, current, *target.AverageUtilization, name, tol, hpa.Namespace, selector, container)
	if err != nil {
		return 0, nil, "", fmt.Errorf("failed to get %s utilization: %w", name, err)
	}
	metric := fmt.Sprintf("%s resource utilization (percentage of request)", name)
	if container != "" {
		metric = fmt.Sprintf("%s container resource utilization (percentage of request)", name)
	}
	q := quantity(name, average)
	return n, &autoscalingv2.MetricValueStatus{AverageUtilization: &utilization, AverageValue: &q}, metric, nil
}

// objectMetric is an Object metric: a value target, or an average value
// one over the target's replicas.
func (hc *Controller) objectMetric(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, src *autoscalingv2.ObjectMetricSource,
	specReplicas, statusReplicas int32, tol tolerances, selector labels.Selector, status *autoscalingv2.MetricStatus) (int32, string, autoscalingv2.HorizontalPodAutoscalerCondition, error) {
	metricSelector, err := metav1.LabelSelectorAsSelector(src.Metric.Selector)
	if err != nil {
		return 0, "", hc.unableToCompute(hpa, "FailedGetObjectMetric", err), err
	}
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricStatus{
		DescribedObject: src.DescribedObject, Metric: autoscalingv2.MetricIdentifier{Name: src.Metric.Name, Selector: src.Metric.Selector}}}
	switch {
	case src.Target.Type == autoscalingv2.ValueMetricType && src.Target.Value != nil:
		n, usage, _, err := hc.calc.objectValue(ctx, specReplicas, src.Target.Value.MilliValue(), src.Metric.Name, tol, hpa.Namespace, &src.DescribedObject, selector, metricSelector)
		if err != nil {
			return 0, "", hc.unableToCompute(hpa, "FailedGetObjectMetric", err), err
		}
		out.Object.Current.Value = resource.NewMilliQuantity(usage, resource.DecimalSI)
		*status = out
		return n, fmt.Sprintf("%s metric %s", src.DescribedObject.Kind, src.Metric.Name), noCondition, nil
	case src.Target.Type == autoscalingv2.AverageValueMetricType && src.Target.AverageValue != nil:
		n, usage, _, err := hc.calc.objectAverage(ctx, statusReplicas, src.Target.AverageValue.MilliValue(), src.Metric.Name, tol, hpa.Namespace, &src.DescribedObject, metricSelector)
		if err != nil {
			return 0, "", hc.unableToCompute(hpa, "FailedGetObjectMetric", err), fmt.Errorf("failed to get %s object metric: %w", src.Metric.Name, err)
		}
		out.Object.Current.AverageValue = resource.NewMilliQuantity(usage, resource.DecimalSI)
		*status = out
		// kube names an object's average metric so too.
		return n, fmt.Sprintf("external metric %s(%+v)", src.Metric.Name, src.Metric.Selector), noCondition, nil
	}
	err = errors.New("invalid object metric source: neither a value target nor an average value target was set")
	return 0, "", hc.unableToCompute(hpa, "FailedGetObjectMetric", err), err
}

// externalMetric is an External metric: an average value target over the
// target's replicas, or a value one.
func (hc *Controller) externalMetric(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, src *autoscalingv2.ExternalMetricSource,
	specReplicas, statusReplicas int32, tol tolerances, selector labels.Selector, status *autoscalingv2.MetricStatus) (int32, string, autoscalingv2.HorizontalPodAutoscalerCondition, error) {
	name := fmt.Sprintf("external metric %s(%+v)", src.Metric.Name, src.Metric.Selector)
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{
		Metric: autoscalingv2.MetricIdentifier{Name: src.Metric.Name, Selector: src.Metric.Selector}}}
	switch {
	case src.Target.AverageValue != nil:
		n, usage, _, err := hc.calc.externalAverage(ctx, statusReplicas, src.Target.AverageValue.MilliValue(), src.Metric.Name, tol, hpa.Namespace, src.Metric.Selector)
		if err != nil {
			return 0, "", hc.unableToCompute(hpa, "FailedGetExternalMetric", err),
				fmt.Errorf("failed to get %s external metric value: %w", src.Metric.Name, fmt.Errorf("failed to get %s external metric: %w", src.Metric.Name, err))
		}
		out.External.Current.AverageValue = resource.NewMilliQuantity(usage, resource.DecimalSI)
		*status = out
		return n, name, noCondition, nil
	case src.Target.Value != nil:
		n, usage, _, err := hc.calc.externalValue(ctx, specReplicas, src.Target.Value.MilliValue(), src.Metric.Name, tol, hpa.Namespace, src.Metric.Selector, selector)
		if err != nil {
			return 0, "", hc.unableToCompute(hpa, "FailedGetExternalMetric", err),
				fmt.Errorf("failed to get %s external metric value: %w", src.Metric.Name, fmt.Errorf("failed to get external metric %s: %w", src.Metric.Name, err))
		}
		out.External.Current.Value = resource.NewMilliQuantity(usage, resource.DecimalSI)
		*status = out
		return n, name, noCondition, nil
	}
	err := errors.New("invalid external metric source: neither a value target nor an average value target was set")
	return 0, "", hc.unableToCompute(hpa, "FailedGetExternalMetric", err), fmt.Errorf("failed to get %s external metric value: %w", src.Metric.Name, err)
}

// tolerancesOf is the controller's tolerance, or the behavior's own for
// either direction.
func (hc *Controller) tolerancesOf(hpa *autoscalingv2.HorizontalPodAutoscaler) tolerances {
	t := tolerances{hc.settings.Tolerance, hc.settings.Tolerance}
	if b := hpa.Spec.Behavior; b != nil {
		if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
			t.down = b.ScaleDown.Tolerance.AsApproximateFloat64()
		}
		if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
			t.up = b.ScaleUp.Tolerance.AsApproximateFloat64()
		}
	}
	return t
}

// milli is q in milli-units; a missing quantity is zero.
func milli(q *resource.Quantity) int64 {
	if q == nil {
		return 0
	}
	return q.MilliValue()
}
