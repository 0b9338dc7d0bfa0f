package garbagecollector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/garbagecollector"
	"github.com/kubegate/kubegate/internal/testwait"
)

const wait = 30 * time.Second

var ctx = context.Background()

func start(t *testing.T) kubernetes.Interface {
	t.Helper()
	return controllertest.Start(t, garbagecollector.Descriptor).Client
}

func ownerRef(cm *corev1.ConfigMap, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID, BlockOwnerDeletion: &block}
}

func configMap(t *testing.T, cs kubernetes.Interface, name string, finalizers []string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, OwnerReferences: owners, Finalizers: finalizers}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// state describes a config map: "gone", or its finalizers and owners.
func state(cs kubernetes.Interface, name string) string {
	cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "gone"
	}
	if err != nil {
		return err.Error()
	}
	var owners []string
	for _, o := range cm.OwnerReferences {
		owners = append(owners, o.Name)
	}
	return fmt.Sprintf("finalizers %v owners %v deleting %v", cm.Finalizers, owners, cm.DeletionTimestamp != nil)
}

func waitFor(t *testing.T, cs kubernetes.Interface, name, want string) {
	t.Helper()
	testwait.For(t, wait, name, func() (bool, string) {
		got := state(cs, name)
		return got == want, got
	})
}

func del(t *testing.T, cs kubernetes.Interface, name string, policy metav1.DeletionPropagation) {
	t.Helper()
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
}

// An owner deleted in the background takes its dependents with it; a
// dependent with another living owner only loses the reference (G.8).
func TestBackgroundDeletesDependents_G8(t *testing.T) {
	t.Parallel()
	cs := start(t)
	owner := configMap(t, cs, "owner", nil)
	other := configMap(t, cs, "other", nil)
	configMap(t, cs, "dep", nil, ownerRef(owner, true))
	configMap(t, cs, "shared", nil, ownerRef(owner, false), ownerRef(other, false))
	// a dependent of an owner that never existed goes too
	configMap(t, cs, "stray", nil, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "never", UID: types.UID("no-such-uid")})

	del(t, cs, "owner", metav1.DeletePropagationBackground)
	waitFor(t, cs, "dep", "gone")
	waitFor(t, cs, "stray", "gone")
	waitFor(t, cs, "shared", "finalizers [] owners [other] deleting false")
	if got := state(cs, "other"); got != "finalizers [] owners [] deleting false" {
		t.Errorf("other: %s, want it untouched", got)
	}
}

// An owner deleted in the foreground stays, with the foregroundDeletion
// finalizer, until its blocking dependents are gone; dependents held by
// finalizers hold it (G.8).
func TestForegroundWaitsForBlockingDependents_G8(t *testing.T) {
	t.Parallel()
	cs := start(t)
	owner := configMap(t, cs, "owner", nil)
	configMap(t, cs, "blocking", []string{"example.com/hold"}, ownerRef(owner, true))
	configMap(t, cs, "free", nil, ownerRef(owner, false))

	del(t, cs, "owner", metav1.DeletePropagationForeground)
	waitFor(t, cs, "free", "gone")
	waitFor(t, cs, "blocking", "finalizers [example.com/hold] owners [owner] deleting true")
	if got := state(cs, "owner"); got != "finalizers [foregroundDeletion] owners [] deleting true" {
		t.Fatalf("owner while a blocking dependent remains: %s", got)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Patch(ctx, "blocking", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, cs, "blocking", "gone")
	waitFor(t, cs, "owner", "gone")
}

// An owner deleted with Orphan leaves its dependents, without the
// reference to it (G.8).
func TestOrphanReleasesDependents_G8(t *testing.T) {
	t.Parallel()
	cs := start(t)
	owner := configMap(t, cs, "owner", nil)
	other := configMap(t, cs, "other", nil)
	configMap(t, cs, "dep", nil, ownerRef(owner, true))
	configMap(t, cs, "shared", nil, ownerRef(owner, true), ownerRef(other, false))

	del(t, cs, "owner", metav1.DeletePropagationOrphan)
	waitFor(t, cs, "owner", "gone")
	waitFor(t, cs, "dep", "finalizers [] owners [] deleting false")
	waitFor(t, cs, "shared", "finalizers [] owners [other] deleting false")
}

// Under an owner deleted in the foreground, a dependent that has
// dependents of its own is deleted in the foreground too, so the owner
// goes last (G.8).
func TestForegroundCascadesThroughGenerations_G8(t *testing.T) {
	t.Parallel()
	cs := start(t)
	owner := configMap(t, cs, "owner", nil)
	mid := configMap(t, cs, "mid", nil, ownerRef(owner, true))
	configMap(t, cs, "leaf", []string{"example.com/hold"}, ownerRef(mid, true))

	del(t, cs, "owner", metav1.DeletePropagationForeground)
	waitFor(t, cs, "mid", "finalizers [foregroundDeletion] owners [owner] deleting true")
	waitFor(t, cs, "leaf", "finalizers [example.com/hold] owners [mid] deleting true")
	if got := state(cs, "owner"); got != "finalizers [foregroundDeletion] owners [] deleting true" {
		t.Fatalf("owner while its grandchild remains: %s", got)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Patch(ctx, "leaf", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, cs, "leaf", "gone")
	waitFor(t, cs, "mid", "gone")
	waitFor(t, cs, "owner", "gone")
}
