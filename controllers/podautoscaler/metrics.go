package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	custommetricsv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	resourceclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	"k8s.io/metrics/pkg/client/custom_metrics"
	"k8s.io/metrics/pkg/client/external_metrics"
)

// customMetricWindow is the window a custom metric without one is taken
// to cover, as metrics-server's.
const customMetricWindow = time.Minute

// PodMetric is one pod's sample of a metric, in milli-units.
type PodMetric struct {
	Timestamp time.Time
	Window    time.Duration
	Value     int64
}

// PodMetrics are samples by pod name.
type PodMetrics map[string]PodMetric

// MetricsClient reads the metrics an autoscaler targets: resource
// metrics from metrics.k8s.io, the others from custom.metrics.k8s.io and
// external.metrics.k8s.io. Each returns an error when the API it reads
// is not served or answers nothing.
type MetricsClient interface {
	// ResourceMetric is the usage of resource by the pods selector
	// matches, summed over their containers or of container alone, and
	// the timestamp of the first sample. A pod missing the resource is
	// left out, not an error.
	ResourceMetric(ctx context.Context, resource corev1.ResourceName, namespace string, selector labels.Selector, container string) (PodMetrics, time.Time, error)
	// PodsMetric is a custom metric of the pods selector matches.
	PodsMetric(ctx context.Context, metric, namespace string, selector, metricSelector labels.Selector) (PodMetrics, time.Time, error)
	// ObjectMetric is a custom metric of one object.
	ObjectMetric(ctx context.Context, metric, namespace string, ref *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error)
	// ExternalMetric is the values of an external metric.
	ExternalMetric(ctx context.Context, metric, namespace string, selector labels.Selector) ([]int64, time.Time, error)
}

// RESTMetrics is the MetricsClient over the three metrics APIs, with
// k8s.io/metrics' clients; a nil client answers that its API is not
// there.
type RESTMetrics struct {
	Resource resourceclient.PodMetricsesGetter
	Custom   custom_metrics.CustomMetricsClient
	External external_metrics.ExternalMetricsClient
}

var _ MetricsClient = (*RESTMetrics)(nil)

// ResourceMetric lists metrics.k8s.io's PodMetrics.
func (m *RESTMetrics) ResourceMetric(ctx context.Context, resource corev1.ResourceName, namespace string, selector labels.Selector, container string) (PodMetrics, time.Time, error) {
	if m.Resource == nil {
		return nil, time.Time{}, errors.New("unable to fetch metrics from resource metrics API: no client")
	}
	list, err := m.Resource.PodMetricses(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from resource metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from resource metrics API")
	}
	out := make(PodMetrics, len(list.Items))
	for _, pm := range list.Items {
		if v, ok := podUsage(pm, resource, container); ok {
			out[pm.Name] = PodMetric{Timestamp: pm.Timestamp.Time, Window: pm.Window.Duration, Value: v}
		}
	}
	return out, list.Items[0].Timestamp.Time, nil
}

// podUsage is the pod's usage of resource: container's, or the sum over
// all its containers, which must all report it.
func podUsage(pm metricsv1beta1.PodMetrics, resource corev1.ResourceName, container string) (int64, bool) {
	if container != "" {
		for _, c := range pm.Containers {
			if c.Name == container {
				v, ok := c.Usage[resource]
				return v.MilliValue(), ok
			}
		}
		return 0, false
	}
	if len(pm.Containers) == 0 {
		return 0, false
	}
	var sum int64
	for _, c := range pm.Containers {
		v, ok := c.Usage[resource]
		if !ok {
			return 0, false
		}
		sum += v.MilliValue()
	}
	return sum, true
}

// PodsMetric reads custom.metrics.k8s.io for the pods.
func (m *RESTMetrics) PodsMetric(_ context.Context, metric, namespace string, selector, metricSelector labels.Selector) (PodMetrics, time.Time, error) {
	if m.Custom == nil {
		return nil, time.Time{}, errors.New("unable to fetch metrics from custom metrics API: no client")
	}
	list, err := m.Custom.NamespacedMetrics(namespace).GetForObjects(schema.GroupKind{Kind: "Pod"}, selector, metric, metricSelector)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from custom metrics API")
	}
	out := make(PodMetrics, len(list.Items))
	for _, v := range list.Items {
		window := customMetricWindow
		if v.WindowSeconds != nil {
			window = time.Duration(*v.WindowSeconds) * time.Second
		}
		out[v.DescribedObject.Name] = PodMetric{Timestamp: v.Timestamp.Time, Window: window, Value: v.Value.MilliValue()}
	}
	return out, list.Items[0].Timestamp.Time, nil
}

// ObjectMetric reads custom.metrics.k8s.io for one object; a Namespace
// is always the autoscaler's own.
func (m *RESTMetrics) ObjectMetric(_ context.Context, metric, namespace string, ref *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error) {
	if m.Custom == nil {
		return 0, time.Time{}, errors.New("unable to fetch metrics from custom metrics API: no client")
	}
	gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
	var mv *custommetricsv1beta2.MetricValue
	var err error
	if gk == (schema.GroupKind{Kind: "Namespace"}) {
		mv, err = m.Custom.RootScopedMetrics().GetForObject(gk, namespace, metric, metricSelector)
	} else {
		mv, err = m.Custom.NamespacedMetrics(namespace).GetForObject(gk, ref.Name, metric, metricSelector)
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	return mv.Value.MilliValue(), mv.Timestamp.Time, nil
}

// ExternalMetric reads external.metrics.k8s.io.
func (m *RESTMetrics) ExternalMetric(_ context.Context, metric, namespace string, selector labels.Selector) ([]int64, time.Time, error) {
	if m.External == nil {
		return nil, time.Time{}, errors.New("unable to fetch metrics from external metrics API: no client")
	}
	list, err := m.External.NamespacedMetrics(namespace).List(metric, selector)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from external metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from external metrics API")
	}
	out := make([]int64, 0, len(list.Items))
	for _, v := range list.Items {
		out = append(out, v.Value.MilliValue())
	}
	return out, list.Items[0].Timestamp.Time, nil
}
