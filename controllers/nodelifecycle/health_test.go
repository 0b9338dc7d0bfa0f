package nodelifecycle_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/controllers/nodelifecycle"
	"github.com/kubegate/kubegate/controllers/tainteviction"
	"github.com/kubegate/kubegate/internal/testwait"
)

// readyNode creates a Ready node with a lease renewed now.
func readyNode(t *testing.T, client kubernetes.Interface, name string, taints ...corev1.Taint) {
	t.Helper()
	ctx := context.Background()
	now := metav1.Now()
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	renew(t, client, name)
}

// renew writes node name's lease with renewTime now.
func renew(t *testing.T, client kubernetes.Interface, name string) {
	leases := client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	ctx := context.Background()
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now}}, metav1.CreateOptions{})
	} else if err == nil {
		lease.Spec.RenewTime = &now
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil && !apierrors.IsConflict(err) {
		t.Errorf("renew lease %s: %v", name, err)
	}
}

// keepRenewing renews node name's lease every 200 ms until the test ends.
func keepRenewing(t *testing.T, client kubernetes.Interface, name string) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				renew(t, client, name)
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

func runningPod(t *testing.T, client kubernetes.Interface, name, node string, tolerations ...corev1.Toleration) {
	t.Helper()
	ctx := context.Background()
	pod, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: tolerations, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Through the API server, with short periods: a node that stops renewing
// its lease goes Unknown (NodeStatusUnknown), its pods are marked not
// ready, it is tainted unreachable:NoExecute, and the taint eviction
// controller deletes the pod that tolerates the taint for 1 s, while the
// one tolerating it for ever stays; the node that keeps renewing stays
// Ready and untainted. A pod that does not tolerate a NoExecute taint of
// another key is deleted at once, after being marked DisruptionTarget.
func TestUnreachableNodeIsTaintedAndItsPodsEvicted_G13(t *testing.T) {
	s := apiservertest.Start(t)
	client := s.Client
	ctx := context.Background()
	readyNode(t, client, "healthy")
	keepRenewing(t, client, "healthy")
	readyNode(t, client, "lost")
	readyNode(t, client, "dedicated", corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoExecute})
	keepRenewing(t, client, "dedicated")
	unreachable := func(seconds *int64) corev1.Toleration {
		return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
	}
	runningPod(t, client, "brief", "lost", unreachable(ptr.To[int64](1)))
	runningPod(t, client, "forever", "lost", unreachable(nil))
	runningPod(t, client, "intolerant", "dedicated")

	lifecycle := controllers.Descriptor{Name: "nodelifecycle", New: func(c *controllers.Context) (controllers.Controller, error) {
		return nodelifecycle.New(c.Client, nodelifecycle.Options{Factory: c.Informers, Logger: c.Logger,
			MonitorPeriod: 100 * time.Millisecond, GracePeriod: 2 * time.Second, EvictionQPS: 100})
	}}
	controllertest.Run(t, s, manager.Options{Logger: slog.New(slog.DiscardHandler),
		Descriptors: []controllers.Descriptor{lifecycle, tainteviction.Descriptor}})

	// The intolerant pod goes at once (graceful deletion: the node exists).
	testwait.For(t, 20*time.Second, "pod intolerant deleted", func() (bool, string) {
		pod, err := client.CoreV1().Pods("default").Get(ctx, "intolerant", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return pod.DeletionTimestamp != nil, "not deleted"
	})
	pod, err := client.CoreV1().Pods("default").Get(ctx, "intolerant", metav1.GetOptions{})
	if err == nil {
		var found bool
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "DeletionByTaintManager" {
				found = true
			}
		}
		if !found {
			t.Errorf("evicted pod conditions %+v lack DisruptionTarget DeletionByTaintManager", pod.Status.Conditions)
		}
	}

	testwait.For(t, 30*time.Second, "node lost Unknown and tainted", func() (bool, string) {
		node, err := client.CoreV1().Nodes().Get(ctx, "lost", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var ready *corev1.NodeCondition
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == corev1.NodeReady {
				ready = &node.Status.Conditions[i]
			}
		}
		tainted := false
		for _, tt := range node.Spec.Taints {
			if tt.Key == corev1.TaintNodeUnreachable && tt.Effect == corev1.TaintEffectNoExecute && tt.TimeAdded != nil {
				tainted = true
			}
		}
		ok := ready != nil && ready.Status == corev1.ConditionUnknown && ready.Reason == "NodeStatusUnknown" &&
			ready.Message == "Kubelet stopped posting node status." && tainted
		return ok, "ready " + fmtCond(ready) + " taints " + taints(node.Spec.Taints)
	})
	testwait.For(t, 20*time.Second, "pod brief deleted after its toleration", func() (bool, string) {
		pod, err := client.CoreV1().Pods("default").Get(ctx, "brief", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return pod.DeletionTimestamp != nil, "not deleted"
	})
	forever, err := client.CoreV1().Pods("default").Get(ctx, "forever", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if forever.DeletionTimestamp != nil {
		t.Error("the pod tolerating unreachable for ever was deleted")
	}
	for _, c := range forever.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionFalse {
			t.Errorf("pod on the lost node is still Ready: %+v", c)
		}
	}
	healthy, err := client.CoreV1().Nodes().Get(ctx, "healthy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(healthy.Spec.Taints) != 0 {
		t.Errorf("the healthy node got taints %s", taints(healthy.Spec.Taints))
	}
}

func fmtCond(c *corev1.NodeCondition) string {
	if c == nil {
		return "none"
	}
	return string(c.Status) + "/" + c.Reason
}
