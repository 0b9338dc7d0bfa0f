package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

var widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// widgets is an unstructured namespaced kind, as a custom resource is.
func widgets() *Resource {
	return &Resource{GVR: widgetsGVR, Kind: "Widget", Singular: "widget", Namespaced: true, ShortNames: []string{"wd"},
		New:   func() runtime.Object { return &unstructured.Unstructured{} },
		Verbs: metav1.Verbs{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}}
}

func widget(name string, size int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": size}}}
	return u
}

func TestUnstructuredResourceVerbs_I2(t *testing.T) {
	ts := newTestServer(t)
	if err := ts.SetResources("widgets.example.com", []*Resource{widgets()}); err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(ts.restConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	wc := dc.Resource(widgetsGVR).Namespace("default")
	w, err := wc.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created, err := wc.Create(ctx, widget("a", 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.GetUID() == "" || created.GetResourceVersion() == "" || created.GetNamespace() != "default" {
		t.Fatalf("created %v: want a uid, a resourceVersion and namespace default", created.Object["metadata"])
	}
	ev := <-w.ResultChan()
	if ev.Type != watch.Added || ev.Object.(*unstructured.Unstructured).GetName() != "a" {
		t.Fatalf("watch: got %s %v, want ADDED a", ev.Type, ev.Object)
	}

	wantStoredAsJSON(t, ts, "a")
	wantWidgetWrites(t, wc)
}

// wantStoredAsJSON checks that widget name of namespace default is stored
// as JSON, with apiVersion and kind and without resourceVersion, and reads
// back unstructured (I.2).
func wantStoredAsJSON(t *testing.T, ts *testServer, name string) {
	t.Helper()
	ctx := context.Background()
	// Stored as JSON, with apiVersion and kind and without resourceVersion.
	kv, err := ts.store.Get(ctx, Key(widgetsGVR, "default", name))
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]any
	if err := json.Unmarshal(kv.Value, &stored); err != nil {
		t.Fatalf("stored value %q is not JSON: %v", kv.Value, err)
	}
	if stored["kind"] != "Widget" || stored["metadata"].(map[string]any)["resourceVersion"] != nil {
		t.Errorf("stored %s: want kind Widget and no resourceVersion", kv.Value)
	}
	obj, err := DecodeStored(ts.scheme, kv.Value, kv.ModRevision)
	if u, ok := obj.(*unstructured.Unstructured); err != nil || !ok || u.GetName() != name {
		t.Errorf("DecodeStored: got %T %v, want the unstructured widget a", obj, err)
	}

}

// wantWidgetWrites runs a custom resource's writes and reads on wc, which
// holds widget a: update, merge patch (a strategic one is 415), list,
// delete and deletecollection (I.2).
func wantWidgetWrites(t *testing.T, wc dynamic.ResourceInterface) {
	t.Helper()
	ctx := context.Background()
	got, err := wc.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Object["spec"].(map[string]any)["size"] != int64(1) {
		t.Fatalf("get: got %v, %v", got, err)
	}
	got.Object["spec"] = map[string]any{"size": int64(2)}
	if _, err := wc.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	patched, err := wc.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"color":"red"}}`), metav1.PatchOptions{})
	if err != nil || patched.Object["spec"].(map[string]any)["color"] != "red" {
		t.Fatalf("merge patch: got %v, %v", patched, err)
	}
	if _, err := wc.Patch(ctx, "a", types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{}); !apierrors.IsUnsupportedMediaType(err) {
		t.Errorf("strategic merge patch: got %v, want 415", err)
	}
	if _, err := wc.Create(ctx, widget("b", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := wc.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 || list.GetKind() != "WidgetList" || list.Items[0].GetKind() != "Widget" {
		t.Fatalf("list: got %v, %v; want a WidgetList of 2 widgets", list, err)
	}
	if err := wc.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := wc.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: got %v, want 404", err)
	}
	if err := wc.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if list, err := wc.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("list after deletecollection: got %v, %v", list, err)
	}
}

func TestUnstructuredResourceRefusesProtobuf_I2(t *testing.T) {
	ts := newTestServer(t)
	if err := ts.SetResources("widgets.example.com", []*Resource{widgets()}); err != nil {
		t.Fatal(err)
	}
	dc, _ := dynamic.NewForConfig(ts.restConfig(false))
	if _, err := dc.Resource(widgetsGVR).Namespace("default").Create(context.Background(), widget("a", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/apis/example.com/v1/namespaces/default/widgets/a", "/apis/example.com/v1/namespaces/default/widgets"} {
		req, _ := http.NewRequest(http.MethodGet, ts.http.URL+path, nil)
		req.Header.Set("Accept", "application/vnd.kubernetes.protobuf")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotAcceptable {
			t.Errorf("GET %s as protobuf: got %d, want 406", path, resp.StatusCode)
		}
		// JSON when the client accepts it too, as kube falls back to it.
		req.Header.Set("Accept", "application/vnd.kubernetes.protobuf, application/json")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"kind":"Widget`) {
			t.Errorf("GET %s as JSON: got %d %s", path, resp.StatusCode, body)
		}
	}
}

func TestSetResourcesDiscovery_I2(t *testing.T) {
	ts := newTestServer(t)
	dc, err := discovery.NewDiscoveryClientForConfig(ts.restConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dc.ServerResourcesForGroupVersion("example.com/v1"); !apierrors.IsNotFound(err) {
		t.Fatalf("before: got %v, want 404", err)
	}
	if err := ts.SetResources("widgets.example.com", []*Resource{widgets()}); err != nil {
		t.Fatal(err)
	}
	rl, err := dc.ServerResourcesForGroupVersion("example.com/v1")
	if err != nil || len(rl.APIResources) != 1 || rl.APIResources[0].Name != "widgets" || rl.APIResources[0].ShortNames[0] != "wd" ||
		strings.Join(rl.APIResources[0].Verbs, ",") != "delete,deletecollection,get,list,patch,create,update,watch" {
		t.Fatalf("after install: got %+v, %v", rl, err)
	}
	groups, rls, err := dc.ServerGroupsAndResources() // aggregated
	if err != nil {
		t.Fatal(err)
	}
	if !hasGroup(groups, "example.com") || !hasResourceList(rls, "example.com/v1") {
		t.Errorf("aggregated discovery lacks example.com/v1")
	}
	if err := ts.SetResources("gadgets.example.com", []*Resource{widgets()}); err == nil {
		t.Error("a second owner of widgets.example.com/v1: got no error")
	}
	if err := ts.SetResources("widgets.example.com", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.ServerResourcesForGroupVersion("example.com/v1"); !apierrors.IsNotFound(err) {
		t.Errorf("after removal: got %v, want 404", err)
	}
	resp, err := http.Get(ts.http.URL + "/apis/example.com/v1/namespaces/default/widgets")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("list after removal: got %d, want 404", resp.StatusCode)
	}
}

func hasGroup(gs []*metav1.APIGroup, name string) bool {
	for _, g := range gs {
		if g.Name == name {
			return true
		}
	}
	return false
}

func hasResourceList(rls []*metav1.APIResourceList, gv string) bool {
	for _, rl := range rls {
		if rl.GroupVersion == gv {
			return true
		}
	}
	return false
}

// Requests keep being served while the resources change under them; run
// with -race.
func TestSetResourcesWhileServing_I2(t *testing.T) {
	ts := newTestServer(t)
	dc, _ := dynamic.NewForConfig(ts.restConfig(false))
	disc, _ := discovery.NewDiscoveryClientForConfig(ts.restConfig(false))
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := dc.Resource(widgetsGVR).Namespace("default").List(ctx, metav1.ListOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("list: %v", err)
					return
				}
				if _, _, err := disc.ServerGroupsAndResources(); err != nil {
					t.Errorf("discovery: %v", err)
					return
				}
			}
		})
	}
	for range 50 {
		if err := ts.SetResources("widgets.example.com", []*Resource{widgets()}); err != nil {
			t.Fatal(err)
		}
		if err := ts.SetResources("widgets.example.com", nil); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}
