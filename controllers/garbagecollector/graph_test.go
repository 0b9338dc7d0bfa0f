package garbagecollector

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func configMapRef(name string) objectRef {
	return objectRef{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, kind: "ConfigMap",
		namespaced: true, namespace: "default", name: name, uid: types.UID(name + "-uid")}
}

// An owner already waiting for its dependents when the graph first sees
// it (an informer's first list can hold it before them) still has each
// dependent looked at when that dependent is seen, blocking or not (G.8).
func TestDependentSeenAfterItsForegroundOwnerIsLookedAt_G8(t *testing.T) {
	g := newGraph()
	now := metav1.Now()
	owner := configMapRef("owner")
	g.upsert(owner, &metav1.ObjectMeta{Name: "owner", Namespace: "default", UID: owner.uid,
		DeletionTimestamp: &now, Finalizers: []string{metav1.FinalizerDeleteDependents}})
	for _, block := range []bool{true, false} {
		dep := configMapRef("dep-" + map[bool]string{true: "blocking", false: "free"}[block])
		ch := g.upsert(dep, &metav1.ObjectMeta{Name: dep.name, Namespace: "default", UID: dep.uid,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.uid, BlockOwnerDeletion: &block}}})
		if !slices.Contains(ch.toDelete, dep.uid) {
			t.Errorf("%s seen after its owner started a foreground deletion: looked at %v, want it among them", dep.name, ch.toDelete)
		}
	}
	// a living owner spares its new dependent the lookup
	alive := configMapRef("alive")
	g.upsert(alive, &metav1.ObjectMeta{Name: "alive", Namespace: "default", UID: alive.uid})
	dep := configMapRef("child")
	ch := g.upsert(dep, &metav1.ObjectMeta{Name: "child", Namespace: "default", UID: dep.uid,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "alive", UID: alive.uid}}})
	if len(ch.toDelete) != 0 {
		t.Errorf("a dependent of a living owner: looked at %v, want none", ch.toDelete)
	}
}

// A reference that carries a seen owner's UID with other coordinates
// (name, kind, apiVersion, or a namespaced owner's UID from another
// namespace) has its object looked at, as kube's addDependentToOwner; an
// owner seen deleted is gone for the references that name it by its own
// coordinates only (G.8).
func TestReferenceCoordinatesDecideWhatTheGraphTrusts_G8(t *testing.T) {
	g := newGraph()
	owner := configMapRef("owner")
	g.upsert(owner, &metav1.ObjectMeta{Name: "owner", Namespace: "default", UID: owner.uid})
	right := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.uid}
	for _, tc := range []struct {
		name      string
		namespace string
		ref       metav1.OwnerReference
		lookedAt  bool
	}{
		{"its own coordinates", "default", right, false},
		{"another name", "default", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: owner.uid}, true},
		{"a cluster-scoped kind", "default", metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "owner", UID: owner.uid}, true},
		{"another apiVersion", "default", metav1.OwnerReference{APIVersion: "v2", Kind: "ConfigMap", Name: "owner", UID: owner.uid}, true},
		{"another namespace", "elsewhere", right, true},
	} {
		dep := objectRef{gvr: owner.gvr, kind: "ConfigMap", namespaced: true, namespace: tc.namespace, name: "dep", uid: types.UID("dep-" + tc.name)}
		ch := g.upsert(dep, &metav1.ObjectMeta{Name: "dep", Namespace: tc.namespace, UID: dep.uid, OwnerReferences: []metav1.OwnerReference{tc.ref}})
		if got := slices.Contains(ch.toDelete, dep.uid); got != tc.lookedAt {
			t.Errorf("%s: looked at %v, want %v", tc.name, got, tc.lookedAt)
		}
	}

	g.remove(owner.uid)
	if !g.isAbsent(right, "default") {
		t.Errorf("the owner seen deleted is not gone for a reference with its coordinates")
	}
	for _, ref := range []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: owner.uid},
		{APIVersion: "v1", Kind: "Node", Name: "owner", UID: owner.uid},
	} {
		if g.isAbsent(ref, "default") {
			t.Errorf("%s %q with the owner's UID taken for gone from the owner's deletion", ref.Kind, ref.Name)
		}
	}
	if g.isAbsent(right, "elsewhere") {
		t.Errorf("the owner's coordinates from another namespace taken for gone")
	}
}

// A reference with other coordinates is looked at when it is new, not
// again on every later update of its object, as kube looks at the
// references an update adds (G.8).
func TestReferenceWithOtherCoordinatesIsLookedAtOnce_G8(t *testing.T) {
	g := newGraph()
	owner := configMapRef("owner")
	g.upsert(owner, &metav1.ObjectMeta{Name: "owner", Namespace: "default", UID: owner.uid})
	dep := configMapRef("dep")
	meta := &metav1.ObjectMeta{Name: "dep", Namespace: "default", UID: dep.uid,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v2", Kind: "ConfigMap", Name: "owner", UID: owner.uid}}}
	if ch := g.upsert(dep, meta); !slices.Contains(ch.toDelete, dep.uid) {
		t.Errorf("new: looked at %v, want the dependent among them", ch.toDelete)
	}
	meta.Labels = map[string]string{"touched": "yes"}
	if ch := g.upsert(dep, meta); len(ch.toDelete) != 0 {
		t.Errorf("updated: looked at %v, want none", ch.toDelete)
	}
}
