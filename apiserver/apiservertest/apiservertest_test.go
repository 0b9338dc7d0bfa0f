package apiservertest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/admission"
	"github.com/kubegate/kubegate/internal/testwait"
)

// A pod created in the default namespace is admitted with the namespace's
// default service account, which the server's controller made.
func TestStartServesWithAdmission(t *testing.T) {
	s := Start(t)
	ctx := context.Background()
	testwait.For(t, 10*time.Second, "the default service account", func() (bool, string) {
		_, err := s.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, "not yet"
	})
	pod, err := s.Client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.ServiceAccountName != "default" {
		t.Errorf("serviceAccountName %q, want default (ServiceAccount admission)", pod.Spec.ServiceAccountName)
	}
}

// WithAdmission replaces the chain: with TaintNodesByCondition alone a new
// node is tainted not-ready, and a pod gets no service account, as no
// ServiceAccount admission runs; with no plugins the node is stored as
// sent.
func TestStartWithAdmission(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}

	s := Start(t, WithAdmission(admission.TaintNodesByCondition()), WithoutDefaultServiceAccounts())
	n, err := s.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != corev1.TaintNodeNotReady {
		t.Errorf("node taints %v, want %s alone (TaintNodesByCondition)", n.Spec.Taints, corev1.TaintNodeNotReady)
	}
	p, err := s.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.ServiceAccountName != "" {
		t.Errorf("serviceAccountName %q, want none (no ServiceAccount admission)", p.Spec.ServiceAccountName)
	}

	s = Start(t, WithAdmission(), WithoutDefaultServiceAccounts())
	if n, err = s.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(n.Spec.Taints) != 0 {
		t.Errorf("node taints %v, want none without admission", n.Spec.Taints)
	}
}
