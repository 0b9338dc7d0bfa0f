package core

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// What ReplicationControllers share with the apps group's replicated kinds:
// the default replica count, the status counts' rules and the replica
// columns of their tables.

// DefaultReplicas sets an unset replica count to one, as kube defaults it.
func DefaultReplicas(r **int32) {
	if *r == nil {
		one := int32(1)
		*r = &one
	}
}

// StatusCount is one count of a status, named by its field, made by N32,
// N64 or Opt32; an optional count the writer left out is not set.
type StatusCount struct {
	name string
	n    int64
	set  bool
}

// N32 is a count of int32 that is always set.
func N32(name string, n int32) StatusCount { return StatusCount{name, int64(n), true} }

// N64 is a count of int64 that is always set.
func N64(name string, n int64) StatusCount { return StatusCount{name, n, true} }

// Opt32 is an optional count, not set when n is nil.
func Opt32(name string, n *int32) StatusCount {
	if n == nil {
		return StatusCount{name: name}
	}
	return N32(name, *n)
}

// NonNegativeCounts checks that no count set is negative.
func NonNegativeCounts(path *field.Path, counts ...StatusCount) field.ErrorList {
	var errs field.ErrorList
	for _, c := range counts {
		if c.set {
			errs = append(errs, apiserver.NonNegative(c.n, path.Child(c.name))...)
		}
	}
	return errs
}

// NotAboveReplicas checks that none of counts is above replicas, and that
// available is not above ready (availableDetail is kube's message for it,
// which differs between the kinds).
func NotAboveReplicas(path *field.Path, replicas, available, ready int32, availableDetail string, counts ...StatusCount) field.ErrorList {
	var errs field.ErrorList
	for _, c := range counts {
		if c.n > int64(replicas) {
			errs = append(errs, field.Invalid(path.Child(c.name), int32(c.n), "cannot be greater than status.replicas"))
		}
	}
	if available > ready {
		errs = append(errs, field.Invalid(path.Child("availableReplicas"), available, availableDetail))
	}
	return errs
}

// ReplicatedStatus checks the counts a ReplicationController's or a
// ReplicaSet's status shares (and a ReplicaSet's terminating count).
func ReplicatedStatus(replicas, fullyLabeled, ready, available int32, observedGeneration int64, terminating *int32) field.ErrorList {
	path := field.NewPath("status")
	errs := NonNegativeCounts(path, N32("replicas", replicas), N32("fullyLabeledReplicas", fullyLabeled), N32("readyReplicas", ready),
		N32("availableReplicas", available), N64("observedGeneration", observedGeneration), Opt32("terminatingReplicas", terminating))
	return append(errs, NotAboveReplicas(path, replicas, available, ready, "cannot be greater than readyReplicas",
		N32("fullyLabeledReplicas", fullyLabeled), N32("readyReplicas", ready), N32("availableReplicas", available))...)
}

// ReplicasColumns are the columns of replication controllers and replica
// sets, given the documentation of their spec and status.
func ReplicasColumns(specDoc, statusDoc map[string]string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Desired", Type: "integer", Description: specDoc["replicas"]},
		{Name: "Current", Type: "integer", Description: statusDoc["replicas"]},
		{Name: "Ready", Type: "integer", Description: statusDoc["readyReplicas"]},
		apiserver.AgeColumn, ContainersColumn, ImagesColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: specDoc["selector"]},
	}
}

// Replicas is a desired replica count, 0 when unset.
func Replicas(p *int32) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}
