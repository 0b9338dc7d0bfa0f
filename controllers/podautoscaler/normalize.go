package podautoscaler

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// Without a behavior, a scale-up goes at most to twice the replicas, or
// four, whichever is more.
const (
	scaleUpFactor  = 2.0
	scaleUpMinimum = 4.0
)

// recommendation is a replica count the metrics asked for, and when.
type recommendation struct {
	replicas int32
	at       time.Time
}

// scaleEvent is a change of replicas the controller made, and when;
// an outdated one is past every policy's period and may be reused.
type scaleEvent struct {
	change   int32
	at       time.Time
	outdated bool
}

// history is what the controller remembers of one autoscaler between
// syncs, as kube's does (in memory: a restart forgets it).
type history struct {
	recommendations      []recommendation
	scaleUps, scaleDowns []scaleEvent
}

// limits are what the normalizing steps need.
type limits struct {
	min, max, current, desired int32
	up, down                   *autoscalingv2.HPAScalingRules
}

// normalize is desired within the autoscaler's bounds without a
// behavior: the highest recommendation of the downscale stabilization
// window, then minReplicas, maxReplicas and the scale-up limit (G.19).
func (c *Controller) normalize(hpa *autoscalingv2.HorizontalPodAutoscaler, h *history, current, desired, minReplicas int32) int32 {
	stabilized := c.stabilize(h, desired)
	if stabilized != desired {
		c.setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation")
	} else {
		c.setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size")
	}
	out, reason, message := clampWithoutBehavior(current, stabilized, minReplicas, hpa.Spec.MaxReplicas)
	status := corev1.ConditionFalse
	if out != stabilized {
		status = corev1.ConditionTrue
	}
	c.setCondition(hpa, autoscalingv2.ScalingLimited, status, reason, message)
	return out
}

// stabilize records desired and returns the highest recommendation within
// the downscale stabilization window; one older sample is replaced rather
// than the list growing.
func (c *Controller) stabilize(h *history, desired int32) int32 {
	now := c.now()
	cutoff := now.Add(-c.settings.DownscaleStabilization)
	highest := desired
	old := -1
	for i, r := range h.recommendations {
		if r.at.Before(cutoff) {
			old = i
		} else if r.replicas > highest {
			highest = r.replicas
		}
	}
	h.remember(old, recommendation{desired, now})
	return highest
}

func (h *history) remember(old int, r recommendation) {
	if old >= 0 {
		h.recommendations[old] = r
		return
	}
	h.recommendations = append(h.recommendations, r)
}

func clampWithoutBehavior(current, desired, minReplicas, maxReplicas int32) (int32, string, string) {
	upLimit := int32(math.Max(scaleUpFactor*float64(current), scaleUpMinimum))
	highest, reason, message := maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
	if maxReplicas > upLimit {
		highest, reason, message = upLimit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
	}
	switch {
	case desired < minReplicas:
		return minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
	case desired > highest:
		return highest, reason, message
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// normalizeWithBehavior is desired within the autoscaler's bounds with a
// behavior: stabilized between the lowest recommendation of the scale-up
// window and the highest of the scale-down window, then limited by the
// policies' rates and minReplicas and maxReplicas (G.19).
func (c *Controller) normalizeWithBehavior(hpa *autoscalingv2.HorizontalPodAutoscaler, h *history, current, desired, minReplicas int32) int32 {
	b := hpa.Spec.Behavior
	l := limits{min: minReplicas, max: hpa.Spec.MaxReplicas, current: current, desired: desired,
		up: rulesOrDefault(b.ScaleUp, true, 0), down: rulesOrDefault(b.ScaleDown, false, int32(c.settings.DownscaleStabilization.Seconds()))}
	stabilized, reason, message := c.stabilizeWithBehavior(h, l)
	if stabilized != desired {
		c.setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, reason, message)
	} else {
		c.setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size")
	}
	l.desired = stabilized
	out, reason, message := c.limitRate(h, l)
	status := corev1.ConditionFalse
	if out != stabilized {
		status = corev1.ConditionTrue
	}
	c.setCondition(hpa, autoscalingv2.ScalingLimited, status, reason, message)
	return out
}

// rulesOrDefault is r, or the rules the API server defaults a missing
// side to, with a missing select policy Max and a missing window window
// (the scale-down window is the controller's
// --horizontal-pod-autoscaler-downscale-stabilization).
func rulesOrDefault(r *autoscalingv2.HPAScalingRules, up bool, window int32) *autoscalingv2.HPAScalingRules {
	var out autoscalingv2.HPAScalingRules
	if r != nil {
		out = *r.DeepCopy()
	} else if up {
		out.Policies = []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}
	} else {
		out.Policies = []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}
	}
	if out.SelectPolicy == nil {
		p := autoscalingv2.MaxChangePolicySelect
		out.SelectPolicy = &p
	}
	if out.StabilizationWindowSeconds == nil {
		out.StabilizationWindowSeconds = &window
	}
	return &out
}

func (c *Controller) stabilizeWithBehavior(h *history, l limits) (int32, string, string) {
	now := c.now()
	upCutoff := now.Add(-time.Duration(*l.up.StabilizationWindowSeconds) * time.Second)
	downCutoff := now.Add(-time.Duration(*l.down.StabilizationWindowSeconds) * time.Second)
	upRec, downRec := l.desired, l.desired
	old := -1
	for i, r := range h.recommendations {
		if r.at.After(upCutoff) {
			upRec = min(upRec, r.replicas)
		}
		if r.at.After(downCutoff) {
			downRec = max(downRec, r.replicas)
		}
		if r.at.Before(upCutoff) && r.at.Before(downCutoff) {
			old = i
		}
	}
	out := max(l.current, upRec)
	out = min(out, downRec)
	h.remember(old, recommendation{l.desired, now})
	if l.desired >= l.current {
		return out, "ScaleUpStabilized", "recent recommendations were lower than current one, applying the lowest recent recommendation"
	}
	return out, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"
}

// limitRate keeps a change within the policies' rates and the replica
// bounds.
func (c *Controller) limitRate(h *history, l limits) (int32, string, string) {
	now := c.now()
	switch {
	case l.desired > l.current:
		upLimit := max(scaleUpLimit(now, l.current, h.scaleUps, h.scaleDowns, l.up), l.current)
		highest, reason, message := l.max, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
		if highest > upLimit {
			highest, reason, message = upLimit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
		}
		if l.desired > highest {
			return highest, reason, message
		}
	case l.desired < l.current:
		downLimit := min(scaleDownLimit(now, l.current, h.scaleUps, h.scaleDowns, l.down), l.current)
		lowest, reason, message := l.min, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
		if lowest < downLimit {
			lowest, reason, message = downLimit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"
		}
		if l.desired < lowest {
			return lowest, reason, message
		}
	}
	return l.desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// changeWithin sums the changes of events within the last period seconds.
func changeWithin(now time.Time, period int32, events []scaleEvent) int32 {
	cutoff := now.Add(-time.Duration(period) * time.Second)
	var n int32
	for _, e := range events {
		if e.at.After(cutoff) {
			n += e.change
		}
	}
	return n
}

// scaleUpLimit is the most replicas the rules allow now: per policy, the
// replicas at the start of its period plus its pods or percent (rounded
// up), the largest of them under Max, the smallest under Min.
func scaleUpLimit(now time.Time, current int32, ups, downs []scaleEvent, r *autoscalingv2.HPAScalingRules) int32 {
	if *r.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	pickMin := *r.SelectPolicy == autoscalingv2.MinChangePolicySelect
	result := int32(math.MinInt32)
	if pickMin {
		result = math.MaxInt32
	}
	for _, p := range r.Policies {
		start := current - changeWithin(now, p.PeriodSeconds, ups) + changeWithin(now, p.PeriodSeconds, downs)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start + p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		if pickMin {
			result = min(result, proposed)
		} else {
			result = max(result, proposed)
		}
	}
	return result
}

// scaleDownLimit is the fewest replicas the rules allow now: per policy,
// the replicas at the start of its period less its pods or percent
// (rounded down), the smallest of them under Max, the largest under Min.
func scaleDownLimit(now time.Time, current int32, ups, downs []scaleEvent, r *autoscalingv2.HPAScalingRules) int32 {
	if *r.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	pickMax := *r.SelectPolicy == autoscalingv2.MinChangePolicySelect
	result := int32(math.MaxInt32)
	if pickMax {
		result = math.MinInt32
	}
	for _, p := range r.Policies {
		start := current - changeWithin(now, p.PeriodSeconds, ups) + changeWithin(now, p.PeriodSeconds, downs)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		if pickMax {
			result = max(result, proposed)
		} else {
			result = min(result, proposed)
		}
	}
	return result
}

// recordScale remembers a change the controller made, for the policies'
// periods; without a behavior nothing is kept.
func (c *Controller) recordScale(b *autoscalingv2.HorizontalPodAutoscalerBehavior, h *history, from, to int32) {
	if b == nil {
		return
	}
	now := c.now()
	events, rules, change := &h.scaleUps, b.ScaleUp, to-from
	if to <= from {
		events, rules, change = &h.scaleDowns, b.ScaleDown, from-to
	}
	var longest int32
	if rules != nil {
		for _, p := range rules.Policies {
			longest = max(longest, p.PeriodSeconds)
		}
	}
	cutoff := now.Add(-time.Duration(longest) * time.Second)
	reuse := -1
	for i := range *events {
		if (*events)[i].at.Before(cutoff) {
			(*events)[i].outdated = true
		}
		if (*events)[i].outdated {
			reuse = i
		}
	}
	e := scaleEvent{change: change, at: now}
	if reuse >= 0 {
		(*events)[reuse] = e
		return
	}
	*events = append(*events, e)
}
