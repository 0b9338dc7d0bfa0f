package garbagecollector

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// objectRef names one object: where it is served and who it is.
type objectRef struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	namespace  string
	name       string
	uid        types.UID
}

// ownerKey names an owner by the coordinates a reference gives it
// (apiVersion, kind, name, UID) and the namespace it is looked for in: a
// namespaced owner in its dependent's namespace, a cluster-scoped one in
// "". It is the absent cache's key, as kube keys its absent-owner cache:
// an owner found gone is gone only for the references that name it so,
// never for every reference that carries its UID (G.8).
type ownerKey struct {
	apiVersion, kind, name string
	uid                    types.UID
	namespace              string
}

func keyOf(o metav1.OwnerReference, namespace string) ownerKey {
	return ownerKey{apiVersion: o.APIVersion, kind: o.Kind, name: o.Name, uid: o.UID, namespace: namespace}
}

// key is the object's own coordinates, as an informer served it.
func (r objectRef) key() ownerKey {
	k := ownerKey{apiVersion: r.gvr.GroupVersion().String(), kind: r.kind, name: r.name, uid: r.uid}
	if r.namespaced {
		k.namespace = r.namespace
	}
	return k
}

// namedBy reports whether the reference o of a dependent in namespace
// names the object r: the reference's apiVersion, kind, name and UID are
// r's, and a namespaced r is in the dependent's namespace. A reference
// that carries r's UID with other coordinates names another object, which
// may not exist (kube's ownerReferenceMatchesCoordinates).
func (r objectRef) namedBy(o metav1.OwnerReference, namespace string) bool {
	k := r.key()
	return o.UID == k.uid && o.Name == k.name && o.Kind == k.kind && o.APIVersion == k.apiVersion &&
		(!r.namespaced || r.namespace == namespace)
}

// node is an object the graph has seen in an informer.
type node struct {
	ref    objectRef
	owners []metav1.OwnerReference
	// deleting: it has a deletionTimestamp; foreground: and the
	// foregroundDeletion finalizer, so it waits for its dependents;
	// orphan: and the orphan finalizer, so its dependents are released.
	deleting, foreground, orphan bool
}

// graph holds every object seen and, by owner UID, the objects that name
// that owner, whether the owner has been seen or not. The UID of a
// reference is only where to look: whether it names the object of that
// UID is for its other coordinates to say (objectRef.namedBy).
type graph struct {
	mu         sync.RWMutex
	nodes      map[types.UID]*node
	dependents map[types.UID]map[types.UID]bool
	// absent holds owners known to be gone, by the coordinates the
	// references name them with, to spare their dependents a lookup
	// each; bounded.
	absent map[ownerKey]bool
}

func newGraph() *graph {
	return &graph{nodes: map[types.UID]*node{}, dependents: map[types.UID]map[types.UID]bool{}, absent: map[ownerKey]bool{}}
}

// maxAbsent bounds the absent-owner cache, as kube's LRU of 500.
const maxAbsent = 500

func (g *graph) get(uid types.UID) (node, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	if !ok {
		return node{}, false
	}
	return *n, true
}

// dependentsOf returns copies of the seen dependents of uid.
func (g *graph) dependentsOf(uid types.UID) []node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []node
	for dep := range g.dependents[uid] {
		if n, ok := g.nodes[dep]; ok {
			out = append(out, *n)
		}
	}
	return out
}

// isAbsent reports whether the owner that the reference o of a dependent
// in namespace names is known to be gone: as a cluster-scoped owner, or
// in that namespace.
func (g *graph) isAbsent(o metav1.OwnerReference, namespace string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.absentLocked(o, namespace)
}

func (g *graph) absentLocked(o metav1.OwnerReference, namespace string) bool {
	return g.absent[keyOf(o, "")] || (namespace != "" && g.absent[keyOf(o, namespace)])
}

// markAbsent records that the owner k names is gone.
func (g *graph) markAbsent(k ownerKey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.markAbsentLocked(k)
}

func (g *graph) markAbsentLocked(k ownerKey) {
	if len(g.absent) >= maxAbsent {
		clear(g.absent)
	}
	g.absent[k] = true
}

// change is what an informer event means for the collector's queues.
type change struct {
	// toDelete are the objects whose owners should be checked again, and
	// owners waiting for their dependents.
	toDelete []types.UID
	// toOrphan is an owner whose dependents must be released.
	toOrphan types.UID
}

// upsert records obj (added or updated) and returns what to look at again.
func (g *graph) upsert(ref objectRef, obj metav1.Object) change {
	g.mu.Lock()
	defer g.mu.Unlock()
	var ch change
	deleting := obj.GetDeletionTimestamp() != nil
	foreground := deleting && slices.Contains(obj.GetFinalizers(), metav1.FinalizerDeleteDependents)
	orphaning := deleting && slices.Contains(obj.GetFinalizers(), metav1.FinalizerOrphanDependents)
	owners := obj.GetOwnerReferences()
	old, found := g.nodes[ref.uid]
	if !found {
		old = &node{ref: ref}
		g.nodes[ref.uid] = old
		delete(g.absent, ref.key())
	}
	// Owners whose blocking reference went away or stopped blocking may
	// now be free to go.
	for _, was := range old.owners {
		i := slices.IndexFunc(owners, func(o metav1.OwnerReference) bool { return o.UID == was.UID })
		if i < 0 {
			delete(g.dependents[was.UID], ref.uid)
			if len(g.dependents[was.UID]) == 0 {
				delete(g.dependents, was.UID)
			}
		}
		if blocks(was) && (i < 0 || !blocks(owners[i])) {
			if o, ok := g.nodes[was.UID]; ok && o.foreground {
				ch.toDelete = append(ch.toDelete, was.UID)
			}
		}
	}
	for _, o := range owners {
		if g.dependents[o.UID] == nil {
			g.dependents[o.UID] = map[types.UID]bool{}
		}
		g.dependents[o.UID][ref.uid] = true
		// An owner the graph has not seen may be gone, as may the owner
		// a new reference names with coordinates other than those of
		// the object of its UID (kube's addDependentToOwner), and one
		// seen already waiting for its dependents wants this one gone
		// too (it can be seen before its dependents, as in an
		// informer's first list): the object is checked against the API
		// server.
		added := !found || !slices.ContainsFunc(old.owners, func(was metav1.OwnerReference) bool { return sameCoordinates(was, o) })
		if owner, seen := g.nodes[o.UID]; !seen || owner.foreground || added && !owner.ref.namedBy(o, ref.namespace) || g.absentLocked(o, ref.namespace) {
			ch.toDelete = append(ch.toDelete, ref.uid)
		}
	}
	startsOrphaning := orphaning && !(found && old.orphan)
	startsForeground := foreground && !(found && old.foreground)
	old.ref, old.owners, old.deleting, old.foreground, old.orphan = ref, owners, deleting, foreground, orphaning
	switch {
	case startsOrphaning:
		ch.toOrphan = ref.uid
	case startsForeground:
		for dep := range g.dependents[ref.uid] {
			ch.toDelete = append(ch.toDelete, dep)
		}
		ch.toDelete = append(ch.toDelete, ref.uid)
	}
	return ch
}

// remove forgets the object uid and returns what to look at again: its
// dependents, which may have lost their last owner, and its owners that
// wait for their dependents.
func (g *graph) remove(uid types.UID) change {
	g.mu.Lock()
	defer g.mu.Unlock()
	var ch change
	n, ok := g.nodes[uid]
	if !ok {
		return ch
	}
	delete(g.nodes, uid)
	for _, o := range n.owners {
		delete(g.dependents[o.UID], uid)
		if len(g.dependents[o.UID]) == 0 {
			delete(g.dependents, o.UID)
		}
		if owner, ok := g.nodes[o.UID]; ok && owner.foreground {
			ch.toDelete = append(ch.toDelete, o.UID)
		}
	}
	if deps := g.dependents[uid]; len(deps) > 0 {
		// Gone by its own coordinates: dependents that name it otherwise
		// are looked at all the same, and look it up by theirs.
		g.markAbsentLocked(n.ref.key())
		for dep := range deps {
			ch.toDelete = append(ch.toDelete, dep)
		}
	}
	return ch
}

// sameCoordinates reports whether a and b name the same owner.
func sameCoordinates(a, b metav1.OwnerReference) bool {
	return a.UID == b.UID && a.Name == b.Name && a.Kind == b.Kind && a.APIVersion == b.APIVersion
}

func blocks(o metav1.OwnerReference) bool {
	return o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion
}
