package namespace_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/namespace"
	"github.com/kubegate/kubegate/internal/testwait"
)

const wait = 30 * time.Second

var ctx = context.Background()

func start(t *testing.T) kubernetes.Interface {
	t.Helper()
	return controllertest.Start(t, namespace.Descriptor).Client
}

func condition(ns *corev1.Namespace, t corev1.NamespaceConditionType) string {
	for _, c := range ns.Status.Conditions {
		if c.Type == t {
			return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
		}
	}
	return "none"
}

// A deleted namespace is Terminating while its contents are deleted, and
// goes once they are; nothing new may be created in it meanwhile (G.9).
func TestNamespaceDeletion_G9(t *testing.T) {
	t.Parallel()
	cs := start(t)
	core := cs.CoreV1()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := core.ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// held back by a finalizer until the test lets it go
	if _, err := core.Secrets("team").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := core.Namespaces().Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := core.ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		t.Errorf("create in a Terminating namespace: got %v, want 403 with a NamespaceTerminating cause", err)
	}

	var ns *corev1.Namespace
	testwait.For(t, wait, "the namespace's config maps deleted and its conditions set", func() (bool, string) {
		cms, err := core.ConfigMaps("team").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		if ns, err = core.Namespaces().Get(ctx, "team", metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		got := condition(ns, corev1.NamespaceFinalizersRemaining)
		return len(cms.Items) == 0 && strings.HasPrefix(got, "True"), fmt.Sprintf("%d config maps, finalizers condition %s", len(cms.Items), got)
	})
	if ns.Status.Phase != corev1.NamespaceTerminating || len(ns.Spec.Finalizers) != 1 {
		t.Errorf("namespace with content left: phase %s, spec.finalizers %v; want Terminating with kubernetes", ns.Status.Phase, ns.Spec.Finalizers)
	}
	for ct, want := range map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "False ResourcesDiscovered: All resources successfully discovered",
		corev1.NamespaceDeletionGVParsingFailure: "False ParsedGroupVersions: All legacy kube types successfully parsed",
		corev1.NamespaceDeletionContentFailure:   "False ContentDeleted: All content successfully deleted, may be waiting on finalization",
		corev1.NamespaceContentRemaining:         "True SomeResourcesRemain: Some resources are remaining: secrets. has 1 resource instances",
		corev1.NamespaceFinalizersRemaining:      "True SomeFinalizerRemain: Some finalizers are remaining: example.com/hold in 1 resource instances",
	} {
		if got := condition(ns, ct); got != want {
			t.Errorf("condition %s: got %q, want %q", ct, got, want)
		}
	}

	if _, err := core.Secrets("team").Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// The namespace is looked at again 15 s after objects held by
	// finalizers were seen (7.5 s + 1 s).
	testwait.For(t, wait, "the namespace gone", func() (bool, string) {
		ns, err := core.Namespaces().Get(ctx, "team", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("phase %s, spec.finalizers %v", ns.Status.Phase, ns.Spec.Finalizers)
	})
}
