package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
)

// reconcileKey syncs the autoscaler key; deleted says it is gone, and its
// history with it.
func (hc *Controller) reconcileKey(ctx context.Context, key string) (deleted bool, err error) {
	ns, name, _ := strings.Cut(key, "/")
	hpa, err := hc.hpas.HorizontalPodAutoscalers(ns).Get(name)
	if apierrors.IsNotFound(err) {
		hc.mu.Lock()
		delete(hc.histories, key)
		hc.mu.Unlock()
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, hc.reconcile(ctx, hpa.DeepCopy(), key)
}

// failScale records that the target's scale could not be read.
func (hc *Controller) failScale(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, original *autoscalingv2.HorizontalPodAutoscalerStatus, err error) {
	hc.recorder.Event(hpa, corev1.EventTypeWarning, "FailedGetScale", err.Error())
	hc.setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale", fmt.Sprintf("the HPA controller was unable to get the target's current scale: %v", err))
	if err := hc.updateStatusIfNeeded(ctx, original, hpa); err != nil {
		hc.log.Warn("status update failed", "hpa", hpa.Namespace+"/"+hpa.Name, "err", err)
	}
}

// target reads the target's scale, trying each resource of its kind.
func (hc *Controller) target(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, original *autoscalingv2.HorizontalPodAutoscalerStatus) (*autoscalingv1.Scale, schema.GroupResource, error) {
	ref := hpa.Spec.ScaleTargetRef
	reference := fmt.Sprintf("%s/%s/%s", ref.Kind, hpa.Namespace, ref.Name)
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		hc.failScale(ctx, hpa, original, err)
		return nil, schema.GroupResource{}, fmt.Errorf("invalid API version in scale target reference: %v", err)
	}
	mappings, err := hc.mapper.RESTMappings(schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
	if err != nil {
		hc.failScale(ctx, hpa, original, err)
		return nil, schema.GroupResource{}, fmt.Errorf("unable to determine resource for scale target reference: %w", err)
	}
	s, gr, err := hc.scaleOf(ctx, hpa.Namespace, ref.Name, mappings)
	if err != nil {
		hc.failScale(ctx, hpa, original, err)
		return nil, schema.GroupResource{}, fmt.Errorf("failed to query scale subresource for %s: %w", reference, err)
	}
	return s, gr, nil
}

// scaleOf reads the scale through the first mapping that has one; the
// error is the first mapping's.
func (hc *Controller) scaleOf(ctx context.Context, namespace, name string, mappings []*meta.RESTMapping) (*autoscalingv1.Scale, schema.GroupResource, error) {
	var first error
	for i, m := range mappings {
		gr := m.Resource.GroupResource()
		s, err := hc.scales.Scales(namespace).Get(ctx, gr, name, metav1.GetOptions{})
		if err == nil {
			return s, gr, nil
		}
		if i == 0 {
			first = err
		}
	}
	if first == nil {
		first = errors.New("unrecognized resource")
	}
	return nil, schema.GroupResource{}, first
}

// reconcile is one sync of hpa, a copy it may change (G.19).
func (hc *Controller) reconcile(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, key string) error {
	original := hpa.Status.DeepCopy()
	ref := hpa.Spec.ScaleTargetRef
	reference := fmt.Sprintf("%s/%s/%s", ref.Kind, hpa.Namespace, ref.Name)
	s, gr, err := hc.target(ctx, hpa, original)
	if err != nil {
		return err
	}
	hc.setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	current := s.Spec.Replicas
	h := hc.historyOf(key)
	if h.recommendations == nil {
		h.recommendations = []recommendation{{current, hc.now()}}
	}
	d, metricsErr := hc.decide(ctx, hpa, s, key, h)
	if d.failed {
		hc.setStatus(hpa, current, hpa.Status.DesiredReplicas, d.metrics, false)
		if err := hc.updateStatusIfNeeded(ctx, original, hpa); err != nil {
			hc.log.Warn("status update failed", "hpa", key, "err", err)
		}
		hc.recorder.Event(hpa, corev1.EventTypeWarning, "FailedComputeMetricsReplicas", metricsErr.Error())
		return fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s: %w", reference, metricsErr)
	}
	desired := current
	if d.rescale {
		if err := hc.rescale(ctx, hpa, s, gr, d.desired); err != nil {
			hc.recorder.Eventf(hpa, corev1.EventTypeWarning, "FailedRescale", "New size: %d; reason: %s; error: %v", d.desired, d.reason, err.Error())
			hc.setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale", fmt.Sprintf("the HPA controller was unable to update the target scale: %v", err))
			hc.setStatus(hpa, current, hpa.Status.DesiredReplicas, d.metrics, false)
			if err := hc.updateStatusIfNeeded(ctx, original, hpa); err != nil {
				hc.log.Warn("status update failed", "hpa", key, "err", err)
			}
			return fmt.Errorf("failed to rescale %s: %w", reference, err)
		}
		desired = d.desired
		hc.rescaled(hpa, h, key, current, d)
	}
	hc.setStatus(hpa, current, desired, d.metrics, d.rescale)
	if err := hc.updateStatusIfNeeded(ctx, original, hpa); err != nil {
		return err
	}
	return metricsErr // some metrics failed, but the others still scaled
}

// decision is what one sync decided: the replicas, why, the metrics'
// statuses, and whether the target's scale changes; failed means the
// metrics allowed no decision.
type decision struct {
	desired int32
	reason  string
	metrics []autoscalingv2.MetricStatus
	rescale bool
	failed  bool
}

// decide computes the replicas hpa wants for the target's scale s: its
// bounds when the replicas are outside them, else its metrics normalized
// by its bounds, behavior and windows. When the metrics allow no
// decision it is failed and the error says why; a decision may come with
// an error too, when some metrics failed and the others scale up.
func (hc *Controller) decide(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, s *autoscalingv1.Scale, key string, h *history) (*decision, error) {
	current := s.Spec.Replicas
	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	scaledToZero := conditionTrue(hpa, autoscalingv2.ScaledToZero)
	switch {
	case current == 0:
		if !(minReplicas != 0 && scaledToZero) && !(scaledToZero && hasObjectOrExternal(hpa)) {
			hc.setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
			return &decision{}, nil
		}
	case current > hpa.Spec.MaxReplicas:
		return &decision{desired: hpa.Spec.MaxReplicas, reason: "Current number of replicas above Spec.MaxReplicas", rescale: true}, nil
	case current < minReplicas:
		return &decision{desired: minReplicas, reason: "Current number of replicas below Spec.MinReplicas", rescale: true}, nil
	}
	proposed, metric, statuses, err := hc.computeReplicas(ctx, hpa, s, key)
	if err != nil && proposed == -1 {
		return &decision{metrics: statuses, failed: true}, err
	}
	d := &decision{metrics: statuses}
	if proposed > 0 {
		d.desired = proposed
	}
	switch {
	case d.desired > current:
		d.reason = metric + " above target"
	case d.desired < current:
		d.reason = "All metrics below target"
	}
	if hpa.Spec.Behavior == nil {
		d.desired = hc.normalize(hpa, h, current, d.desired, minReplicas)
	} else {
		d.desired = hc.normalizeWithBehavior(hpa, h, current, d.desired, minReplicas)
	}
	if current == 0 && minReplicas != 0 && scaledToZero && d.desired < minReplicas {
		d.desired = minReplicas
		if d.reason == "" {
			d.reason = "Current number of replicas below Spec.MinReplicas"
		}
	}
	d.rescale = d.desired != current
	return d, err
}

// rescaled records a successful rescale: condition, event, the scale
// event for the behavior's policies, and the ScaledToZero condition.
func (hc *Controller) rescaled(hpa *autoscalingv2.HorizontalPodAutoscaler, h *history, key string, current int32, d *decision) {
	hc.setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale", fmt.Sprintf("the HPA controller was able to update the target scale to %d", d.desired))
	hc.recorder.Eventf(hpa, corev1.EventTypeNormal, "SuccessfulRescale", "New size: %d; reason: %s", d.desired, d.reason)
	hc.recordScale(hpa.Spec.Behavior, h, current, d.desired)
	hc.log.Info("rescaled", "hpa", key, "from", current, "to", d.desired, "reason", d.reason)
	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	if current > 0 && d.desired == 0 && minReplicas == 0 && hasObjectOrExternal(hpa) {
		hc.setCondition(hpa, autoscalingv2.ScaledToZero, corev1.ConditionTrue, "ScaledToZero", "the HPA controller scaled the workload to zero")
	} else {
		hc.setCondition(hpa, autoscalingv2.ScaledToZero, corev1.ConditionFalse, "NotScaledToZero", "the HPA controller did not scale the workload to zero")
	}
}

// rescale writes desired to the target's scale, reading the scale again
// after a conflict.
func (hc *Controller) rescale(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, s *autoscalingv1.Scale, gr schema.GroupResource, desired int32) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s.Spec.Replicas = desired
		_, err := hc.scales.Scales(hpa.Namespace).Update(ctx, gr, s, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if latest, gerr := hc.scales.Scales(hpa.Namespace).Get(ctx, gr, hpa.Spec.ScaleTargetRef.Name, metav1.GetOptions{}); gerr == nil {
			*s = *latest
		}
		return err
	})
}

// computeReplicas is the largest replica count the metrics ask for, the
// metric that asked for it and every metric's status. When every metric
// failed, or some failed and the others would scale down, it is -1 and
// ScalingActive is the first failure's condition; otherwise ScalingActive
// is True, and an error says which metrics failed.
func (hc *Controller) computeReplicas(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, s *autoscalingv1.Scale, key string) (int32, string, []autoscalingv2.MetricStatus, error) {
	selector, err := hc.parseSelector(hpa, s.Status.Selector, key)
	if err != nil {
		return -1, "", nil, err
	}
	statuses := make([]autoscalingv2.MetricStatus, len(hpa.Spec.Metrics))
	var (
		replicas     int32
		metric       string
		invalid      int
		firstErr     error
		firstFailure autoscalingv2.HorizontalPodAutoscalerCondition
	)
	for i, spec := range hpa.Spec.Metrics {
		n, name, cond, err := hc.computeMetric(ctx, hpa, spec, s.Spec.Replicas, s.Status.Replicas, selector, &statuses[i])
		if err != nil {
			if invalid == 0 {
				firstFailure, firstErr = cond, err
			}
			invalid++
			continue
		}
		if replicas == 0 || n > replicas {
			replicas, metric = n, name
		}
	}
	if firstErr != nil {
		firstErr = fmt.Errorf("invalid metrics (%v invalid out of %v), first error is: %w", invalid, len(hpa.Spec.Metrics), firstErr)
	}
	if invalid >= len(hpa.Spec.Metrics) || (invalid > 0 && replicas < s.Spec.Replicas) {
		hc.setCondition(hpa, firstFailure.Type, firstFailure.Status, firstFailure.Reason, firstFailure.Message)
		return -1, "", statuses, firstErr
	}
	hc.setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from "+metric)
	return replicas, metric, statuses, firstErr
}

// parseSelector checks the target's selector: present, valid, and not
// also another autoscaler's pods.
func (hc *Controller) parseSelector(hpa *autoscalingv2.HorizontalPodAutoscaler, selector, key string) (labels.Selector, error) {
	if selector == "" {
		hc.recorder.Event(hpa, corev1.EventTypeWarning, "SelectorRequired", "selector is required")
		hc.setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "the HPA target's scale is missing a selector")
		return nil, errors.New("selector is required")
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		msg := fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		hc.recorder.Event(hpa, corev1.EventTypeWarning, "InvalidSelector", msg)
		hc.setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", msg)
		return nil, errors.New(msg)
	}
	if !hc.setSelector(key, sel) {
		return nil, fmt.Errorf("HPA %s/%s was deleted during reconciliation", hpa.Namespace, hpa.Name)
	}
	pods, err := hc.calc.pods.Pods(hpa.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	sets := make([]labels.Set, len(pods))
	for i, p := range pods {
		sets[i] = p.Labels
	}
	if others := hc.selecting(hpa.Namespace, sets); len(others) > 1 {
		msg := fmt.Sprintf("pods by selector %v are controlled by more than one HPA (e.g. %v)", selector, others)
		hc.recorder.Event(hpa, corev1.EventTypeWarning, "AmbiguousSelector", msg)
		hc.setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "AmbiguousSelector", msg)
		return nil, errors.New(msg)
	}
	return sel, nil
}

// unableToCompute records the failure of one metric as an event and
// returns the ScalingActive condition it would set.
func (hc *Controller) unableToCompute(hpa *autoscalingv2.HorizontalPodAutoscaler, reason string, err error) autoscalingv2.HorizontalPodAutoscalerCondition {
	hc.recorder.Event(hpa, corev1.EventTypeWarning, reason, err.Error())
	return autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse, Reason: reason,
		Message: fmt.Sprintf("the HPA was unable to compute the replica count: %v", err)}
}

// setStatus replaces the status's counts and metrics, keeping its
// conditions, and stamps lastScaleTime on a rescale.
func (hc *Controller) setStatus(hpa *autoscalingv2.HorizontalPodAutoscaler, current, desired int32, metrics []autoscalingv2.MetricStatus, rescaled bool) {
	gen := hpa.Generation
	hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: current, DesiredReplicas: desired,
		LastScaleTime: hpa.Status.LastScaleTime, CurrentMetrics: metrics, Conditions: hpa.Status.Conditions, ObservedGeneration: &gen}
	if rescaled {
		now := metav1.NewTime(hc.now())
		hpa.Status.LastScaleTime = &now
	}
}

// updateStatusIfNeeded writes hpa's status when it differs from original.
func (hc *Controller) updateStatusIfNeeded(ctx context.Context, original *autoscalingv2.HorizontalPodAutoscalerStatus, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	if equality.Semantic.DeepEqual(original, &hpa.Status) {
		return nil
	}
	if _, err := hc.client.AutoscalingV2().HorizontalPodAutoscalers(hpa.Namespace).UpdateStatus(ctx, hpa, metav1.UpdateOptions{}); err != nil {
		hc.recorder.Event(hpa, corev1.EventTypeWarning, "FailedUpdateStatus", err.Error())
		return fmt.Errorf("failed to update status for %s: %w", hpa.Name, err)
	}
	return nil
}

// setCondition sets a condition of hpa, its transition time only when
// its status changes.
func (hc *Controller) setCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, message string) {
	conds := hpa.Status.Conditions
	i := 0
	for i < len(conds) && conds[i].Type != t {
		i++
	}
	if i == len(conds) {
		conds = append(conds, autoscalingv2.HorizontalPodAutoscalerCondition{Type: t})
	}
	c := &conds[i]
	if c.Status != status {
		c.LastTransitionTime = metav1.NewTime(hc.now())
	}
	c.Status, c.Reason, c.Message = status, reason, message
	hpa.Status.Conditions = conds
}

func conditionTrue(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) bool {
	for _, c := range hpa.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasObjectOrExternal(hpa *autoscalingv2.HorizontalPodAutoscaler) bool {
	for _, m := range hpa.Spec.Metrics {
		if m.Type == autoscalingv2.ObjectMetricSourceType || m.Type == autoscalingv2.ExternalMetricSourceType {
			return true
		}
	}
	return false
}

// quantity is a metric's value as metrics-server prints it: memory in
// binary units, the rest in decimal milli-units.
func quantity(name corev1.ResourceName, milli int64) resource.Quantity {
	format := resource.DecimalSI
	if name == corev1.ResourceMemory {
		format = resource.BinarySI
	}
	return *resource.NewMilliQuantity(milli, format)
}
