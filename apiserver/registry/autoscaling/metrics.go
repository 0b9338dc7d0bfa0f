package autoscaling

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The metrics of autoscaling/v2 in v1's form, and back, as kube converts
// them through its internal form: v1 names the target by its fields
// (targetValue, targetAverageValue, ...) where v2 has a typed target.

func metricSpecToV1(m autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(m.Type)}
	if o := m.Object; o != nil {
		out.Object = &autoscalingv1.ObjectMetricSource{Target: autoscalingv1.CrossVersionObjectReference(o.DescribedObject),
			MetricName: o.Metric.Name, Selector: o.Metric.Selector, AverageValue: o.Target.AverageValue}
		if o.Target.Value != nil {
			out.Object.TargetValue = *o.Target.Value
		}
	}
	if p := m.Pods; p != nil {
		out.Pods = &autoscalingv1.PodsMetricSource{MetricName: p.Metric.Name, Selector: p.Metric.Selector}
		if p.Target.AverageValue != nil {
			out.Pods.TargetAverageValue = *p.Target.AverageValue
		}
	}
	if r := m.Resource; r != nil {
		out.Resource = &autoscalingv1.ResourceMetricSource{Name: r.Name, TargetAverageUtilization: r.Target.AverageUtilization,
			TargetAverageValue: r.Target.AverageValue}
	}
	if c := m.ContainerResource; c != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{Name: c.Name, Container: c.Container,
			TargetAverageUtilization: c.Target.AverageUtilization, TargetAverageValue: c.Target.AverageValue}
	}
	if e := m.External; e != nil {
		out.External = &autoscalingv1.ExternalMetricSource{MetricName: e.Metric.Name, MetricSelector: e.Metric.Selector,
			TargetValue: e.Target.Value, TargetAverageValue: e.Target.AverageValue}
	}
	return out
}

func metricSpecToV2(m autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(m.Type)}
	if o := m.Object; o != nil {
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, AverageValue: o.AverageValue}
		if o.AverageValue == nil {
			t.Value = ptrTo(o.TargetValue)
		} else {
			t.Type = autoscalingv2.AverageValueMetricType
			if !o.TargetValue.IsZero() {
				t.Value = ptrTo(o.TargetValue)
			}
		}
		out.Object = &autoscalingv2.ObjectMetricSource{DescribedObject: autoscalingv2.CrossVersionObjectReference(o.Target),
			Metric: autoscalingv2.MetricIdentifier{Name: o.MetricName, Selector: o.Selector}, Target: t}
	}
	if p := m.Pods; p != nil {
		out.Pods = &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: p.MetricName, Selector: p.Selector},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptrTo(p.TargetAverageValue)}}
	}
	if r := m.Resource; r != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: r.Name, Target: utilizationOrValue(r.TargetAverageUtilization, r.TargetAverageValue)}
	}
	if c := m.ContainerResource; c != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{Name: c.Name, Container: c.Container,
			Target: utilizationOrValue(c.TargetAverageUtilization, c.TargetAverageValue)}
	}
	if e := m.External; e != nil {
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: e.TargetValue, AverageValue: e.TargetAverageValue}
		if e.TargetValue == nil {
			t.Type = autoscalingv2.AverageValueMetricType
		}
		out.External = &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: e.MetricName, Selector: e.MetricSelector}, Target: t}
	}
	return out
}

// utilizationOrValue is a v1 resource target: a utilization when one is
// given, else an average value.
func utilizationOrValue(utilization *int32, value *resource.Quantity) autoscalingv2.MetricTarget {
	t := autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: utilization, AverageValue: value}
	if utilization == nil {
		t.Type = autoscalingv2.AverageValueMetricType
	}
	return t
}

func metricStatusToV1(m autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(m.Type)}
	if o := m.Object; o != nil {
		out.Object = &autoscalingv1.ObjectMetricStatus{Target: autoscalingv1.CrossVersionObjectReference(o.DescribedObject),
			MetricName: o.Metric.Name, Selector: o.Metric.Selector}
		if o.Current.Value != nil {
			out.Object.CurrentValue = *o.Current.Value
		}
		if o.Current.AverageValue != nil {
			out.Object.AverageValue = ptrTo(*o.Current.AverageValue)
		}
	}
	if p := m.Pods; p != nil {
		out.Pods = &autoscalingv1.PodsMetricStatus{MetricName: p.Metric.Name, Selector: p.Metric.Selector}
		if p.Current.AverageValue != nil {
			out.Pods.CurrentAverageValue = *p.Current.AverageValue
		}
	}
	if r := m.Resource; r != nil {
		out.Resource = &autoscalingv1.ResourceMetricStatus{Name: r.Name, CurrentAverageUtilization: r.Current.AverageUtilization}
		if r.Current.AverageValue != nil {
			out.Resource.CurrentAverageValue = *r.Current.AverageValue
		}
	}
	if c := m.ContainerResource; c != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricStatus{Name: c.Name, Container: c.Container,
			CurrentAverageUtilization: c.Current.AverageUtilization}
		if c.Current.AverageValue != nil {
			out.ContainerResource.CurrentAverageValue = *c.Current.AverageValue
		}
	}
	if e := m.External; e != nil {
		out.External = &autoscalingv1.ExternalMetricStatus{MetricName: e.Metric.Name, MetricSelector: e.Metric.Selector,
			CurrentAverageValue: e.Current.AverageValue}
		if e.Current.Value != nil {
			out.External.CurrentValue = *e.Current.Value
		}
	}
	return out
}

func metricStatusToV2(m autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(m.Type)}
	if o := m.Object; o != nil {
		out.Object = &autoscalingv2.ObjectMetricStatus{DescribedObject: autoscalingv2.CrossVersionObjectReference(o.Target),
			Metric:  autoscalingv2.MetricIdentifier{Name: o.MetricName, Selector: o.Selector},
			Current: autoscalingv2.MetricValueStatus{Value: ptrTo(o.CurrentValue), AverageValue: o.AverageValue}}
	}
	if p := m.Pods; p != nil {
		out.Pods = &autoscalingv2.PodsMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: p.MetricName, Selector: p.Selector},
			Current: autoscalingv2.MetricValueStatus{AverageValue: ptrTo(p.CurrentAverageValue)}}
	}
	if r := m.Resource; r != nil {
		out.Resource = &autoscalingv2.ResourceMetricStatus{Name: r.Name,
			Current: autoscalingv2.MetricValueStatus{AverageUtilization: r.CurrentAverageUtilization, AverageValue: ptrTo(r.CurrentAverageValue)}}
	}
	if c := m.ContainerResource; c != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: c.Name, Container: c.Container,
			Current: autoscalingv2.MetricValueStatus{AverageUtilization: c.CurrentAverageUtilization, AverageValue: ptrTo(c.CurrentAverageValue)}}
	}
	if e := m.External; e != nil {
		out.External = &autoscalingv2.ExternalMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: e.MetricName, Selector: e.MetricSelector},
			Current: autoscalingv2.MetricValueStatus{Value: ptrTo(e.CurrentValue), AverageValue: e.CurrentAverageValue}}
	}
	return out
}
