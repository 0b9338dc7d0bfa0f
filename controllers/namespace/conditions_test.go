package namespace

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The conditions are kube's five, in kube's order; a condition keeps its
// transition time while its status stays, and a content failure lists
// every error, sorted (G.9).
func TestConditions_G9(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	status := &corev1.NamespaceStatus{}

	first := &conditionUpdater{now: t0}
	first.contentFailed(errors.New("b failed"))
	first.contentFailed(errors.New("a failed"))
	first.contentTotals(map[schema.GroupVersionResource]int{{Version: "v1", Resource: "pods"}: 2, {Group: "apps", Version: "v1", Resource: "replicasets"}: 1},
		map[string]int{"example.com/x": 1})
	if !first.apply(status) {
		t.Fatal("first apply reported no change")
	}
	want := []string{
		"NamespaceDeletionDiscoveryFailure False ResourcesDiscovered",
		"NamespaceDeletionGroupVersionParsingFailure False ParsedGroupVersions",
		"NamespaceDeletionContentFailure True ContentDeletionFailed Failed to delete all resource types, 2 remaining: a failed, b failed",
		"NamespaceContentRemaining True SomeResourcesRemain Some resources are remaining: pods. has 2 resource instances, replicasets.apps has 1 resource instances",
		"NamespaceFinalizersRemaining True SomeFinalizerRemain Some finalizers are remaining: example.com/x in 1 resource instances",
	}
	for i, c := range status.Conditions {
		got := string(c.Type) + " " + string(c.Status) + " " + c.Reason
		if c.Status == corev1.ConditionTrue {
			got += " " + c.Message
		}
		if i >= len(want) || got != want[i] {
			t.Errorf("condition %d: got %q", i, got)
		}
	}

	// All well now: failing conditions turn False at t1, the others keep t0.
	second := &conditionUpdater{now: t1}
	if !second.apply(status) {
		t.Fatal("second apply reported no change")
	}
	for _, c := range status.Conditions {
		wantTime := t0
		if c.Type == corev1.NamespaceDeletionContentFailure || c.Type == corev1.NamespaceContentRemaining || c.Type == corev1.NamespaceFinalizersRemaining {
			wantTime = t1
		}
		if c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Equal(&wantTime) {
			t.Errorf("%s: status %s at %v, want False at %v", c.Type, c.Status, c.LastTransitionTime, wantTime)
		}
	}
	if (&conditionUpdater{now: t1}).apply(status) {
		t.Error("a third apply with nothing new reported a change")
	}
}
