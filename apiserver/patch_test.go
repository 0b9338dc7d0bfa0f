package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegate/kubegate/authz"
)

func TestPatchTypes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cs := ts.clientset(t, false)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, testPod("app"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		pt    types.PatchType
		patch string
		check func(*corev1.Pod) bool
	}{
		{"merge", types.MergePatchType, `{"metadata":{"labels":{"m":"1"}}}`, func(p *corev1.Pod) bool { return p.Labels["m"] == "1" && p.Labels["app"] == "app" }},
		{"json", types.JSONPatchType, `[{"op":"add","path":"/metadata/labels/j","value":"2"}]`, func(p *corev1.Pod) bool { return p.Labels["j"] == "2" }},
		{"strategic keeps other containers", types.StrategicMergePatchType,
			`{"spec":{"containers":[{"name":"app","image":"app:v2"}]}}`,
			func(p *corev1.Pod) bool {
				return len(p.Spec.Containers) == 1 && p.Spec.Containers[0].Image == "app:v2" && len(p.Spec.Containers[0].Command) == 1
			}},
	} {
		got, err := pods.Patch(ctx, "app", tc.pt, []byte(tc.patch), metav1.PatchOptions{})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !tc.check(got) {
			t.Errorf("%s: unexpected result %+v", tc.name, got.ObjectMeta.Labels)
		}
	}
	_, err := pods.Patch(ctx, "app", types.MergePatchType, []byte(`{"spec":{"bogus":1}}`), metav1.PatchOptions{FieldValidation: "Strict"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("strict patch with unknown field: got %v, want 400", err)
	}
	_, err = pods.Patch(ctx, "app", types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"1"}}`), metav1.PatchOptions{})
	if !apierrors.IsConflict(err) {
		t.Errorf("patch with stale resourceVersion: got %v, want 409", err)
	}
}

func TestServerSideApply(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cs := ts.clientset(t, false)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	apply := func(manager string, data map[string]string, force bool) (*corev1.ConfigMap, error) {
		body, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cfg"}, "data": data})
		return cms.Patch(ctx, "cfg", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: manager, Force: &force})
	}
	first, err := apply("kubectl", map[string]string{"a": "1"}, false)
	if err != nil {
		t.Fatalf("first apply (create): %v", err)
	}
	if len(first.ManagedFields) != 1 || first.ManagedFields[0].Manager != "kubectl" {
		t.Errorf("managedFields = %+v, want one entry for kubectl", first.ManagedFields)
	}
	second, err := apply("kubectl", map[string]string{"a": "1"}, false)
	if err != nil {
		t.Fatalf("second apply: %v", err)
	}
	if second.ResourceVersion != first.ResourceVersion {
		t.Errorf("identical apply changed resourceVersion %s → %s", first.ResourceVersion, second.ResourceVersion)
	}
	if _, err := apply("other", map[string]string{"a": "2"}, false); !apierrors.IsConflict(err) {
		t.Errorf("apply by another manager: got %v, want 409 conflict", err)
	}
	forced, err := apply("other", map[string]string{"a": "2"}, true)
	if err != nil || forced.Data["a"] != "2" {
		t.Errorf("forced apply: data %v, err %v", forced.Data, err)
	}
}

// TestApplyThatCreatesNeedsCreate: a server-side apply of an object that
// does not exist creates it, and, as in kube-apiserver, only for a user
// allowed to create it; patch alone is not enough. The authorizer here
// refuses create only when the object is named, which an apply is and a
// POST is not (docs/kubernetes-behaviour.md B.8).
func TestApplyThatCreatesNeedsCreate(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) {
		c.Authorizer = authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
			if a.Verb == "create" && a.Resource == "configmaps" && a.Name != "" {
				return authz.NoOpinion, "", nil
			}
			return authz.Allow, "", nil
		})
	})
	cs := ts.clientset(t, false)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "existing"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	apply := func(name string) error {
		body, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name}, "data": map[string]string{"a": "1"}})
		_, err := cms.Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "kubectl"})
		return err
	}
	if err := apply("existing"); err != nil {
		t.Errorf("apply to an existing object with patch only: %v", err)
	}
	err := apply("new")
	want := `configmaps "new" is forbidden: User "admin" cannot create resource "configmaps" in API group "" in the namespace "default"`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("apply that creates, with patch only: got %v, want 403 %q", err, want)
	}
	if _, err := cms.Get(ctx, "new", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused apply stored the object: get says %v", err)
	}
}

// TestConcurrentUpdatesLoseNothing has 64 writers read-modify-write one
// counter: each gets 200 or 409, and the final value counts the 200s.
func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cs := ts.clientset(t, false)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ok, conflicts atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				cm, err := cms.Get(ctx, "n", metav1.GetOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				var n int
				_ = json.Unmarshal([]byte(cm.Data["n"]), &n)
				cm.Data["n"] = string(mustJSON(n + 1))
				_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
				switch {
				case err == nil:
					ok.Add(1)
				case apierrors.IsConflict(err):
					conflicts.Add(1)
				default:
					t.Errorf("update: got %v, want success or 409", err)
				}
			}
		}()
	}
	wg.Wait()
	cm, err := cms.Get(ctx, "n", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cm.Data["n"], string(mustJSON(int(ok.Load()))); got != want {
		t.Errorf("final counter = %s, want %s (successes; %d conflicts)", got, want, conflicts.Load())
	}
	if ok.Load() == 0 {
		t.Error("no update succeeded")
	}
}

// TestConcurrentPatchesAllApply has 32 writers merge-patch one object at
// once, as kubectl and controllers do: a patch that names no
// resourceVersion is reapplied when it loses a write to another, so every
// one succeeds and every key is there.
func TestConcurrentPatchesAllApply(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cs := ts.clientset(t, false)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			body := fmt.Sprintf(`{"data":{"k%d":"v"}}`, i)
			if _, err := cms.Patch(ctx, "p", types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
				t.Errorf("patch %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	cm, err := cms.Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.Data) != 32 {
		t.Errorf("%d keys after 32 patches, want 32: %v", len(cm.Data), cm.Data)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// An update that names a UID writes only the object of that UID (D.2): a
// status patch naming the pod it read, as the pod garbage collector
// sends, must not mark Failed a pod of the same name made since.
func TestUpdateNamingAnotherUIDIsRefused_D2(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cs := ts.clientset(t, false)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	created, err := pods.Create(ctx, testPod("app"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pods.Patch(ctx, "app", types.StrategicMergePatchType, []byte(`{"metadata":{"uid":"gone-pod"},"status":{"phase":"Failed"}}`), metav1.PatchOptions{}, "status")
	if !apierrors.IsInvalid(err) || err.Error() != `Pod "app" is invalid: metadata.uid: Invalid value: "gone-pod": field is immutable` {
		t.Errorf("status patch naming another UID: got %v, want kube's 422", err)
	}
	_, err = pods.Patch(ctx, "app", types.MergePatchType, []byte(`{"metadata":{"uid":"gone-pod","labels":{"x":"y"}}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("patch naming another UID: got %v, want 422", err)
	}
	put := created.DeepCopy()
	put.UID, put.ResourceVersion = "gone-pod", ""
	_, err = pods.Update(ctx, put, metav1.UpdateOptions{})
	want := fmt.Sprintf(`Operation cannot be fulfilled on pods "app": Precondition failed: UID in precondition: gone-pod, UID in object meta: %s`, created.UID)
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Errorf("update naming another UID: got %v, want %s", err, want)
	}
	got, err := pods.Get(ctx, "app", metav1.GetOptions{})
	if err != nil || got.Status.Phase == corev1.PodFailed || got.Labels["x"] != "" {
		t.Fatalf("got %v, %v: want the pod untouched", got, err)
	}
	got, err = pods.Patch(ctx, "app", types.StrategicMergePatchType, []byte(`{"metadata":{"uid":"`+string(created.UID)+`"},"status":{"phase":"Failed"}}`), metav1.PatchOptions{}, "status")
	if err != nil || got.Status.Phase != corev1.PodFailed {
		t.Errorf("status patch naming the pod's UID: got %v, want it applied", err)
	}
}
