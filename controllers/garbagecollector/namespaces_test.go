package garbagecollector_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/internal/testwait"
)

// goneIn waits until namespace/name is deleted.
func goneIn(t *testing.T, cs kubernetes.Interface, namespace, name string) {
	t.Helper()
	testwait.For(t, 30*time.Second, namespace+"/"+name+" deleted", func() (bool, string) {
		_, err := cs.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "still there"
	})
}

// An object in one namespace naming the owner of another namespace is
// collected as an orphan (its owner is not in its namespace), and that
// must not make the owner look gone to its real dependents: the victim's
// dependent stays while its owner lives (G.8).
func TestOwnerInAnotherNamespaceIsNotMadeAbsent_G8(t *testing.T) {
	cs := start(t)
	for _, ns := range []string{"victim", "attacker"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create := func(ns, name string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
		t.Helper()
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	owner := create("victim", "owner")
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}
	nobody := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "nobody", UID: types.UID("00000000-0000-0000-0000-00000000dead")}
	dep := create("victim", "dep", ref)
	create("attacker", "claims-victims-owner", ref, nobody)
	goneIn(t, cs, "attacker", "claims-victims-owner")

	// An event on the victim's dependent has it looked at again; a
	// sentinel orphan in the same namespace, made after, shows the
	// collector has got that far.
	dep.Labels = map[string]string{"touched": "yes"}
	if _, err := cs.CoreV1().ConfigMaps("victim").Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	create("victim", "sentinel", nobody)
	goneIn(t, cs, "victim", "sentinel")
	if _, err := cs.CoreV1().ConfigMaps("victim").Get(ctx, "dep", metav1.GetOptions{}); err != nil {
		t.Fatalf("the dependent of a live owner: %v", err)
	}
}

// A cluster-scoped object that names a namespaced owner is left alone, as
// kube leaves it, even when it also names an owner that is gone.
func TestClusterScopedObjectWithNamespacedOwnerIsKept_G8(t *testing.T) {
	cs := start(t)
	owner, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nsowner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "nsowner", UID: owner.UID}
	nobody := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "nobody", UID: types.UID("00000000-0000-0000-0000-00000000beef")}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusterdep",
		OwnerReferences: []metav1.OwnerReference{ref, nobody}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A sentinel orphan made after shows the collector has got that far.
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "sentinel",
		OwnerReferences: []metav1.OwnerReference{nobody}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	goneIn(t, cs, "default", "sentinel")
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "clusterdep", metav1.GetOptions{})
	if err != nil || ns.DeletionTimestamp != nil {
		t.Fatalf("the namespace naming a namespaced owner was deleted (err %v)", err)
	}
}
