package endpointutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	endpointsliceutil "k8s.io/endpointslice/util"
)

// TestPodChangedAsKube_G10 holds PodChanged to k8s.io/endpointslice/util's
// GetPodUpdateProjectionKey, kube's controllers' rule: every update kube
// acts on, PodChanged acts on; a change of phase, node or status.podIP
// alone only PodChanged acts on.
func TestPodChangedAsKube_G10(t *testing.T) {
	t.Parallel()
	ready := func(p *corev1.Pod, ok bool) *corev1.Pod {
		status := corev1.ConditionFalse
		if ok {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		return p
	}
	base := func() *corev1.Pod {
		return ready(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "1", Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{NodeName: "n1", Hostname: "h", Subdomain: "web"},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}},
		}, false)
	}
	tests := []struct {
		name     string
		change   func(p *corev1.Pod)
		want     bool // PodChanged acts on it
		wantKube bool // GetPodUpdateProjectionKey acts on it
	}{
		{"nothing but the resourceVersion", func(*corev1.Pod) {}, false, false},
		{"an annotation", func(p *corev1.Pod) { p.Annotations = map[string]string{"a": "b"} }, false, false},
		{"labels", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }, true, true},
		{"readiness", func(p *corev1.Pod) { ready(p, true) }, true, true},
		{"deletion", func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }, true, true},
		{"pod IPs", func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.2"}} }, true, true},
		{"a second pod IP", func(p *corev1.Pod) { p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: "fd00::1"}) }, true, true},
		{"hostname", func(p *corev1.Pod) { p.Spec.Hostname = "h2" }, true, true},
		{"subdomain", func(p *corev1.Pod) { p.Spec.Subdomain = "other" }, true, true},
		{"phase alone: kubegate only", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, true, false},
		{"node alone: kubegate only", func(p *corev1.Pod) { p.Spec.NodeName = "n2" }, true, false},
		{"status.podIP alone: kubegate only", func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.9" }, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			old, cur := base(), base()
			cur.ResourceVersion = "2"
			tt.change(cur)
			changed, _ := PodChanged(old, cur)
			kube := endpointsliceutil.GetPodUpdateProjectionKey(old, cur) != nil
			if changed != tt.want || kube != tt.wantKube {
				t.Errorf("PodChanged() = %v, GetPodUpdateProjectionKey() acts = %v; want %v, %v", changed, kube, tt.want, tt.wantKube)
			}
		})
	}
}
