package nodelifecycle_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegate/kubegate/apiserver/admission"
	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/controllers/nodelifecycle"
	"github.com/kubegate/kubegate/internal/testwait"
)

// taints writes taints as key=value:Effect, comma separated.
func taints(ts []corev1.Taint) string {
	var s []string
	for _, t := range ts {
		s = append(s, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
	}
	return strings.Join(s, ",")
}

func cond(t corev1.NodeConditionType, s corev1.ConditionStatus) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: s}
}

const (
	notReady    = "node.kubernetes.io/not-ready=:NoSchedule"
	unreachable = "node.kubernetes.io/unreachable=:NoSchedule"
)

func TestTaints_D8(t *testing.T) {
	t.Parallel()
	ready := cond(corev1.NodeReady, corev1.ConditionTrue)
	gpu := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name          string
		conditions    []corev1.NodeCondition
		unschedulable bool
		taints        []corev1.Taint
		want          string
		changed       bool
	}{
		{"ready lifts not-ready", []corev1.NodeCondition{ready},
			false, []corev1.Taint{gpu, {Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}, "dedicated=gpu:NoSchedule", true},
		{"ready and untainted: nothing to do", []corev1.NodeCondition{ready}, false, []corev1.Taint{gpu}, "dedicated=gpu:NoSchedule", false},
		{"not ready", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse)}, false, []corev1.Taint{gpu},
			"dedicated=gpu:NoSchedule," + notReady, true},
		{"unknown swaps not-ready for unreachable", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionUnknown)}, false,
			[]corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}, unreachable, true},
		{"pressures and network, in the conditions' order", []corev1.NodeCondition{
			cond(corev1.NodeNetworkUnavailable, corev1.ConditionTrue), cond(corev1.NodeMemoryPressure, corev1.ConditionTrue),
			cond(corev1.NodeDiskPressure, corev1.ConditionTrue), cond(corev1.NodePIDPressure, corev1.ConditionTrue),
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse), ready}, false, nil,
			"node.kubernetes.io/network-unavailable=:NoSchedule,node.kubernetes.io/memory-pressure=:NoSchedule," +
				"node.kubernetes.io/disk-pressure=:NoSchedule,node.kubernetes.io/pid-pressure=:NoSchedule", true},
		{"pressure False lifts its taint", []corev1.NodeCondition{ready, cond(corev1.NodeDiskPressure, corev1.ConditionFalse)}, false,
			[]corev1.Taint{{Key: corev1.TaintNodeDiskPressure, Effect: corev1.TaintEffectNoSchedule}}, "", true},
		{"unschedulable, last", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse)}, true, nil,
			notReady + ",node.kubernetes.io/unschedulable=:NoSchedule", true},
		{"schedulable again", []corev1.NodeCondition{ready}, false,
			[]corev1.Taint{{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}, "", true},
		{"matched by key and effect, the value kept", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse)}, false,
			[]corev1.Taint{{Key: corev1.TaintNodeNotReady, Value: "x", Effect: corev1.TaintEffectNoSchedule}},
			"node.kubernetes.io/not-ready=x:NoSchedule", false},
		{"other effects are not ours", []corev1.NodeCondition{ready}, false,
			[]corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}, {Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectPreferNoSchedule}},
			"node.kubernetes.io/not-ready=:NoExecute,node.kubernetes.io/unreachable=:PreferNoSchedule", false},
		{"no conditions: the not-ready taint goes, as in kube", nil, false,
			[]corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}, "", true},
		{"other conditions are not mapped", []corev1.NodeCondition{ready, cond("FrequentKubeletRestart", corev1.ConditionTrue)}, false, nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &corev1.Node{Spec: corev1.NodeSpec{Unschedulable: tt.unschedulable, Taints: tt.taints},
				Status: corev1.NodeStatus{Conditions: tt.conditions}}
			before := taints(tt.taints)
			got, changed := nodelifecycle.Taints(node)
			if taints(got) != tt.want || changed != tt.changed {
				t.Errorf("got %q (changed %v), want %q (changed %v)", taints(got), changed, tt.want, tt.changed)
			}
			if taints(node.Spec.Taints) != before {
				t.Errorf("the node's taints were changed to %q", taints(node.Spec.Taints))
			}
		})
	}
}

// serve runs kubegate's API server, with kube-apiserver's
// TaintNodesByCondition admission, on a bolt store, admitting everyone as an admin, and returns a clientset for it.
func serve(t *testing.T) kubernetes.Interface {
	t.Helper()
	return apiservertest.Start(t, apiservertest.WithAdmission(admission.TaintNodesByCondition()), apiservertest.WithoutDefaultServiceAccounts()).Client
}

func run(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	c, err := nodelifecycle.New(client, nodelifecycle.Options{Workers: 2, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// waitTaints waits until node name carries exactly want.
func waitTaints(t *testing.T, client kubernetes.Interface, name, want string) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	testwait.For(t, 10*time.Second, "node "+name+" taints "+want, func() (bool, string) {
		var err error
		node, err = client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return taints(node.Spec.Taints) == want, "taints " + taints(node.Spec.Taints)
	})
	return node
}

func setReady(t *testing.T, client kubernetes.Interface, node *corev1.Node, status corev1.ConditionStatus) {
	t.Helper()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(context.Background(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Through the API server: a node registered Ready is tainted not-ready by
// admission and has the taint lifted; turned NotReady it gets it back,
// Unknown swaps it for unreachable, Ready again lifts it, cordoning adds
// the unschedulable taint, and a taint of someone else's stays throughout.
func TestAgainstAPIServer_D8(t *testing.T) {
	t.Parallel()
	client := serve(t)
	ctx := context.Background()
	created, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := taints(created.Spec.Taints), "dedicated=gpu:NoSchedule,"+notReady; got != want {
		t.Fatalf("created with taints %q, want %q (TaintNodesByCondition)", got, want)
	}
	run(t, client)

	node := waitTaints(t, client, "n1", "dedicated=gpu:NoSchedule")
	setReady(t, client, node, corev1.ConditionFalse)
	node = waitTaints(t, client, "n1", "dedicated=gpu:NoSchedule,"+notReady)
	setReady(t, client, node, corev1.ConditionUnknown)
	node = waitTaints(t, client, "n1", "dedicated=gpu:NoSchedule,"+unreachable)
	setReady(t, client, node, corev1.ConditionTrue)
	node = waitTaints(t, client, "n1", "dedicated=gpu:NoSchedule")
	node.Spec.Unschedulable = true
	if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitTaints(t, client, "n1", "dedicated=gpu:NoSchedule,node.kubernetes.io/unschedulable=:NoSchedule")
}

func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	if _, err := nodelifecycle.New(nil, nodelifecycle.Options{}); err == nil {
		t.Error("no client: got no error")
	}
	if _, err := nodelifecycle.New(fake.NewClientset(), nodelifecycle.Options{Workers: -1}); err == nil {
		t.Error("negative workers: got no error")
	}
}
