package deployment

import (
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons a Deployment reports (G.3).
const (
	ReasonReplicaSetUpdated          = "ReplicaSetUpdated"
	ReasonReplicaSetCreateError      = "ReplicaSetCreateError"
	ReasonNewReplicaSetCreated       = "NewReplicaSetCreated"
	ReasonFoundNewReplicaSet         = "FoundNewReplicaSet"
	ReasonNewReplicaSetAvailable     = "NewReplicaSetAvailable"
	ReasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonDeploymentPaused           = "DeploymentPaused"
	ReasonDeploymentResumed          = "DeploymentResumed"
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

func newCondition(now time.Time, t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, message string) appsv1.DeploymentCondition {
	ts := metav1.NewTime(now)
	return appsv1.DeploymentCondition{Type: t, Status: s, LastUpdateTime: ts, LastTransitionTime: ts, Reason: reason, Message: message}
}

func getCondition(s *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			c := s.Conditions[i]
			return &c
		}
	}
	return nil
}

// setCondition puts c in s, unless one of its type with the same status
// and reason is there already; a condition keeps its transition time while
// its status stays the same. The condition goes last.
func setCondition(s *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(s, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(s, c.Type)
	s.Conditions = append(s.Conditions, c)
}

func removeCondition(s *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var out []appsv1.DeploymentCondition
	for _, c := range s.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	s.Conditions = out
}

func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

func hasRevisionHistoryLimit(d *appsv1.Deployment) bool {
	return d.Spec.RevisionHistoryLimit != nil && *d.Spec.RevisionHistoryLimit != math.MaxInt32
}

// calculateStatus is d's status from its ReplicaSets: the counts summed,
// the observed generation, and the Available condition.
func calculateStatus(now time.Time, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus {
	available := sumStatus(all, statusAvailable)
	unavailable := max(sumSpec(all)-available, 0)
	s := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            sumStatus(all, statusReplicas),
		UpdatedReplicas:     sumStatus([]*appsv1.ReplicaSet{newRS}, statusReplicas),
		ReadyReplicas:       sumStatus(all, statusReady),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		TerminatingReplicas: terminating(all),
		CollisionCount:      d.Status.CollisionCount,
	}
	s.Conditions = append(s.Conditions, d.Status.Conditions...)
	if available >= desired(d)-maxUnavailable(d) {
		setCondition(&s, newCondition(now, appsv1.DeploymentAvailable, corev1.ConditionTrue,
			ReasonMinimumReplicasAvailable, "Deployment has minimum availability."))
	} else {
		setCondition(&s, newCondition(now, appsv1.DeploymentAvailable, corev1.ConditionFalse,
			ReasonMinimumReplicasUnavailable, "Deployment does not have minimum availability."))
	}
	return s
}

// complete reports whether s shows d fully rolled out: every replica
// updated and available, none extra, this generation observed.
func complete(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	n := desired(d)
	return s.UpdatedReplicas == n && s.Replicas == n && s.AvailableReplicas == n && s.ObservedGeneration >= d.Generation
}

// progressing reports whether s shows progress over d's last status.
func progressing(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	old := d.Status
	return s.UpdatedReplicas > old.UpdatedReplicas ||
		s.Replicas-s.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		s.ReadyReplicas > old.ReadyReplicas ||
		s.AvailableReplicas > old.AvailableReplicas
}

// timedOut reports whether d's Progressing condition in s was last
// updated more than progressDeadlineSeconds before now.
func timedOut(now time.Time, d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(s, appsv1.DeploymentProgressing)
	switch {
	case c == nil || c.Reason == ReasonNewReplicaSetAvailable:
		return false
	case c.Reason == ReasonProgressDeadlineExceeded:
		return true
	}
	return c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Before(now)
}

// rolloutStatus is d's status during a rollout: calculateStatus plus the
// Progressing condition, and the ReplicaSets' ReplicaFailure condition.
func rolloutStatus(now time.Time, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus {
	s := calculateStatus(now, all, newRS, d)
	if !hasProgressDeadline(d) {
		removeCondition(&s, appsv1.DeploymentProgressing)
	}
	cur := getCondition(&d.Status, appsv1.DeploymentProgressing)
	done := s.Replicas == s.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewReplicaSetAvailable
	if hasProgressDeadline(d) && !done {
		subject := func(what string) string {
			if newRS != nil {
				return fmt.Sprintf("ReplicaSet %q %s", newRS.Name, what)
			}
			return fmt.Sprintf("Deployment %q %s", d.Name, what)
		}
		switch {
		case complete(d, &s):
			setCondition(&s, newCondition(now, appsv1.DeploymentProgressing, corev1.ConditionTrue,
				ReasonNewReplicaSetAvailable, subject("has successfully progressed.")))
		case progressing(d, &s):
			// Progress refreshes the condition's update time even when
			// its reason stays the same.
			c := newCondition(now, appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, subject("is progressing."))
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					c.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&s, appsv1.DeploymentProgressing)
			}
			setCondition(&s, c)
		case timedOut(now, d, &s):
			setCondition(&s, newCondition(now, appsv1.DeploymentProgressing, corev1.ConditionFalse,
				ReasonProgressDeadlineExceeded, subject("has timed out progressing.")))
		}
	}
	if f := replicaFailure(all, newRS); f != nil {
		setCondition(&s, *f)
	} else {
		removeCondition(&s, appsv1.DeploymentReplicaFailure)
	}
	return s
}

// replicaFailure is the ReplicaFailure condition of the new ReplicaSet,
// else of the first other one that has it, as a Deployment condition.
func replicaFailure(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	for _, rs := range append([]*appsv1.ReplicaSet{newRS}, all...) {
		if rs == nil {
			continue
		}
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				return &appsv1.DeploymentCondition{Type: appsv1.DeploymentConditionType(c.Type), Status: c.Status,
					LastTransitionTime: c.LastTransitionTime, LastUpdateTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
			}
		}
	}
	return nil
}

// progressCheckAfter is when d, whose rollout has not finished nor timed
// out, should be looked at again to see whether it has: its Progressing
// condition's update time plus the deadline. It returns false when no
// check is needed.
func progressCheckAfter(now time.Time, d *appsv1.Deployment, s *appsv1.DeploymentStatus) (time.Duration, bool) {
	cur := getCondition(&d.Status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || cur == nil || complete(d, s) || cur.Reason == ReasonProgressDeadlineExceeded {
		return 0, false
	}
	return cur.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(now), true
}
