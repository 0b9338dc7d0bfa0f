package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
)

func TestTaintNodesByCondition_D8(t *testing.T) {
	t.Parallel()
	kubelet := authn.User{Name: "system:node:n1", Groups: []string{"system:nodes", authn.AllAuthenticated}}
	admin := authn.User{Name: "admin", Groups: []string{"system:masters", authn.AllAuthenticated}}
	notReady := "node.kubernetes.io/not-ready=:NoSchedule"
	tests := []struct {
		name        string
		op          apiserver.Operation
		subresource string
		user        authn.User
		taints      []corev1.Taint
		want        string
	}{
		{"a new node is tainted", apiserver.Create, "", admin, nil, notReady},
		{"its own kubelet's too", apiserver.Create, "", kubelet, nil, notReady},
		{"after the taints it has", apiserver.Create, "", admin, []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: "NoSchedule"}},
			"dedicated=gpu:NoSchedule," + notReady},
		{"not twice, whatever the value", apiserver.Create, "", kubelet, []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Value: "x", Effect: "NoSchedule"}},
			"node.kubernetes.io/not-ready=x:NoSchedule"},
		{"another effect does not count", apiserver.Create, "", admin, []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: "NoExecute"}},
			"node.kubernetes.io/not-ready=:NoExecute," + notReady},
		{"updates are left alone", apiserver.Update, "", admin, nil, ""},
		{"a subresource is left alone", apiserver.Create, "status", kubelet, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &corev1.Node{Spec: corev1.NodeSpec{Taints: tt.taints}}
			node.Name = "n1"
			a := &apiserver.AdmissionAttributes{Operation: tt.op, Resource: nodesGVR, Subresource: tt.subresource, Name: "n1", User: tt.user, Object: node}
			if err := TaintNodesByCondition().Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, taint := range node.Spec.Taints {
				got = append(got, fmt.Sprintf("%s=%s:%s", taint.Key, taint.Value, taint.Effect))
			}
			if strings.Join(got, ",") != tt.want {
				t.Errorf("taints: got %q, want %q", strings.Join(got, ","), tt.want)
			}
		})
	}
}

func TestTaintNodesByConditionOtherObjects_D8(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{}
	a := &apiserver.AdmissionAttributes{Operation: apiserver.Create, Resource: podsGVR, Namespace: "default", Object: pod}
	if err := TaintNodesByCondition().Admit(context.Background(), a); err != nil {
		t.Fatalf("a pod: %v", err)
	}
	// kube refuses a nodes create that does not carry a Node.
	a = &apiserver.AdmissionAttributes{Operation: apiserver.Create, Resource: nodesGVR, Name: "n1", Object: &corev1.Pod{}}
	err := TaintNodesByCondition().Admit(context.Background(), a)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "unexpected type *v1.Pod") {
		t.Fatalf("a Pod as a node: got %v, want 403 unexpected type", err)
	}
}
