package disruption

import (
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"
)

// G.12: the DisruptionAllowed condition is kube's, component-helpers'
// UpdateDisruptionAllowedCondition, but a transition is dated by the
// controller's clock; a condition whose status stays keeps its date.
func TestDisruptionAllowedConditionIsKubes_G12(t *testing.T) {
	t.Parallel()
	before := metav1.NewTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	now := time.Date(2030, 1, 1, 0, 5, 0, 0, time.UTC)
	cond := func(status metav1.ConditionStatus, reason, message string) []metav1.Condition {
		return []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: status, Reason: reason, Message: message,
			ObservedGeneration: 1, LastTransitionTime: before}}
	}
	other := metav1.Condition{Type: "Other", Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: before}
	for _, tc := range []struct {
		name       string
		allowed    int32
		conditions []metav1.Condition
		wantStatus metav1.ConditionStatus
		wantReason string
		transition bool
	}{
		{"none yet, allowed", 2, nil, metav1.ConditionTrue, policyv1.SufficientPodsReason, true},
		{"none yet, not allowed", 0, nil, metav1.ConditionFalse, policyv1.InsufficientPodsReason, true},
		{"other conditions kept", 1, []metav1.Condition{other}, metav1.ConditionTrue, policyv1.SufficientPodsReason, true},
		{"stays allowed", 1, cond(metav1.ConditionTrue, policyv1.SufficientPodsReason, ""), metav1.ConditionTrue, policyv1.SufficientPodsReason, false},
		{"becomes allowed", 1, cond(metav1.ConditionFalse, policyv1.InsufficientPodsReason, ""), metav1.ConditionTrue, policyv1.SufficientPodsReason, true},
		{"stops being allowed", 0, cond(metav1.ConditionTrue, policyv1.SufficientPodsReason, ""), metav1.ConditionFalse, policyv1.InsufficientPodsReason, true},
		{"sync failure mended, still False", 0, cond(metav1.ConditionFalse, policyv1.SyncFailedReason, "boom"), metav1.ConditionFalse, policyv1.InsufficientPodsReason, false},
		{"sync failure mended, allowed", 3, cond(metav1.ConditionFalse, policyv1.SyncFailedReason, "boom"), metav1.ConditionTrue, policyv1.SufficientPodsReason, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Generation: 4},
				Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: tc.allowed, ObservedGeneration: 4, Conditions: tc.conditions}}
			kube := pdb.DeepCopy()
			pdbhelper.UpdateDisruptionAllowedCondition(kube)
			got := pdb.DeepCopy()
			setDisruptionAllowed(got, now)

			c := apimeta.FindStatusCondition(got.Status.Conditions, policyv1.DisruptionAllowedCondition)
			if c == nil || c.Status != tc.wantStatus || c.Reason != tc.wantReason || c.Message != "" || c.ObservedGeneration != 4 {
				t.Fatalf("got condition %+v, want status %s, reason %s, no message, observedGeneration 4", c, tc.wantStatus, tc.wantReason)
			}
			wantTime := before
			if tc.transition {
				wantTime = metav1.NewTime(now)
			}
			if !c.LastTransitionTime.Equal(&wantTime) {
				t.Errorf("lastTransitionTime %v, want %v", c.LastTransitionTime, wantTime)
			}
			// Apart from the date of a transition, it is the helper's.
			kc := apimeta.FindStatusCondition(kube.Status.Conditions, policyv1.DisruptionAllowedCondition)
			if !tc.transition && !kc.LastTransitionTime.Equal(&before) {
				t.Errorf("component-helpers moved lastTransitionTime to %v without a transition", kc.LastTransitionTime)
			}
			kc.LastTransitionTime = c.LastTransitionTime
			if !apiequality.Semantic.DeepEqual(got.Status, kube.Status) {
				t.Errorf("status differs from component-helpers':\n got %+v\nkube %+v", got.Status, kube.Status)
			}
			if !pdbhelper.ConditionsAreUpToDate(got) {
				t.Error("ConditionsAreUpToDate is false right after the condition was set")
			}
		})
	}
}
