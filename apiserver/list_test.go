package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A list at a compacted resourceVersion is kube-apiserver's 410 Expired,
// whether asked for with resourceVersionMatch=Exact, with a limit and no
// match (served exactly, as kube always has), or through a continue token,
// whose answer carries a token that goes on at the current revision (D.7).
func TestListAtCompactedRevisionGets410(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	cms := ts.clientset(t, false).CoreV1().ConfigMaps("default")
	for i := range 3 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("c", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || first.Continue == "" {
		t.Fatalf("first page: %v, continue %q", err, first.Continue)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c3"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rev, _ := ts.store.CurrentRevision(ctx)
	if err := ts.store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	old := first.ResourceVersion

	for _, tc := range []struct {
		name string
		opts metav1.ListOptions
	}{
		{"exact", metav1.ListOptions{ResourceVersion: old, ResourceVersionMatch: metav1.ResourceVersionMatchExact}},
		{"exact with a limit", metav1.ListOptions{ResourceVersion: old, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: 1}},
		{"limit and no match", metav1.ListOptions{ResourceVersion: old, Limit: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cms.List(ctx, tc.opts)
			st, ok := err.(apierrors.APIStatus)
			if !ok || st.Status().Code != http.StatusGone || st.Status().Reason != metav1.StatusReasonExpired ||
				st.Status().Message != "The resourceVersion for the provided list is too old." {
				t.Errorf("got %v, want 410 Expired \"The resourceVersion for the provided list is too old.\"", err)
			}
		})
	}

	// Not older than a compacted revision is the current list.
	if list, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: old}); err != nil || len(list.Items) != 4 {
		t.Errorf("not older than %s: %v, %d items; want the 4 current ones", old, err, len(list.Items))
	}

	_, err = cms.List(ctx, metav1.ListOptions{Limit: 1, Continue: first.Continue})
	st, ok := err.(apierrors.APIStatus)
	if !ok || st.Status().Code != http.StatusGone || st.Status().Reason != metav1.StatusReasonExpired || st.Status().Message != continueTooOld || st.Status().Continue == "" {
		t.Fatalf("continue: got %#v, want 410 Expired with the inconsistent-continue message and a token", err)
	}
	rest, err := cms.List(ctx, metav1.ListOptions{Continue: st.Status().Continue})
	if err != nil {
		t.Fatalf("continue with the new token: %v", err)
	}
	var names []string
	for _, cm := range rest.Items {
		names = append(names, cm.Name)
	}
	if fmt.Sprint(names) != "[c1 c2 c3]" || rest.ResourceVersion != fmt.Sprint(rev) {
		t.Errorf("rest = %v at %s, want [c1 c2 c3] at %d", names, rest.ResourceVersion, rev)
	}
}
