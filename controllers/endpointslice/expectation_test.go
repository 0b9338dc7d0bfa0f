package endpointslice

import (
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// A write the cache never shows (its slice deleted and listed away before
// any event for it came) is waited for staleTimeout at most; a write
// answered after its slice's delete event is not waited for (G.10).
func TestWaitForOwnWritesEnds_G10(t *testing.T) {
	client := fake.NewClientset()
	c := New(client, informers.NewSharedInformerFactory(client, 0), slog.New(slog.DiscardHandler))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	slice := func(name, uid string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + uid),
			Generation: 1, Labels: map[string]string{discoveryv1.LabelManagedBy: ControllerName, discoveryv1.LabelServiceName: "web"}}}
	}

	// The reconciler records its writes in the tracker.
	c.tracker.Update(slice("web-never-seen", "1"))
	if !c.stale(svc, nil) {
		t.Fatal("a write the cache does not show yet: not stale")
	}
	now = now.Add(staleTimeout - time.Second)
	if !c.stale(svc, nil) {
		t.Fatal("a write the cache does not show, before the timeout: not stale")
	}
	now = now.Add(2 * time.Second)
	if c.stale(svc, nil) {
		t.Fatal("a write the cache has not shown for longer than the timeout: still stale")
	}
	if c.tracker.Has(slice("web-never-seen", "1")) || len(c.staleSince) != 0 {
		t.Errorf("expectations left after the timeout: tracked %v, stale since %v", c.tracker.Has(slice("web-never-seen", "1")), c.staleSince)
	}

	deleted := slice("web-deleted", "2")
	c.sliceChanged(deleted, true)
	c.tracker.Update(deleted)
	if c.stale(svc, nil) {
		t.Error("a write answered after its slice's delete event: stale")
	}
}
