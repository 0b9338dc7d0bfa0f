package controllers

import corev1 "k8s.io/api/core/v1"

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
