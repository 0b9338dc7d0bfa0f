package plugins

import (
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// tolerates reports whether one of tolerations tolerates taint, by
// component-helpers' rule, the one kube-scheduler applies. The Lt and Gt
// operators, behind a feature gate that is off by default in
// kube-scheduler, tolerate nothing.
func tolerates(tolerations []v1.Toleration, taint *v1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(klog.Background(), tolerations, taint, false)
}

// untoleratedTaint returns the first NoSchedule or NoExecute taint that
// tolerations do not tolerate, found by component-helpers'
// FindMatchingUntoleratedTaint as kube-scheduler finds it.
func untoleratedTaint(taints []v1.Taint, tolerations []v1.Toleration) (v1.Taint, bool) {
	return corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), taints, tolerations, func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}, false)
}
