package server

import (
	"context"
	"slices"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	aggregatorclientset "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// waitFor polls cond until it holds or a few seconds have passed.
func waitFor(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// A FlowSchema's Dangling condition follows whether its priority level
// exists, written as kube's configuration consumer (D.20).
func TestFlowSchemaDanglingCondition_D20(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cs, err := kubernetes.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "mine"},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "later"}}}
	if _, err := cs.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dangling := func(status flowcontrolv1.ConditionStatus, reason string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			got, err := cs.FlowcontrolV1().FlowSchemas().Get(ctx, "mine", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := currentDangling(got)
			return c != nil && c.Status == status && c.Reason == reason, nil
		}
	}
	waitFor(t, "Dangling True NotFound", dangling(flowcontrolv1.ConditionTrue, "NotFound"))
	pl := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "later"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}}
	if _, err := cs.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Dangling False Found", dangling(flowcontrolv1.ConditionFalse, "Found"))
	got, err := cs.FlowcontrolV1().FlowSchemas().Get(ctx, "mine", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var managers []string
	for _, mf := range got.ManagedFields {
		managers = append(managers, mf.Manager+"/"+mf.Subresource)
	}
	if want := flowSchemaStatusManager + "/status"; !slices.Contains(managers, want) {
		t.Errorf("managers = %v, want %s", managers, want)
	}
}

// The server keeps a local APIService for each group version it serves,
// with kube-apiserver's priorities (I.3).
func TestLocalAPIServices_I3(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cs, err := aggregatorclientset.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "v1.apps", func(ctx context.Context) (bool, error) {
		svc, err := cs.ApiregistrationV1().APIServices().Get(ctx, "v1.apps", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if svc.Spec.GroupPriorityMinimum != 17800 || svc.Spec.VersionPriority != 15 || svc.Labels["kube-aggregator.kubernetes.io/automanaged"] != "onstart" {
			t.Fatalf("v1.apps: %+v %v", svc.Spec, svc.Labels)
		}
		return len(svc.Status.Conditions) == 1 && svc.Status.Conditions[0].Reason == "Local", nil
	})
}
