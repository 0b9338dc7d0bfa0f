package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// tolerances are how far below and above 1.0 a usage ratio may be
// without a change of replicas.
type tolerances struct{ down, up float64 }

func (t tolerances) within(ratio float64) bool {
	return 1-t.down <= ratio && ratio <= 1+t.up
}

// calculator turns metrics into replica counts (G.19).
type calculator struct {
	metrics        MetricsClient
	pods           corelisters.PodLister
	now            func() time.Time
	cpuInitPeriod  time.Duration
	readinessDelay time.Duration
}

// errNoPods and the others are the calculator's own refusals, in kube's
// words.
var (
	errNoPods      = errors.New("no pods returned by selector while calculating replica count")
	errNoReadyData = errors.New("did not receive metrics for targeted pods (pods might be unready)")
	errNoMatch     = errors.New("no metrics returned matched known pods")
)

// resourceUtilization is the replica count for a target utilization of
// resource (a percentage of the pods' requests), with the utilization and
// the average usage it saw.
func (c *calculator) resourceUtilization(ctx context.Context, current, target int32, resource corev1.ResourceName, tol tolerances,
	namespace string, selector labels.Selector, container string) (replicas, utilization int32, average int64, at time.Time, err error) {
	samples, at, err := c.metrics.ResourceMetric(ctx, resource, namespace, selector, container)
	if err != nil {
		return 0, 0, 0, time.Time{}, fmt.Errorf("unable to get metrics for resource %s: %w", resource, err)
	}
	pods, err := c.pods.Pods(namespace).List(selector)
	if err != nil {
		return 0, 0, 0, time.Time{}, fmt.Errorf("unable to get pods while calculating replica count: %w", err)
	}
	if len(pods) == 0 {
		return 0, 0, 0, time.Time{}, errNoPods
	}
	g := c.group(pods, samples, resource)
	g.drop(samples)
	if len(samples) == 0 {
		return 0, 0, 0, time.Time{}, errNoReadyData
	}
	requests, err := podRequests(pods, container, resource)
	if err != nil {
		return 0, 0, 0, time.Time{}, err
	}
	ratio, utilization, average, err := utilizationRatio(samples, requests, target)
	if err != nil {
		return 0, 0, 0, time.Time{}, err
	}
	withUnready := len(g.unready) > 0 && ratio > 1
	if !withUnready && len(g.missing) == 0 {
		if tol.within(ratio) {
			return current, utilization, average, at, nil
		}
		return int32(math.Ceil(ratio * float64(g.ready))), utilization, average, at, nil
	}
	// Fill in the pods without a usable sample so as to damp the change:
	// on a scale-down a missing pod uses its request (or the target, if
	// above 100%), on a scale-up it and any unready pod use nothing.
	if len(g.missing) > 0 {
		switch {
		case ratio < 1:
			fallback := int64(max(100, target))
			for name := range g.missing {
				samples[name] = PodMetric{Value: requests[name] * fallback / 100}
			}
		case ratio > 1:
			for name := range g.missing {
				samples[name] = PodMetric{}
			}
		}
	}
	if withUnready {
		for name := range g.unready {
			samples[name] = PodMetric{}
		}
	}
	newRatio, _, _, err := utilizationRatio(samples, requests, target)
	if err != nil {
		return 0, utilization, average, time.Time{}, err
	}
	return settle(current, ratio, newRatio, len(samples), tol), utilization, average, at, nil
}

// settle is the replica count once missing and unready pods are filled
// in: the current count when the new ratio is within tolerance or points
// the other way than the first, else the new ratio over the pods counted,
// unless that too goes the other way.
func settle(current int32, ratio, newRatio float64, counted int, tol tolerances) int32 {
	if tol.within(newRatio) || (ratio < 1 && newRatio > 1) || (ratio > 1 && newRatio < 1) {
		return current
	}
	n := int32(math.Ceil(newRatio * float64(counted)))
	if (newRatio < 1 && n > current) || (newRatio > 1 && n < current) {
		return current
	}
	return n
}

// rawResource is the replica count for a target average usage of
// resource (milli-units per pod).
func (c *calculator) rawResource(ctx context.Context, current int32, target int64, resource corev1.ResourceName, tol tolerances,
	namespace string, selector labels.Selector, container string) (replicas int32, average int64, at time.Time, err error) {
	samples, at, err := c.metrics.ResourceMetric(ctx, resource, namespace, selector, container)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metrics for resource %s: %w", resource, err)
	}
	replicas, average, err = c.plain(samples, current, target, tol, namespace, selector, resource)
	return replicas, average, at, err
}

// podsMetric is the replica count for a target average of a custom pods
// metric.
func (c *calculator) podsMetric(ctx context.Context, current int32, target int64, metric string, tol tolerances,
	namespace string, selector, metricSelector labels.Selector) (replicas int32, average int64, at time.Time, err error) {
	samples, at, err := c.metrics.PodsMetric(ctx, metric, namespace, selector, metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metric %s: %w", metric, err)
	}
	replicas, average, err = c.plain(samples, current, target, tol, namespace, selector, "")
	return replicas, average, at, err
}

// plain is the replica count for an average value target.
func (c *calculator) plain(samples PodMetrics, current int32, target int64, tol tolerances, namespace string,
	selector labels.Selector, resource corev1.ResourceName) (int32, int64, error) {
	pods, err := c.pods.Pods(namespace).List(selector)
	if err != nil {
		return 0, 0, fmt.Errorf("unable to get pods while calculating replica count: %w", err)
	}
	if len(pods) == 0 {
		return 0, 0, errNoPods
	}
	g := c.group(pods, samples, resource)
	g.drop(samples)
	if len(samples) == 0 {
		return 0, 0, errNoReadyData
	}
	ratio, average := usageRatio(samples, target)
	withUnready := len(g.unready) > 0 && ratio > 1
	if !withUnready && len(g.missing) == 0 {
		if tol.within(ratio) {
			return current, average, nil
		}
		return int32(math.Ceil(ratio * float64(g.ready))), average, nil
	}
	if len(g.missing) > 0 {
		switch {
		case ratio < 1:
			for name := range g.missing {
				samples[name] = PodMetric{Value: target}
			}
		case ratio > 1:
			for name := range g.missing {
				samples[name] = PodMetric{}
			}
		}
	}
	if withUnready {
		for name := range g.unready {
			samples[name] = PodMetric{}
		}
	}
	newRatio, _ := usageRatio(samples, target)
	return settle(current, ratio, newRatio, len(samples), tol), average, nil
}

// objectValue is the replica count for a target value of an object's
// metric.
func (c *calculator) objectValue(ctx context.Context, current int32, target int64, metric string, tol tolerances, namespace string,
	ref *autoscalingv2.CrossVersionObjectReference, selector, metricSelector labels.Selector) (int32, int64, time.Time, error) {
	usage, _, err := c.metrics.ObjectMetric(ctx, metric, namespace, ref, metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metric %s on %s %s/%s: %w", metric, ref.Kind, namespace, ref.Name, err)
	}
	n, err := c.byRatio(current, float64(usage)/float64(target), tol, namespace, selector)
	return n, usage, time.Time{}, err
}

// objectAverage is the replica count for a target per-pod average of an
// object's metric.
func (c *calculator) objectAverage(ctx context.Context, statusReplicas int32, target int64, metric string, tol tolerances, namespace string,
	ref *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int32, int64, time.Time, error) {
	usage, at, err := c.metrics.ObjectMetric(ctx, metric, namespace, ref, metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metric %s on %s %s/%s: %w", metric, ref.Kind, namespace, ref.Name, err)
	}
	n, average := perPod(statusReplicas, usage, target, tol)
	return n, average, at, nil
}

// externalValue is the replica count for a target total of an external
// metric.
func (c *calculator) externalValue(ctx context.Context, current int32, target int64, metric string, tol tolerances, namespace string,
	metricSelector *metav1.LabelSelector, selector labels.Selector) (int32, int64, time.Time, error) {
	sel, err := metav1.LabelSelectorAsSelector(metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, err
	}
	values, _, err := c.metrics.ExternalMetric(ctx, metric, namespace, sel)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get external metric %s/%s/%+v: %s", namespace, metric, metricSelector, err)
	}
	usage := sum(values)
	n, err := c.byRatio(current, float64(usage)/float64(target), tol, namespace, selector)
	return n, usage, time.Time{}, err
}

// externalAverage is the replica count for a target per-pod average of an
// external metric.
func (c *calculator) externalAverage(ctx context.Context, statusReplicas int32, target int64, metric string, tol tolerances, namespace string,
	metricSelector *metav1.LabelSelector) (int32, int64, time.Time, error) {
	sel, err := metav1.LabelSelectorAsSelector(metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, err
	}
	values, at, err := c.metrics.ExternalMetric(ctx, metric, namespace, sel)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get external metric %s/%s/%+v: %s", namespace, metric, metricSelector, err)
	}
	n, average := perPod(statusReplicas, sum(values), target, tol)
	return n, average, at, nil
}

// perPod is the replica count for a total usage against a per-pod target,
// and the average per current replica.
func perPod(statusReplicas int32, usage, target int64, tol tolerances) (int32, int64) {
	n := statusReplicas
	if !tol.within(float64(usage) / (float64(target) * float64(n))) {
		n = clampInt32(math.Ceil(float64(usage) / float64(target)))
	}
	if float64(usage) >= math.MaxInt64 {
		return n, math.MaxInt64
	}
	return n, int64(math.Ceil(float64(usage) / float64(statusReplicas)))
}

// byRatio is the ready pods times ratio; from zero replicas, the ratio
// alone, so that a workload scaled to zero can come back.
func (c *calculator) byRatio(current int32, ratio float64, tol tolerances, namespace string, selector labels.Selector) (int32, error) {
	if current == 0 {
		return int32(math.Ceil(ratio)), nil
	}
	if tol.within(ratio) {
		return current, nil
	}
	pods, err := c.pods.Pods(namespace).List(selector)
	if err != nil {
		return 0, fmt.Errorf("unable to calculate ready pods: unable to get pods while calculating replica count: %s", err)
	}
	if len(pods) == 0 {
		return 0, fmt.Errorf("unable to calculate ready pods: %s", errNoPods)
	}
	ready := 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && podReady(p) {
			ready++
		}
	}
	return clampInt32(math.Ceil(ratio * float64(ready))), nil
}

func clampInt32(f float64) int32 {
	if f > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(f)
}

// sum adds values, stopping at MaxInt64.
func sum(values []int64) int64 {
	var total int64
	for _, v := range values {
		if v > 0 && total > math.MaxInt64-v {
			return math.MaxInt64
		}
		total += v
	}
	return total
}

// podGroups sorts the pods a metric is about.
type podGroups struct {
	ready                     int
	unready, missing, ignored sets.Set[string]
}

// drop removes the samples of ignored and unready pods.
func (g podGroups) drop(samples PodMetrics) {
	for name := range g.ignored {
		delete(samples, name)
	}
	for name := range g.unready {
		delete(samples, name)
	}
}

// group sorts pods: deleted and failed pods are ignored, pending ones
// unready, those without a sample missing; for CPU a pod is unready too
// while it has no Ready condition or start time, while within the CPU
// initialization period it is not ready or its sample began before it
// turned ready, and after it while it has never been ready.
func (c *calculator) group(pods []*corev1.Pod, samples PodMetrics, resource corev1.ResourceName) podGroups {
	g := podGroups{unready: sets.New[string](), missing: sets.New[string](), ignored: sets.New[string]()}
	now := c.now()
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed {
			g.ignored.Insert(p.Name)
			continue
		}
		if p.Status.Phase == corev1.PodPending {
			g.unready.Insert(p.Name)
			continue
		}
		sample, ok := samples[p.Name]
		if !ok {
			g.missing.Insert(p.Name)
			continue
		}
		if resource == corev1.ResourceCPU && c.cpuUnready(p, sample, now) {
			g.unready.Insert(p.Name)
			continue
		}
		g.ready++
	}
	return g
}

func (c *calculator) cpuUnready(p *corev1.Pod, sample PodMetric, now time.Time) bool {
	cond := readyCondition(p)
	if cond == nil || p.Status.StartTime == nil {
		return true
	}
	start := p.Status.StartTime.Time
	if start.Add(c.cpuInitPeriod).After(now) {
		return cond.Status == corev1.ConditionFalse || sample.Timestamp.Before(cond.LastTransitionTime.Add(sample.Window))
	}
	return cond.Status == corev1.ConditionFalse && start.Add(c.readinessDelay).After(cond.LastTransitionTime.Time)
}

func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// podRequests is each pod's request of resource: container's, else the
// pod-level request when the pod sets one, else the sum over its
// containers and restartable init containers, each of which must request
// it.
func podRequests(pods []*corev1.Pod, container string, resource corev1.ResourceName) (map[string]int64, error) {
	out := make(map[string]int64, len(pods))
	for _, p := range pods {
		if container == "" && resourcehelper.IsPodLevelRequestsSet(p) {
			r, ok := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})[resource]
			if !ok {
				return nil, fmt.Errorf("missing pod-level request for %s in Pod %s", resource, p.Name)
			}
			out[p.Name] = r.MilliValue()
			continue
		}
		r, err := containerRequests(p, container, resource)
		if err != nil {
			return nil, err
		}
		out[p.Name] = r
	}
	return out, nil
}

func containerRequests(p *corev1.Pod, container string, resource corev1.ResourceName) (int64, error) {
	cs := append([]corev1.Container{}, p.Spec.Containers...)
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			cs = append(cs, c)
		}
	}
	var total int64
	for _, c := range cs {
		if container != "" && c.Name != container {
			continue
		}
		r, ok := c.Resources.Requests[resource]
		if !ok {
			return 0, fmt.Errorf("missing request for %s in container %s of Pod %s", resource, c.Name, p.Name)
		}
		total += r.MilliValue()
		if container != "" {
			return total, nil
		}
	}
	if container != "" {
		return 0, fmt.Errorf("container %s not found in Pod %s", container, p.Name)
	}
	return total, nil
}

// utilizationRatio is the pods' usage as a percentage of their requests
// over target, the percentage, and the average usage, over the pods with
// both a sample and a request.
func utilizationRatio(samples PodMetrics, requests map[string]int64, target int32) (float64, int32, int64, error) {
	var used, requested int64
	n := 0
	for name, s := range samples {
		r, ok := requests[name]
		if !ok {
			continue
		}
		used += s.Value
		requested += r
		n++
	}
	if requested == 0 {
		return 0, 0, 0, errNoMatch
	}
	utilization := int32(used * 100 / requested)
	return float64(utilization) / float64(target), utilization, used / int64(n), nil
}

// usageRatio is the average sample over target, and the average.
func usageRatio(samples PodMetrics, target int64) (float64, int64) {
	var total int64
	for _, s := range samples {
		total += s.Value
	}
	average := total / int64(len(samples))
	return float64(average) / float64(target), average
}
