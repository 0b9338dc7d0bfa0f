package nodesim

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A running pod's ephemeral containers are reported running as soon as
// they are added, and a resize is applied at once: the containers'
// statuses report the new cpu and memory, and no resize stays pending
// (G.13).
func TestEphemeralContainersAndResizeAreReported_G13(t *testing.T) {
	t.Parallel()
	c := newFakeCluster()
	start(t, c, Options{Count: 1})
	p := newPod("web", "node-1", "app")
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
	pods := c.CoreV1().Pods("default")
	if _, err := pods.Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p = waitPod(t, c, "web", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if r := p.Status.ContainerStatuses[0].Resources; r == nil || r.Requests.Cpu().String() != "100m" || len(r.Requests) != 1 || r.Limits != nil {
		t.Errorf("resources reported = %v, want the cpu request alone", r)
	}

	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox"}}}
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("250m")
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: "Deferred"})
	if _, err := pods.Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p = waitPod(t, c, "web", "running its ephemeral container", func(p *corev1.Pod) bool {
		es := p.Status.EphemeralContainerStatuses
		return len(es) == 1 && es[0].Name == "debugger" && es[0].State.Running != nil
	})
	if r := p.Status.ContainerStatuses[0].Resources; r == nil || r.Requests.Cpu().String() != "250m" {
		t.Errorf("resources reported after the resize = %v, want cpu 250m", r)
	}
	if got := p.Status.ContainerStatuses[0].AllocatedResources.Cpu().String(); got != "250m" {
		t.Errorf("allocated cpu = %s, want 250m", got)
	}
	if condition(p.Status.Conditions, corev1.PodResizePending) != "absent" || condition(p.Status.Conditions, corev1.PodReady) != "True" {
		t.Errorf("conditions = %v, want no PodResizePending and the pod Ready", p.Status.Conditions)
	}
}
