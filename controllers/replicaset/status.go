package replicaset

import (
	"context"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubegate/kubegate/controllers"
)

// calculateStatus returns rs's status given its active pods, the count of
// its terminating pods (nil for a kind without the field) and the error
// of its last attempt to create or delete pods (docs/kubernetes-
// behaviour.md, G.2).
func calculateStatus(rs *appsv1.ReplicaSet, active []*corev1.Pod, terminating *int32, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	status := rs.Status
	template := labels.SelectorFromValidatedSet(rs.Spec.Template.Labels)
	var fully, ready, available int32
	for _, p := range active {
		if template.Matches(labels.Set(p.Labels)) {
			fully++
		}
		if controllers.PodReady(p) {
			ready++
			if controllers.PodAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	failure := conditionIndex(status.Conditions, appsv1.ReplicaSetReplicaFailure)
	switch {
	case manageErr != nil && failure < 0:
		reason := ""
		if diff := len(active) - int(replicas(rs)); diff < 0 {
			reason = "FailedCreate"
		} else if diff > 0 {
			reason = "FailedDelete"
		}
		status.Conditions = append(append([]appsv1.ReplicaSetCondition(nil), status.Conditions...), appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now),
			Reason: reason, Message: manageErr.Error()})
	case manageErr == nil && failure >= 0:
		var kept []appsv1.ReplicaSetCondition
		for _, c := range status.Conditions {
			if c.Type != appsv1.ReplicaSetReplicaFailure {
				kept = append(kept, c)
			}
		}
		status.Conditions = kept
	}
	status.Replicas = int32(len(active))
	status.FullyLabeledReplicas = fully
	status.ReadyReplicas = ready
	status.AvailableReplicas = available
	status.TerminatingReplicas = terminating
	return status
}

func conditionIndex(cs []appsv1.ReplicaSetCondition, t appsv1.ReplicaSetConditionType) int {
	for i, c := range cs {
		if c.Type == t {
			return i
		}
	}
	return -1
}

// writeStatus writes status to rs unless nothing changed and rs's
// generation has been observed, with one retry on a fresh read.
func (rc *Controller) writeStatus(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	s := rs.Status
	if s.Replicas == status.Replicas && s.FullyLabeledReplicas == status.FullyLabeledReplicas &&
		s.ReadyReplicas == status.ReadyReplicas && s.AvailableReplicas == status.AvailableReplicas &&
		equalPtr(s.TerminatingReplicas, status.TerminatingReplicas) && rs.Generation == s.ObservedGeneration &&
		reflect.DeepEqual(s.Conditions, status.Conditions) {
		return rs, nil
	}
	status.ObservedGeneration = rs.Generation
	for attempt := 0; ; attempt++ {
		rs.Status = status
		updated, err := rc.kind.updateStatus(ctx, rs)
		if err == nil {
			return updated, nil
		}
		if attempt >= 1 {
			return nil, err
		}
		if rs, err = rc.kind.fresh(ctx, rs.Namespace, rs.Name); err != nil {
			return nil, err
		}
	}
}

func equalPtr(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
