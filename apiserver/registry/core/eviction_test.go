package core_test

import (
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	pdbhelpers "k8s.io/component-helpers/apps/poddisruptionbudget"

	"github.com/kubegate/kubegate/apiserver/registry/core"
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
