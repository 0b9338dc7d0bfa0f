package apiserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A namespace gets the kubernetes finalizer; a delete marks it
// Terminating and keeps it, with its contents, until the finalize
// subresource empties spec.finalizers; nothing new may be created in it
// meanwhile (G.9).
func TestNamespaceTermination_G9(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	core := ts.clientset(t, false).CoreV1()
	ns, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/keep"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []corev1.FinalizerName{"example.com/keep", corev1.FinalizerKubernetes}; !slices.Equal(ns.Spec.Finalizers, want) {
		t.Errorf("new namespace: spec.finalizers %v, want %v", ns.Spec.Finalizers, want)
	}
	// An update of the namespace itself cannot change spec.finalizers.
	ns.Spec.Finalizers = nil
	if ns, err = core.Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil || len(ns.Spec.Finalizers) != 2 {
		t.Errorf("update clearing spec.finalizers: %v, finalizers %v; want them kept", err, ns.Spec.Finalizers)
	}
	if _, err := core.ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if _, err := core.Pods("team").Create(ctx, testPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := core.Namespaces().Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Subresources that make something are refused too.
	err = core.Pods("team").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Name: "n1"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pods "p" is forbidden: unable to create new content in namespace team`) {
		t.Errorf("binding in a Terminating namespace: got %v, want 403", err)
	}
	got, err := core.Namespaces().Get(ctx, "team", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil || got.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("after delete: %v %+v, want the namespace Terminating", err, got)
	}
	if _, err := core.ConfigMaps("team").Get(ctx, "cm", metav1.GetOptions{}); err != nil {
		t.Errorf("content of a Terminating namespace: %v, want it left to the namespace controller", err)
	}

	_, err = core.ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	switch {
	case !apierrors.IsForbidden(err):
		t.Errorf("create in a Terminating namespace: got %v, want 403", err)
	case !strings.Contains(err.Error(), `configmaps "late" is forbidden: unable to create new content in namespace team because it is being terminated`):
		t.Errorf("create in a Terminating namespace: got message %q", err)
	case !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		t.Errorf("create in a Terminating namespace: got %v, want a NamespaceTerminating cause", err)
	}

	// A second delete changes nothing while spec.finalizers remain.
	if err := core.Namespaces().Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// finalize takes one finalizer away; the namespace stays for the other.
	got.Spec.Finalizers = []corev1.FinalizerName{"example.com/keep"}
	got.Status.Phase = corev1.NamespaceActive // ignored: finalize keeps the status
	if got, err = core.Namespaces().Finalize(ctx, got, metav1.UpdateOptions{}); err != nil || got.Status.Phase != corev1.NamespaceTerminating ||
		!slices.Equal(got.Spec.Finalizers, []corev1.FinalizerName{"example.com/keep"}) {
		t.Fatalf("finalize: %v %+v", err, got)
	}
	got.Spec.Finalizers = []corev1.FinalizerName{"Bad Name"}
	if _, err := core.Namespaces().Finalize(ctx, got, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("finalize with a bad finalizer: got %v, want 422", err)
	}
	got.Spec.Finalizers = nil
	if _, err := core.Namespaces().Finalize(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Namespaces().Get(ctx, "team", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace with no finalizers left: got %v, want it gone", err)
	}
}

// A namespace deleted with Orphan also waits for the orphan finalizer in
// its metadata once spec.finalizers are empty (G.9).
func TestNamespaceWaitsForMetadataFinalizers_G9(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	core := ts.clientset(t, false).CoreV1()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	orphan := metav1.DeletePropagationOrphan
	if err := core.Namespaces().Delete(ctx, "kept", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	ns, err := core.Namespaces().Get(ctx, "kept", metav1.GetOptions{})
	if err != nil || !slices.Equal(ns.Finalizers, []string{metav1.FinalizerOrphanDependents}) {
		t.Fatalf("after an Orphan delete: %v, finalizers %v; want [orphan]", err, ns.Finalizers)
	}
	ns.Spec.Finalizers = nil
	if _, err := core.Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err = core.Namespaces().Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after finalize: %v, want it kept for its orphan finalizer", err)
	}
	ns.Finalizers = nil
	if _, err := core.Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Namespaces().Get(ctx, "kept", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("no finalizers left: got %v, want it gone", err)
	}
}
