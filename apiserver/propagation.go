package apiserver

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gcPolicy is what a delete does with an object's dependents when its
// options name no propagation policy (G.8). The zero value is background:
// the object goes at once and the garbage collector deletes its
// dependents.
type GCPolicy uint8

const (
	// gcOrphan keeps the dependents: ReplicationControllers and batch/v1
	// Jobs, as before the garbage collector existed.
	GCOrphan GCPolicy = iota + 1
	// gcUnsupported: the kind takes no part in garbage collection (Events);
	// a delete neither orphans nor waits for dependents, whatever it asks.
	GCUnsupported
)

// jobDeleteWarning is kube's warning on a delete of Jobs that names no
// propagation policy (G.8).
const jobDeleteWarning = "child pods are preserved by default when jobs are deleted; " +
	"set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning"

// shouldOrphan reports whether a delete with opts of an object with
// finalizers leaves its dependents: an explicit option decides, then a
// finalizer the object already has, then the kind's default.
func shouldOrphan(policy GCPolicy, finalizers []string, opts *metav1.DeleteOptions) bool {
	if policy == GCUnsupported {
		return false
	}
	//lint:ignore SA1019 kube still reads the deprecated field
	if o := opts.OrphanDependents; o != nil {
		return *o
	}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationOrphan:
			return true
		case metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
			return false
		}
	}
	for _, f := range finalizers {
		switch f {
		case metav1.FinalizerOrphanDependents:
			return true
		case metav1.FinalizerDeleteDependents:
			return false
		}
	}
	return policy == GCOrphan
}

// shouldDeleteDependents reports whether a delete with opts waits for the
// dependents to go first (foreground).
func shouldDeleteDependents(policy GCPolicy, finalizers []string, opts *metav1.DeleteOptions) bool {
	if policy == GCUnsupported {
		return false
	}
	//lint:ignore SA1019 kube still reads the deprecated field
	if opts.OrphanDependents != nil {
		return false
	}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationForeground:
			return true
		case metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan:
			return false
		}
	}
	for _, f := range finalizers {
		switch f {
		case metav1.FinalizerDeleteDependents:
			return true
		case metav1.FinalizerOrphanDependents:
			return false
		}
	}
	return false
}

// gcFinalizers returns the finalizers a delete with opts leaves on an
// object that has finalizers: the same without orphan and
// foregroundDeletion, then whichever of the two the delete asks for; and
// whether that changes the set.
func gcFinalizers(policy GCPolicy, finalizers []string, opts *metav1.DeleteOptions) ([]string, bool) {
	var out []string
	for _, f := range finalizers {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	if shouldOrphan(policy, finalizers, opts) {
		out = append(out, metav1.FinalizerOrphanDependents)
	}
	if shouldDeleteDependents(policy, finalizers, opts) {
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	if sameSet(finalizers, out) {
		return finalizers, false
	}
	return out, true
}

func sameSet(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// namespaceFinalizers returns the metadata finalizers a first delete of a
// namespace leaves on it: orphan and foregroundDeletion as opts ask, the
// ones it had when they ask nothing (G.9).
func namespaceFinalizers(finalizers []string, opts *metav1.DeleteOptions) []string {
	has := func(f string) bool { return slices.Contains(finalizers, f) }
	orphan, foreground := has(metav1.FinalizerOrphanDependents), has(metav1.FinalizerDeleteDependents)
	//lint:ignore SA1019 kube still reads the deprecated field
	if o := opts.OrphanDependents; o != nil {
		orphan, foreground = *o, !*o
	} else if p := opts.PropagationPolicy; p != nil {
		orphan, foreground = *p == metav1.DeletePropagationOrphan, *p == metav1.DeletePropagationForeground
	}
	var out []string
	for _, f := range finalizers {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	if orphan {
		out = append(out, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	if sameSet(finalizers, out) {
		return finalizers
	}
	return out
}
