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
