package apiserver

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The replicated workloads kubegate stores for clients, with no controller
// acting on them yet: ReplicationControllers, ReplicaSets and StatefulSets.
// Their defaults are kube-apiserver's (D.5); a pod template's spec gets
// the defaults of every pod spec, not those kube gives a Pod only.

// defaultReplicaSet gives one replica and the template's pod spec defaults.
// A ReplicaSet's selector is never taken from its template.
func defaultReplicaSet(obj runtime.Object) {
	rs := obj.(*appsv1.ReplicaSet)
	defaultReplicas(&rs.Spec.Replicas)
	DefaultPodSpec(&rs.Spec.Template.Spec)
}

// defaultStatefulSet fills kube's StatefulSet defaults: ordered pod
// management; a rolling update from partition 0, at most one pod
// unavailable (MaxUnavailableStatefulSet is on by default since 1.37);
// volume claims retained when the set is deleted or scaled down; one
// replica; ten revisions kept; and the template's pod spec defaults. Its
// volume claim templates get a filesystem volume mode, a Pending phase and
// the apiVersion and kind kube's conversion writes into them.
func defaultStatefulSet(obj runtime.Object) {
	ss := obj.(*appsv1.StatefulSet)
	s := &ss.Spec
	if s.PodManagementPolicy == "" {
		s.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	u := &s.UpdateStrategy
	if u.Type == "" {
		u.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if u.RollingUpdate == nil {
			u.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	// An explicit RollingUpdate type without parameters stays without them.
	if r := u.RollingUpdate; u.Type == appsv1.RollingUpdateStatefulSetStrategyType && r != nil {
		if r.Partition == nil {
			var zero int32
			r.Partition = &zero
		}
		if r.MaxUnavailable == nil {
			one := intstr.FromInt32(1)
			r.MaxUnavailable = &one
		}
	}
	if s.PersistentVolumeClaimRetentionPolicy == nil {
		s.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if p := s.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted == "" {
		p.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p := s.PersistentVolumeClaimRetentionPolicy; p.WhenScaled == "" {
		p.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	defaultReplicas(&s.Replicas)
	if s.RevisionHistoryLimit == nil {
		ten := int32(10)
		s.RevisionHistoryLimit = &ten
	}
	DefaultPodSpec(&s.Template.Spec)
	for i := range s.VolumeClaimTemplates {
		c := &s.VolumeClaimTemplates[i]
		c.APIVersion, c.Kind = "v1", "PersistentVolumeClaim"
		if c.Status.Phase == "" {
			c.Status.Phase = corev1.ClaimPending
		}
		if c.Spec.VolumeMode == nil {
			m := corev1.PersistentVolumeFilesystem
			c.Spec.VolumeMode = &m
		}
	}
}

func defaultReplicas(r **int32) {
	if *r == nil {
		one := int32(1)
		*r = &one
	}
}

// The status of these kinds is their controller's: a create clears it, an
// update of the object keeps the stored one, and the status subresource
// changes nothing else.

func resetReplicaSetStatus(obj, old runtime.Object) {
	rs := obj.(*appsv1.ReplicaSet)
	rs.Status = appsv1.ReplicaSetStatus{}
	if old != nil {
		rs.Status = old.(*appsv1.ReplicaSet).Status
	}
}

func resetStatefulSetStatus(obj, old runtime.Object) {
	ss := obj.(*appsv1.StatefulSet)
	ss.Status = appsv1.StatefulSetStatus{}
	if old != nil {
		ss.Status = old.(*appsv1.StatefulSet).Status
	}
}

// ReplicationControllers and ReplicaSets can be selected by the replicas
// their status counts, as in kube.

func replicaSetFields(obj runtime.Object, set fields.Set) {
	set["status.replicas"] = strconv.Itoa(int(obj.(*appsv1.ReplicaSet).Status.Replicas))
}

func replicaSetWarnings(obj, old runtime.Object) []string {
	rs := obj.(*appsv1.ReplicaSet)
	if o, ok := old.(*appsv1.ReplicaSet); ok && apiequality.Semantic.DeepEqual(rs.Spec, o.Spec) {
		return nil
	}
	return PodTemplateWarnings(&rs.Spec.Template)
}

func statefulSetWarnings(obj, old runtime.Object) []string {
	sts := obj.(*appsv1.StatefulSet)
	if o, ok := old.(*appsv1.StatefulSet); ok && apiequality.Semantic.DeepEqual(sts.Spec, o.Spec) {
		return nil
	}
	return PodTemplateWarnings(&sts.Spec.Template)
}

// PodTemplateWarnings are kube's warnings about spec.template: a negative
// terminationGracePeriodSeconds, which a pod made from it gets as 1.
func PodTemplateWarnings(t *corev1.PodTemplateSpec) []string {
	if t == nil {
		return nil
	}
	var w []string
	if g := t.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		w = append(w, field.NewPath("spec", "template", "spec", "terminationGracePeriodSeconds").String()+
			": must be >= 0; negative values are invalid and will be treated as 1")
	}
	return w
}
