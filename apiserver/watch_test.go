package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

func TestInformerSeesAddUpdateDelete(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		protobuf bool
	}{{"json", false}, {"protobuf", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := newTestServer(t)
			cs := ts.clientset(t, tc.protobuf)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pods := cs.CoreV1().Pods("default")
			if _, err := pods.Create(ctx, testPod("before"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}

			events := make(chan string, 100)
			factory := informers.NewSharedInformerFactory(cs, 0)
			inf := factory.Core().V1().Pods().Informer()
			_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc: func(obj any) { events <- "add " + obj.(*corev1.Pod).Name },
				UpdateFunc: func(_, obj any) {
					events <- "update " + obj.(*corev1.Pod).Name + " " + obj.(*corev1.Pod).Labels["v"]
				},
				DeleteFunc: func(obj any) { events <- "delete " + obj.(*corev1.Pod).Name },
			})
			if err != nil {
				t.Fatal(err)
			}
			factory.Start(ctx.Done())
			if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				t.Fatal("informer did not sync")
			}
			p, err := pods.Create(ctx, testPod("app"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p.Labels["v"] = "2"
			if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := pods.Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			want := []string{"add before", "add app", "update app 2", "delete app"}
			for i, w := range want {
				select {
				case got := <-events:
					if got != w {
						t.Fatalf("event %d = %q, want %q", i, got, w)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("event %d: timed out waiting for %q", i, w)
				}
			}
		})
	}
}

func TestWatchFromCompactedRevisionGets410(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cs := ts.clientset(t, false)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := cm.ResourceVersion
	for i := range 5 {
		cm.Data = map[string]string{"i": fmt.Sprint(i)}
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rev, _ := ts.store.CurrentRevision(ctx)
	if err := ts.store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: old})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		st, ok := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || !ok || st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
			t.Fatalf("got %s %#v, want ERROR with a 410 Expired Status", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}

	// A client relists and watches from the list's resourceVersion.
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w2, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	cm.Data = map[string]string{"after": "relist"}
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w2.ResultChan():
		got, ok := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Modified || !ok || got.Data["after"] != "relist" {
			t.Fatalf("got %s %#v, want MODIFIED c", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event after relist")
	}
}

func TestWatchSelectorTransitions(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cs := ts.clientset(t, true)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1", ResourceVersion: "0", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := pods.Create(ctx, testPod("a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	var mu sync.Mutex
	for len(got) < 2 {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Bookmark {
				continue
			}
			mu.Lock()
			got = append(got, string(ev.Type)+" "+ev.Object.(*corev1.Pod).Spec.NodeName)
			mu.Unlock()
		case <-time.After(10 * time.Second):
			t.Fatalf("got %v, timed out", got)
		}
	}
	if want := []string{"ADDED n1", "DELETED n1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}
