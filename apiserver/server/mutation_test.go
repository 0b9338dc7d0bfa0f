package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/internal/testwait"
)

// A mutation that moves an object to another namespace is refused with
// kube's 400, on a create and on an update, and nothing is written
// (D.13).
func TestMutationCannotMoveAnObject_D13(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	rules := []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}}
	if _, err := cs.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "move"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints:   &admissionregistrationv1.MatchResources{ResourceRules: rules},
			MatchConditions:    []admissionregistrationv1.MatchCondition{{Name: "asked", Expression: "has(object.metadata.labels) && 'move' in object.metadata.labels"}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "replace", path: "/metadata/namespace", value: "kube-system"}]`}}},
		}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "move"}, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "move"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const want = "the namespace of the provided object does not match the namespace sent on the request"
	moved := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "moved", Labels: map[string]string{"move": ""}}}
	testwait.For(t, 30*time.Second, "the policy in force", func() (bool, string) {
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, moved, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsBadRequest(err) && err.Error() == want, fmt.Sprint(err)
	})
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, moved, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) || err.Error() != want {
		t.Errorf("create: got %v, want 400 %q", err, want)
	}
	stays := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stays"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, stays, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stays.Labels = map[string]string{"move": ""}
	if _, err := cs.CoreV1().ConfigMaps("default").Update(ctx, stays, metav1.UpdateOptions{}); !apierrors.IsBadRequest(err) || err.Error() != want {
		t.Errorf("update: got %v, want 400 %q", err, want)
	}
	for _, ns := range []string{"default", "kube-system"} {
		got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "moved", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("moved in %s: %v %v", ns, got, err)
		}
	}
	if got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "stays", metav1.GetOptions{}); err != nil || got.Labels != nil {
		t.Errorf("stays: %v %v, want it unchanged", got, err)
	}
}
