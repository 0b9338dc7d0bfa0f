package core_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	pdbhelpers "k8s.io/component-helpers/apps/poddisruptionbudget"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/apiserver/registry/core"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The DisruptionAllowed condition an eviction writes is component-helpers'
// in every field but the transition time, which comes from the server's
// clock when the status changes and stays otherwise (G.12).
func TestDisruptionAllowedConditionMatchesHelper_G12(t *testing.T) {
	t.Parallel()
	earlier := metav1.NewTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC))
	cond := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: status, Reason: reason, ObservedGeneration: 1, LastTransitionTime: earlier}}
	}
	other := metav1.Condition{Type: "Other", Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: earlier}
	for _, tc := range []struct {
		name        string
		allowed     int32
		conditions  []metav1.Condition
		wantChanged bool
	}{
		{"none, allows none", 0, nil, true},
		{"none, allows one", 1, nil, true},
		{"other condition only", 0, []metav1.Condition{other}, true},
		{"true to false", 0, cond(metav1.ConditionTrue, policyv1.SufficientPodsReason), true},
		{"false to true", 2, cond(metav1.ConditionFalse, policyv1.InsufficientPodsReason), true},
		{"stays false", 0, cond(metav1.ConditionFalse, policyv1.InsufficientPodsReason), false},
		{"stays true, reason fixed", 1, cond(metav1.ConditionTrue, "Stale"), false},
		{"negative", -1, cond(metav1.ConditionTrue, policyv1.SufficientPodsReason), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pdb := &policyv1.PodDisruptionBudget{Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 2, DisruptionsAllowed: tc.allowed,
				Conditions: append([]metav1.Condition(nil), tc.conditions...)}}
			want := pdb.DeepCopy()
			pdbhelpers.UpdateDisruptionAllowedCondition(want)
			core.SetDisruptionAllowedCondition(pdb, now)

			got := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
			w := apimeta.FindStatusCondition(want.Status.Conditions, policyv1.DisruptionAllowedCondition)
			wantTime := earlier
			if tc.wantChanged {
				wantTime = now
			}
			if !got.LastTransitionTime.Equal(&wantTime) {
				t.Errorf("lastTransitionTime: got %v, want %v", got.LastTransitionTime, wantTime)
			}
			got.LastTransitionTime, w.LastTransitionTime = metav1.Time{}, metav1.Time{}
			if len(pdb.Status.Conditions) != len(want.Status.Conditions) || *got != *w {
				t.Errorf("conditions: got %+v, want the helper's %+v", pdb.Status.Conditions, want.Status.Conditions)
			}
			if !pdbhelpers.ConditionsAreUpToDate(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: pdb.Status}) {
				t.Errorf("the helper finds the condition out of date: %+v", pdb.Status)
			}
		})
	}
}

// The eviction subresource against PodDisruptionBudgets, which
// apiservertest serves from apiserver/registry/policy (D.9, G.12).

// evictionFixture is a server with the pod "app" running and ready
// (labelled app=app) and a budget "guard" selecting it.
func evictionFixture(t *testing.T) (*apiservertest.Server, kubernetes.Interface) {
	t.Helper()
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	cs := srv.Client
	runningPod(t, cs, testPod("app"), true)
	one := intstr.FromInt32(1)
	_, err := cs.PolicyV1().PodDisruptionBudgets("default").Create(context.Background(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return srv, cs
}

func runningPod(t *testing.T, cs kubernetes.Interface, p *corev1.Pod, ready bool) {
	t.Helper()
	ctx := context.Background()
	p, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func setBudgetStatus(t *testing.T, cs kubernetes.Interface, name string, st policyv1.PodDisruptionBudgetStatus) {
	t.Helper()
	ctx := context.Background()
	p, err := cs.PolicyV1().PodDisruptionBudgets("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = st
	if _, err := cs.PolicyV1().PodDisruptionBudgets("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// evictApp evicts the pod "app" and returns the answer.
func evictApp(t *testing.T, srv *apiservertest.Server, query string) (int, http.Header, map[string]any) {
	t.Helper()
	code, h, body := rt.DoHeader(t, srv, http.MethodPost, "/api/v1/namespaces/default/pods/app/eviction"+query,
		`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"app"}}`, nil)
	return code, h, rt.Object(t, body)
}

// causeMessage is the message of a Status's first cause.
func causeMessage(st map[string]any) string {
	d, _ := st["details"].(map[string]any)
	cs, _ := d["causes"].([]any)
	if len(cs) == 0 {
		return ""
	}
	c, _ := cs[0].(map[string]any)
	if c["reason"] != string(policyv1.DisruptionBudgetCause) {
		return "cause of reason " + c["reason"].(string)
	}
	return c["message"].(string)
}

// An eviction is refused while the budget's status lags its spec, and
// while it allows no disruption; else it uses one up, records the pod and
// deletes it (D.9, G.12).
func TestEvictionHonoursBudget_D9(t *testing.T) {
	t.Parallel()
	srv, cs := evictionFixture(t)
	ctx := context.Background()

	code, h, st := evictApp(t, srv, "")
	if code != http.StatusTooManyRequests || st["message"] != "Cannot evict pod as it would violate the pod's disruption budget." || h.Get("Retry-After") != "10" ||
		causeMessage(st) != "The disruption budget guard is still being processed by the server." {
		t.Fatalf("eviction under an unobserved budget: %d, Retry-After %q, %v", code, h.Get("Retry-After"), st)
	}
	setBudgetStatus(t, cs, "guard", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1})
	code, h, st = evictApp(t, srv, "")
	if code != http.StatusTooManyRequests || h.Get("Retry-After") != "" || causeMessage(st) != "The disruption budget guard needs 1 healthy pods and has 1 currently" {
		t.Fatalf("eviction under a spent budget: %d, Retry-After %q, %v", code, h.Get("Retry-After"), st)
	}

	setBudgetStatus(t, cs, "guard", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2, DisruptionsAllowed: 1})
	if code, _, st := evictApp(t, srv, "?dryRun=All"); code != http.StatusCreated {
		t.Fatalf("dry-run eviction: %d %v", code, st)
	}
	pdb, err := cs.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "guard", metav1.GetOptions{})
	if err != nil || pdb.Status.DisruptionsAllowed != 1 || len(pdb.Status.DisruptedPods) != 0 {
		t.Fatalf("a dry-run eviction changed the budget: %v %+v", err, pdb.Status)
	}
	if code, _, st := evictApp(t, srv, ""); code != http.StatusCreated || st["status"] != "Success" {
		t.Fatalf("eviction: %d %v", code, st)
	}
	pdb, err = cs.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "guard", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if _, ok := pdb.Status.DisruptedPods["app"]; !ok || pdb.Status.DisruptionsAllowed != 0 || c == nil || c.Reason != policyv1.InsufficientPodsReason {
		t.Errorf("budget after the eviction: %+v", pdb.Status)
	}
	if _, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the evicted pod: got %v, want NotFound", err)
	}
}

// A pod on a node is marked DisruptionTarget and given its grace period,
// as a DELETE would give it (D.9).
func TestEvictionMarksDisruptionTarget_D9(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	cs := srv.Client
	ctx := context.Background()
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := testPod("app")
	p.Spec.NodeName = "node-1"
	runningPod(t, cs, p, true)
	if code, _, st := evictApp(t, srv, ""); code != http.StatusCreated {
		t.Fatalf("eviction: %d %v", code, st)
	}
	got, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var target *corev1.PodCondition
	for i, c := range got.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			target = &got.Status.Conditions[i]
		}
	}
	if got.DeletionTimestamp == nil || target == nil || target.Status != corev1.ConditionTrue || target.Reason != "EvictionByEvictionAPI" ||
		target.Message != "Eviction API: evicting" {
		t.Errorf("evicted pod on a node: deletionTimestamp %v, conditions %+v", got.DeletionTimestamp, got.Status.Conditions)
	}
}

// A pod two budgets select is not evicted; an unready pod under
// AlwaysAllow is, without using its budget (D.9).
func TestEvictionMultipleBudgetsAndUnhealthyPolicy_D9(t *testing.T) {
	t.Parallel()
	srv, cs := evictionFixture(t)
	ctx := context.Background()
	zero := intstr.FromInt32(0)
	second := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "second"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, second, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, _, st := evictApp(t, srv, "")
	if code != http.StatusInternalServerError || st["message"] != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." {
		t.Fatalf("eviction of a pod with two budgets: %d %v", code, st)
	}
	if err := cs.PolicyV1().PodDisruptionBudgets("default").Delete(ctx, "second", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Unready: refused under IfHealthyBudget with no healthy pods...
	if err := cs.CoreV1().Pods("default").Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	runningPod(t, cs, testPod("app"), false)
	setBudgetStatus(t, cs, "guard", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DesiredHealthy: 1, ExpectedPods: 1})
	if code, _, st := evictApp(t, srv, ""); code != http.StatusTooManyRequests {
		t.Fatalf("eviction of an unready pod, IfHealthyBudget: %d %v", code, st)
	}
	// ...let go under AlwaysAllow, the budget untouched.
	pdb, err := cs.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "guard", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	always := policyv1.AlwaysAllow
	pdb.Spec.UnhealthyPodEvictionPolicy = &always
	if _, err := cs.PolicyV1().PodDisruptionBudgets("default").Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, _, st := evictApp(t, srv, ""); code != http.StatusCreated {
		t.Fatalf("eviction of an unready pod, AlwaysAllow: %d %v", code, st)
	}
	pdb, err = cs.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "guard", metav1.GetOptions{})
	if err != nil || len(pdb.Status.DisruptedPods) != 0 {
		t.Errorf("budget after evicting an unhealthy pod: %v %+v", err, pdb.Status)
	}
}
