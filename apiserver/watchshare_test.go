package apiserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestWatchersShareEvents runs watchers of one resource in JSON and
// protobuf, with and without a label selector, over the same changes: each
// gets its own event types (a selector turns a relabel into ADDED or
// DELETED) with the right objects and resourceVersions, although they share
// one decoding of each change and one encoding per format.
func TestWatchersShareEvents(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	writer := ts.clientset(t, false).CoreV1().Pods("default")
	type watcher struct {
		name     string
		protobuf bool
		selector string
		want     []string
	}
	all := []string{"ADDED a=1", "MODIFIED a=2", "MODIFIED a=3", "DELETED a=3"}
	selected := []string{"ADDED a=2", "DELETED a=2"} // tier=x from the first update to the second
	ws := []watcher{
		{name: "json", want: all},
		{name: "json again", want: all},
		{name: "protobuf", protobuf: true, want: all},
		{name: "json selector", selector: "tier=x", want: selected},
		{name: "protobuf selector", protobuf: true, selector: "tier=x", want: selected},
	}
	list, err := writer.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	streams := make([]watch.Interface, len(ws))
	for i, w := range ws {
		s, err := ts.clientset(t, w.protobuf).CoreV1().Pods("default").Watch(ctx,
			metav1.ListOptions{ResourceVersion: list.ResourceVersion, LabelSelector: w.selector})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Stop()
		streams[i] = s
	}

	var rvs []string // resourceVersion after each change
	p := testPod("a")
	p.Labels["n"] = "1"
	p, err = writer.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rvs = append(rvs, p.ResourceVersion)
	for _, change := range []struct{ n, tier string }{{"2", "x"}, {"3", ""}} {
		p.Labels["n"] = change.n
		if change.tier == "" {
			delete(p.Labels, "tier")
		} else {
			p.Labels["tier"] = change.tier
		}
		if p, err = writer.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		rvs = append(rvs, p.ResourceVersion)
	}
	if err := writer.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	for i, w := range ws {
		t.Run(w.name, func(t *testing.T) {
			var got []string
			for len(got) < len(w.want) {
				select {
				case ev := <-streams[i].ResultChan():
					pod, ok := ev.Object.(*corev1.Pod)
					if !ok {
						t.Fatalf("got %s %T, want a pod", ev.Type, ev.Object)
					}
					n := pod.Labels["n"]
					if ev.Type != watch.Deleted {
						var idx int
						_, _ = fmt.Sscan(n, &idx)
						if pod.ResourceVersion != rvs[idx-1] {
							t.Errorf("%s a=%s: resourceVersion %s, want %s", ev.Type, n, pod.ResourceVersion, rvs[idx-1])
						}
					}
					got = append(got, fmt.Sprintf("%s a=%s", ev.Type, n))
				case <-time.After(10 * time.Second):
					t.Fatalf("got %v, timed out waiting for %v", got, w.want)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(w.want) {
				t.Errorf("events = %v, want %v", got, w.want)
			}
		})
	}
}
