package cachetrim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestStripManagedFields(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	out, err := StripManagedFields(pod)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	if got.ManagedFields != nil || got.Name != "p" || got.Labels["a"] != "b" {
		t.Errorf("got %+v, want the pod without managedFields and nothing else changed", got.ObjectMeta)
	}
	// A tombstone is not an object; it passes as it is.
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p"}
	if out, err := StripManagedFields(tomb); err != nil || out != any(tomb) {
		t.Errorf("a tombstone came out as %v (%v)", out, err)
	}
}
