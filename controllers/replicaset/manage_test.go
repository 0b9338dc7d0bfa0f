package replicaset

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

// One sync creates or deletes at most burst pods, and expects as many
// (G.2).
func TestManageHonoursBurst_G2(t *testing.T) {
	client := fake.NewClientset()
	// The fake does not generate names; do it as the API server would.
	var n atomic.Int32
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if p, ok := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod); ok && p.Name == "" {
			p.Name = fmt.Sprintf("%s%d", p.GenerateName, n.Add(1))
		}
		return false, nil, nil
	})
	rc := &Controller{
		kind:   &kind{gvk: appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), object: func(rs *appsv1.ReplicaSet) runtime.Object { return rs }},
		client: client, log: slog.New(slog.DiscardHandler), now: time.Now, recorder: record.NewFakeRecorder(100), burst: 3,
		deleting: map[string]map[string]bool{}, expectedAt: map[string]time.Time{},
	}
	five := int32(5)
	l := map[string]string{"app": "b"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default", UID: "u"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &five, Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}}}}
	ctx := context.Background()
	if err := rc.manage(ctx, "default/b", rs, nil); err != nil {
		t.Fatal(err)
	}
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Errorf("created %d pods, want burst 3", len(pods.Items))
	}
	if rc.expectations.Satisfied("default/b") {
		t.Error("expectations satisfied before the creations were seen")
	}

	zero := int32(0)
	rs.Spec.Replicas = &zero
	var active []*corev1.Pod
	for i := range 5 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default", Labels: l}}
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		active = append(active, p)
	}
	before := len(client.Actions())
	if err := rc.manage(ctx, "default/b", rs, active); err != nil {
		t.Fatal(err)
	}
	deletes := 0
	for _, a := range client.Actions()[before:] {
		if a.GetVerb() == "delete" {
			deletes++
		}
	}
	if deletes != 3 {
		t.Errorf("deleted %d pods, want burst 3", deletes)
	}
}
