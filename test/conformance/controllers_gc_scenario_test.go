package conformance

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ownerCoordinates is the scenario of references that carry a real
// owner's UID with other coordinates (G.8): config maps name a
// Deployment's UID with another name or the kind Node, its ReplicaSet's
// UID with another name, and a simulated node's UID with another name or
// the kind Namespace. The collector deletes each (the owner it names is
// not there) and must leave the real dependents alone when they change
// next: the ReplicaSet and its pods in the recording, and the node's Lease
// in kube-node-lease, which the recording does not watch, in an outcome
// line. It runs twice: first each reference with one to an owner that
// never existed beside it, then each alone.
func ownerCoordinates(r *scenarioRun) error {
	r.create(deploymentYAML("web", 2, imageV1))
	if err := r.settle("create deployment web, 2 replicas", deploymentDone("web", 2)); err != nil {
		return err
	}
	deployment := r.rec.get("Deployment", "web")
	sets := r.rec.list("ReplicaSet")
	if len(sets) != 1 {
		return fmt.Errorf("deployment web has %d replica sets, want 1", len(sets))
	}
	rs := sets[0]
	lease, err := r.nodeLease()
	if err != nil {
		return err
	}
	node := lease.GetOwnerReferences()[0]
	wrong := map[string]string{
		"deployment-name": ownerRefJSON("apps/v1", "Deployment", "not-web", string(deployment.GetUID())),
		"deployment-node": ownerRefJSON("v1", "Node", "web", string(deployment.GetUID())),
		"replicaset-name": ownerRefJSON("apps/v1", "ReplicaSet", "not-"+rs.GetName(), string(rs.GetUID())),
		"node-name":       ownerRefJSON("v1", "Node", "not-"+node.Name, string(node.UID)),
		"node-kind":       ownerRefJSON("v1", "Namespace", node.Name, string(node.UID)),
	}
	never := ownerRefJSON("v1", "ConfigMap", "never", "00000000-0000-0000-0000-00000000c0de")
	for round, with := range []string{", " + never, ""} {
		var made []condition
		for _, what := range slices.Sorted(maps.Keys(wrong)) {
			name := fmt.Sprintf("poison-%d-%s", round+1, what)
			r.createCollectable(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","ownerReferences":[` + wrong[what] + with + `]}}`)
			made = append(made, collected("ConfigMap", name))
		}
		what := "alone"
		if with != "" {
			what = "beside one to an owner that never existed"
		}
		if err := r.settle("create config maps naming the deployment's, the replica set's and a node's UIDs with other coordinates, "+what, all(made...)); err != nil {
			return err
		}
		// The real dependents change: the pods are labelled, the replica
		// set scales, the node renews its lease.
		for _, p := range r.rec.list("Pod") {
			r.patch("Pod", p.GetName(), fmt.Sprintf(`{"metadata":{"labels":{"touched":"%d"}}}`, round+1))
		}
		r.patch("Deployment", "web", fmt.Sprintf(`{"spec":{"replicas":%d}}`, 3+round))
		marker := fmt.Sprintf("marker-%d", round+1)
		r.createCollectable(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + marker + `","ownerReferences":[` + never + `]}}`)
		if err := r.settle("scale to "+fmt.Sprint(3+round)+" and label the pods; a config map whose owner never existed", all(deploymentDone("web", int64(3+round)), collected("ConfigMap", marker))); err != nil {
			return err
		}
		r.leaseOutcome(lease.GetUID(), lease.GetResourceVersion(), marker)
		if r.err != nil {
			return r.err
		}
		if lease, err = r.nodeLease(); err != nil {
			return err
		}
	}
	return nil
}

func ownerRefJSON(apiVersion, kind, name, uid string) string {
	return fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"name":%q,"uid":%q}`, apiVersion, kind, name, uid)
}

var leaseGVR = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

const nodeLeaseNS = "kube-node-lease"

// nodeLease returns the Lease of the first simulated node (by name) that
// its Node owns.
func (r *scenarioRun) nodeLease() (*unstructured.Unstructured, error) {
	list, err := r.c.dynamic.Resource(leaseGVR).Namespace(nodeLeaseNS).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	items := list.Items
	slices.SortFunc(items, func(a, b unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	for _, l := range items {
		if refs := l.GetOwnerReferences(); len(refs) == 1 && refs[0].Kind == "Node" && refs[0].Name == l.GetName() {
			return &l, nil
		}
	}
	return nil, fmt.Errorf("no node lease owned by its node in %s", nodeLeaseNS)
}

// leaseOutcome waits until the node renews the lease of UID uid, read at
// resourceVersion rv, and then until a lease whose owner never existed,
// made after that, is collected; and records whether the node's lease is
// still the same object.
func (r *scenarioRun) leaseOutcome(uid types.UID, rv, marker string) {
	if r.err != nil {
		return
	}
	leases := r.c.dynamic.Resource(leaseGVR).Namespace(nodeLeaseNS)
	name := marker + "-" + r.ns
	deadline := time.Now().Add(settleTimeout)
	for step := 0; step < 2; {
		var done bool
		switch step {
		case 0:
			l, err := r.nodeLease()
			done = err == nil && (l.GetUID() != uid || l.GetResourceVersion() != rv)
			if done {
				// A lease whose node never existed, made after the
				// renewal was seen.
				obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
					"metadata": map[string]any{"name": name, "ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "Node",
						"name": "never", "uid": "00000000-0000-0000-0000-00000000c0de"}}}}}
				if _, err := leases.Create(r.ctx, obj, metav1.CreateOptions{}); err != nil {
					r.fail("create lease "+name, err)
					return
				}
			}
		case 1:
			_, err := leases.Get(r.ctx, name, metav1.GetOptions{})
			done = apierrors.IsNotFound(err)
		}
		if done {
			step++
			continue
		}
		if time.Now().After(deadline) {
			r.fail("node lease", fmt.Errorf("not renewed and seen by the collector within %v (step %d)", settleTimeout, step))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	l, err := r.nodeLease()
	switch {
	case err != nil:
		r.lines = append(r.lines, "  outcome: node lease gone: "+r.rec.names.text(err.Error()))
	case l.GetUID() != uid:
		r.lines = append(r.lines, "  outcome: node lease replaced")
	default:
		r.lines = append(r.lines, "  outcome: node lease kept")
	}
}

// createCollectable creates the object of a JSON manifest that the
// collector is to delete: the next step does not wait for the watch to
// show it, only for the condition it names (collected).
func (r *scenarioRun) createCollectable(manifest string) {
	if r.err != nil {
		return
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(manifest)); err != nil {
		r.fail("manifest", err)
		return
	}
	_, err := r.c.dynamic.Resource(watchedKinds[u.GetKind()].gvr).Namespace(r.ns).Create(r.ctx, u, metav1.CreateOptions{})
	r.fail("create "+u.GetKind()+" "+u.GetName(), err)
}

// collected holds once the watch has shown kind/name deleted, and no
// object of that name since.
func collected(kind, name string) condition {
	return func(r *recorder) (bool, string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		deleted := false
		for _, t := range r.objects {
			if t.kind != kind || t.name != name {
				continue
			}
			if !t.gone() {
				return false, kind + " " + name + " still there: " + stateView(kind, t.obj)
			}
			deleted = true
		}
		return deleted, kind + " " + name + " not seen yet"
	}
}
