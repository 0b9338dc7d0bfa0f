package garbagecollector_test

import (
	"fmt"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/internal/testwait"
)

// neverOwner is a reference to an owner that never existed.
var neverOwner = metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "never", UID: "00000000-0000-0000-0000-00000000c0de"}

// attack is an owner with a real dependent, and references that name the
// owner's UID with other coordinates, put on objects in attackerNS.
type attack struct {
	attackerNS string
	wrong      []metav1.OwnerReference
	// touch updates the real dependent.
	touch func(t *testing.T)
	// handled creates an object of the dependent's resource and
	// namespace whose owner never existed, named name, and waits until
	// the collector has deleted it: by then it has looked at the
	// dependent's earlier events.
	handled func(t *testing.T, name string)
	// fate is "" while the dependent is the object it was, else what
	// became of it.
	fate func(t *testing.T) string
}

// run puts each wrong reference on an object of the attacker's, alone and
// with a reference to an owner that never existed (so that the object is
// looked at even by a collector that trusts the graph), waits until the
// collector deletes that object, as kube deletes it (the owner it names
// is not there), and then updates the real dependent: the dependent must
// stay.
func (a attack) run(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	for i, wrong := range a.wrong {
		for _, refs := range [][]metav1.OwnerReference{{wrong, neverOwner}, {wrong}} {
			name := fmt.Sprintf("poison-%d-%d", i, len(refs))
			if _, err := cs.CoreV1().ConfigMaps(a.attackerNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: name, OwnerReferences: refs}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			goneIn(t, cs, a.attackerNS, name)
			a.touch(t)
			a.handled(t, "sentinel-"+name)
			if fate := a.fate(t); fate != "" {
				t.Fatalf("the real dependent was %s after %s/%s, naming %s %s %q with its owner's UID, was collected", fate, a.attackerNS, name, wrong.APIVersion, wrong.Kind, wrong.Name)
			}
		}
	}
}

func createNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// configMapAttack is an attack on a config map owner in victimNS and its
// dependent config map, from attackerNS; wrong makes the references from
// the owner.
func configMapAttack(t *testing.T, cs kubernetes.Interface, victimNS, attackerNS string, wrong func(owner *corev1.ConfigMap) []metav1.OwnerReference) attack {
	t.Helper()
	createNamespace(t, cs, victimNS)
	createNamespace(t, cs, attackerNS)
	cms := cs.CoreV1().ConfigMaps(victimNS)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	touches := 0
	return attack{attackerNS: attackerNS, wrong: wrong(owner),
		touch: func(t *testing.T) {
			touches++
			patch := fmt.Sprintf(`{"metadata":{"labels":{"touched":"%d"}}}`, touches)
			if _, err := cms.Patch(ctx, "dep", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatalf("update the dependent: %v", err)
			}
		},
		handled: func(t *testing.T, name string) {
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
				OwnerReferences: []metav1.OwnerReference{neverOwner}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			goneIn(t, cs, victimNS, name)
		},
		fate: func(t *testing.T) string {
			got, err := cms.Get(ctx, "dep", metav1.GetOptions{})
			return fate(got, err, dep.UID)
		},
	}
}

// fate says what became of the object whose UID was want, read as obj
// with err.
func fate(obj metav1.Object, err error, want types.UID) string {
	switch {
	case apierrors.IsNotFound(err):
		return "deleted"
	case err != nil:
		return err.Error()
	case obj.GetUID() != want:
		return "replaced"
	case obj.GetDeletionTimestamp() != nil:
		return "being deleted"
	}
	return ""
}

// A reference that names a real owner's UID with other coordinates (its
// name, its kind, a cluster-scoped kind for a namespaced owner) names an
// owner that is not there: the object that carries it is collected, as
// kube collects it, and that owner's real dependents, in its namespace or
// in kube-node-lease, stay through their later updates (G.8).
func TestReferenceWithOtherCoordinatesLeavesRealDependents_G8(t *testing.T) {
	cs := start(t)

	t.Run("wrong name in the owner's namespace", func(t *testing.T) {
		a := configMapAttack(t, cs, "victim-a", "victim-a", func(owner *corev1.ConfigMap) []metav1.OwnerReference {
			return []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "not-the-owner", UID: owner.UID}}
		})
		a.run(t, cs)
	})

	t.Run("cluster-scoped kind Node naming a namespaced owner", func(t *testing.T) {
		a := configMapAttack(t, cs, "victim-b", "attacker-b", func(owner *corev1.ConfigMap) []metav1.OwnerReference {
			return []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "Node", Name: "not-a-node", UID: owner.UID},
				{APIVersion: "v1", Kind: "Node", Name: owner.Name, UID: owner.UID},
			}
		})
		a.run(t, cs)
	})

	t.Run("node lease", func(t *testing.T) {
		const leaseNS = "kube-node-lease"
		createNamespace(t, cs, leaseNS)
		createNamespace(t, cs, "attacker-c")
		node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		leases := cs.CoordinationV1().Leases(leaseNS)
		newLease := func(name string, owner metav1.OwnerReference) *coordinationv1.Lease {
			now := metav1.NowMicro()
			return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{owner}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, RenewTime: &now}}
		}
		lease, err := leases.Create(ctx, newLease(node.Name, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a := attack{attackerNS: "attacker-c",
			wrong: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "Node", Name: "not-node-c", UID: node.UID},
				{APIVersion: "v1", Kind: "Namespace", Name: node.Name, UID: node.UID},
			},
			touch: func(t *testing.T) {
				cur, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("renew the lease: %v", err)
				}
				now := metav1.NowMicro()
				cur.Spec.RenewTime = &now
				if _, err := leases.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
					t.Fatalf("renew the lease: %v", err)
				}
			},
			handled: func(t *testing.T, name string) {
				gone := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "gone-node", UID: neverOwner.UID}
				if _, err := leases.Create(ctx, newLease(name, gone), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				testwait.For(t, wait, leaseNS+"/"+name+" deleted", func() (bool, string) {
					_, err := leases.Get(ctx, name, metav1.GetOptions{})
					return apierrors.IsNotFound(err), "still there"
				})
			},
			fate: func(t *testing.T) string {
				got, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
				return fate(got, err, lease.UID)
			},
		}
		a.run(t, cs)
	})
}
