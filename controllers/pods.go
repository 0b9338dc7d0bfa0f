package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodReadyCondition returns pod's Ready condition, nil without one.
func PodReadyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// PodReady reports whether pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	c := PodReadyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// PodAvailable reports whether pod has been ready for at least
// minReadySeconds at now (at once when that is 0), as kube's workload
// controllers count a pod available.
func PodAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := PodReadyCondition(pod)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	return minReadySeconds == 0 ||
		!c.LastTransitionTime.IsZero() && !c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}
