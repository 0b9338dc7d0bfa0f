package up

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/internal/testwait"
)

func notReadyTainted(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeNotReady && t.Effect == corev1.TaintEffectNoSchedule
	})
}

// runPod creates a pod and waits for it to run, returning its node.
func runPod(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var node string
	testwait.For(t, 30*time.Second, "pod "+name+" running", func() (bool, string) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		node = p.Spec.NodeName
		return p.Status.Phase == corev1.PodRunning, fmt.Sprintf("on %q, %s", node, p.Status.Phase)
	})
	return node
}

// The nodes kubegate up simulates are registered through the API server,
// which taints them not-ready (TaintNodesByCondition, D.8); the node
// lifecycle taint pass lifts the taint once they report Ready, so pods are
// scheduled and run. A node that turns NotReady is tainted again and new
// pods go elsewhere.
func TestNodesBecomeSchedulable_D8(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cluster")
	cs, _ := clusterWithNodes(t, dir, freePort(t), 2)
	ctx := context.Background()
	testwait.For(t, 30*time.Second, "two Ready nodes without the not-ready taint", func() (bool, string) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ok := 0
		for _, n := range nodes.Items {
			if !notReadyTainted(&n) {
				ok++
			}
		}
		return len(nodes.Items) == 2 && ok == 2, fmt.Sprintf("%d nodes, %d untainted", len(nodes.Items), ok)
	})
	runPod(t, cs, "first")

	node, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			node.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "node-1 tainted not-ready again", func() (bool, string) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return notReadyTainted(n), fmt.Sprintf("taints %v", n.Spec.Taints)
	})
	for _, name := range []string{"second", "third"} {
		if got := runPod(t, cs, name); got != "node-2" {
			t.Errorf("pod %s ran on %s, want node-2 (node-1 is not ready)", name, got)
		}
	}
}
