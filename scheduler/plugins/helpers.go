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
