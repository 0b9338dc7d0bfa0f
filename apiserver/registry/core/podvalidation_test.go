package core_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/registry/core"
)

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest", Command: []string{"app"},
			Ports: []corev1.ContainerPort{{ContainerPort: 2580}},
		}}},
	}
}

// A pod update, of the pod or of its status, may not add, change or
// remove the AppArmor or mirror-pod annotations, which Pod Security and
// the kubelet read as spec; a mirror pod names its node (D.5).
func TestPodAnnotationUpdates_D5(t *testing.T) {
	t.Parallel()
	const armor = "container.apparmor.security.beta.kubernetes.io/app"
	pod := func(annotations map[string]string) *corev1.Pod {
		p := testPod("p")
		p.Annotations = annotations
		p.Spec.NodeName = "n1"
		core.DefaultPod(p)
		return p
	}
	for _, tc := range []struct {
		name     string
		old, new map[string]string
		want     string
	}{
		{"add apparmor", nil, map[string]string{armor: "unconfined"}, "metadata.annotations[" + armor + "]: Forbidden: may not add AppArmor annotations"},
		{"change apparmor", map[string]string{armor: "runtime/default"}, map[string]string{armor: "unconfined"}, "may not remove or update AppArmor annotations"},
		{"remove mirror", map[string]string{"kubernetes.io/config.mirror": "x"}, nil, "may not remove or update mirror pod annotation"},
		{"add mirror", nil, map[string]string{"kubernetes.io/config.mirror": "x"}, "may not add mirror pod annotation"},
		{"other annotations", map[string]string{"a": "1"}, map[string]string{"a": "2", "b": "3"}, ""},
		{"apparmor kept", map[string]string{armor: "unconfined"}, map[string]string{armor: "unconfined", "b": "3"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := core.ValidatePod(pod(tc.new), pod(tc.old))
			if got := errs.ToAggregate(); (tc.want == "") != (got == nil) || (got != nil && !strings.Contains(got.Error(), tc.want)) {
				t.Errorf("got %v, want %q", got, tc.want)
			}
		})
	}
	unbound := pod(map[string]string{"kubernetes.io/config.mirror": "x"})
	unbound.Spec.NodeName = ""
	if errs := core.ValidatePod(unbound, nil); errs.ToAggregate() == nil || !strings.Contains(errs.ToAggregate().Error(), "must set spec.nodeName if mirror pod annotation is set") {
		t.Errorf("an unbound mirror pod: got %v", errs.ToAggregate())
	}
}
