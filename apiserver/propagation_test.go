package apiserver

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// rawDelete sends DELETE path with body and returns the status code, the
// Warning header and the body.
func rawDelete(t *testing.T, ts *testServer, path, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, ts.http.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Warning"), string(data)
}

// A delete's propagation policy decides the finalizers it leaves: Orphan
// adds orphan, Foreground foregroundDeletion, Background none, and the
// kind's default applies when none is named (G.8).
func TestDeletePropagationFinalizers_G8(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	core := ts.clientset(t, false).CoreV1()
	cm := func(name string, finalizers ...string) {
		t.Helper()
		if _, err := core.ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	finalizersOf := func(name string) ([]string, bool) {
		t.Helper()
		got, err := core.ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, false
		}
		if err != nil {
			t.Fatal(err)
		}
		if got.DeletionTimestamp == nil {
			t.Errorf("%s: no deletionTimestamp after a delete that kept it", name)
		}
		return got.Finalizers, true
	}
	path := "/api/v1/namespaces/default/configmaps/"
	for _, tc := range []struct {
		name, body     string
		held           []string
		wantCode       int
		wantFinalizers []string // nil: deleted at once
	}{
		{"orphan", `{"propagationPolicy":"Orphan"}`, nil, 200, []string{metav1.FinalizerOrphanDependents}},
		{"foreground", `{"propagationPolicy":"Foreground"}`, nil, 200, []string{metav1.FinalizerDeleteDependents}},
		// orphanDependents=false is a background delete; 202 when the
		// object stays.
		{"orphan-false", `{"orphanDependents":false}`, nil, 200, nil},
		{"orphan-false-held", `{"orphanDependents":false}`, []string{"example.com/x"}, 202, []string{"example.com/x"}},
		{"orphan-true", `{"orphanDependents":true}`, []string{"example.com/x"}, 200, []string{"example.com/x", metav1.FinalizerOrphanDependents}},
		{"background", `{"propagationPolicy":"Background"}`, nil, 200, nil},
		{"default", ``, nil, 200, nil},
		// Background takes away an orphan finalizer the object had.
		{"background-drops-orphan", `{"propagationPolicy":"Background"}`, []string{metav1.FinalizerOrphanDependents}, 200, nil},
		// With no policy named, the finalizer the object has decides.
		{"held-orphan", ``, []string{metav1.FinalizerOrphanDependents}, 200, []string{metav1.FinalizerOrphanDependents}},
	} {
		cm(tc.name, tc.held...)
		code, _, body := rawDelete(t, ts, path+tc.name, tc.body)
		if code != tc.wantCode {
			t.Errorf("%s: got %d %s, want %d", tc.name, code, body, tc.wantCode)
		}
		got, exists := finalizersOf(tc.name)
		switch {
		case tc.wantFinalizers == nil && exists:
			t.Errorf("%s: still there with finalizers %v, want it deleted", tc.name, got)
		case tc.wantFinalizers != nil && !exists:
			t.Errorf("%s: deleted, want it kept with %v", tc.name, tc.wantFinalizers)
		case tc.wantFinalizers != nil && !slices.Equal(got, tc.wantFinalizers):
			t.Errorf("%s: got finalizers %v, want %v", tc.name, got, tc.wantFinalizers)
		}
	}

	// Removing the last finalizer of an object being deleted deletes it.
	if _, err := core.ConfigMaps("default").Patch(ctx, "orphan", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, exists := finalizersOf("orphan"); exists {
		t.Error("orphan: still there once its last finalizer is gone")
	}
	// A second delete of an object held by finalizers can switch policy.
	if code, _, body := rawDelete(t, ts, path+"foreground", `{"propagationPolicy":"Orphan"}`); code != 200 {
		t.Errorf("second delete: got %d %s", code, body)
	}
	if got, _ := finalizersOf("foreground"); !slices.Equal(got, []string{metav1.FinalizerOrphanDependents}) {
		t.Errorf("second delete with Orphan: got finalizers %v, want [orphan]", got)
	}
}

// ReplicationControllers and batch/v1 Jobs orphan their dependents by
// default, and a delete of Jobs naming no policy is warned about; Events
// take no part (G.8).
func TestDefaultPropagationPerKind_G8(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	cs := ts.clientset(t, false)
	one := int32(1)
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}}, Spec: testPod("x").Spec}
	if _, err := cs.CoreV1().ReplicationControllers("default").Create(ctx, &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "rc"},
		Spec: corev1.ReplicationControllerSpec{Replicas: &one, Selector: map[string]string{"app": "a"}, Template: &tmpl}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobTmpl := tmpl
	jobTmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	if _, err := cs.BatchV1().Jobs("default").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "job"},
		Spec: batchv1.JobSpec{Template: jobTmpl}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Events("default").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "ev"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "default"}, Reason: "R", Type: "Normal"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if code, warn, body := rawDelete(t, ts, "/api/v1/namespaces/default/replicationcontrollers/rc", ""); code != 200 || warn != "" {
		t.Errorf("delete rc: got %d %q %s", code, warn, body)
	}
	if rc, err := cs.CoreV1().ReplicationControllers("default").Get(ctx, "rc", metav1.GetOptions{}); err != nil || !slices.Equal(rc.Finalizers, []string{metav1.FinalizerOrphanDependents}) {
		t.Errorf("rc after a delete with no policy: %v, want it kept with the orphan finalizer", err)
	}
	code, warn, body := rawDelete(t, ts, "/apis/batch/v1/namespaces/default/jobs/job", "")
	if code != 200 || !strings.Contains(warn, jobDeleteWarning) {
		t.Errorf("delete job: got %d, warning %q, %s; want 200 and kube's warning", code, warn, body)
	}
	if job, err := cs.BatchV1().Jobs("default").Get(ctx, "job", metav1.GetOptions{}); err != nil || !slices.Equal(job.Finalizers, []string{metav1.FinalizerOrphanDependents}) {
		t.Errorf("job after a delete with no policy: %v, want it kept with the orphan finalizer", err)
	}
	if code, _, body := rawDelete(t, ts, "/api/v1/namespaces/default/events/ev", `{"propagationPolicy":"Orphan"}`); code != 200 {
		t.Errorf("delete event: got %d %s", code, body)
	}
	if _, err := cs.CoreV1().Events("default").Get(ctx, "ev", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("event after an Orphan delete: got %v, want it gone (events take no part in garbage collection)", err)
	}
}
