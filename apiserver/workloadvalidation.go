package apiserver

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validation of ReplicationControllers, ReplicaSets and StatefulSets (D.5),
// in kube's order and with kube's messages. A pod template's spec is
// checked by the pod spec rules (validatePodSpec), without what kube checks
// on a Pod only; the template must keep its pods running (restart policy
// Always, no active deadline) and carry the labels its selector selects.

const selectorMismatch = "`selector` does not match template `labels`"

// ValidatePodTemplate checks a pod template as kube's ValidatePodTemplateSpec
// does: its labels and annotations, its pod spec, no ephemeral containers.
func ValidatePodTemplate(t *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(t.Labels, path.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, path.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&t.Spec, path.Child("spec"))...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(path.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// matchesTemplate requires a non-empty selector to select the template's
// labels.
func matchesTemplate(sel labels.Selector, t *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	if sel.Empty() || sel.Matches(labels.Set(t.Labels)) {
		return nil
	}
	return field.ErrorList{field.Invalid(path.Child("metadata", "labels"), t.Labels, selectorMismatch)}
}

// keepsPodsRunning requires what a controller that replaces its pods needs
// of their spec: restart policy Always and no active deadline. kind names
// the controller in kube's message.
func keepsPodsRunning(s *corev1.PodSpec, kind string, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(specPath.Child("restartPolicy"), s.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if s.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(specPath.Child("activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

// NonNegative is kube's ValidateNonnegativeField, for any integer field.
func NonNegative[T int32 | int64](v T, path *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(int64(v), path)
}

// deref reads a pointer that the defaults have set, 0 when they did not.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// appsSelector checks the label selector of an apps kind: required, valid
// (label values included), not empty. kindWord is the word kube's message
// uses: "deployment" for a ReplicaSet (sic), "statefulset".
func appsSelector(sel *metav1.LabelSelector, kindWord string, path *field.Path) field.ErrorList {
	if sel == nil {
		return field.ErrorList{field.Required(path, "")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(path, sel, "empty selector is invalid for "+kindWord))
	}
	return errs
}

// validateReplicaSet checks replicas, minReadySeconds, the selector and the
// template.
func validateReplicaSet(obj, _ runtime.Object) field.ErrorList {
	s := &obj.(*appsv1.ReplicaSet).Spec
	path := field.NewPath("spec")
	errs := NonNegative(deref(s.Replicas), path.Child("replicas"))
	errs = append(errs, NonNegative(s.MinReadySeconds, path.Child("minReadySeconds"))...)
	errs = append(errs, appsSelector(s.Selector, "deployment", path.Child("selector"))...)
	sel, err := metav1.LabelSelectorAsSelector(s.Selector)
	if err != nil {
		return append(errs, field.Invalid(path.Child("selector"), s.Selector, "invalid label selector"))
	}
	tp := path.Child("template")
	errs = append(errs, matchesTemplate(sel, &s.Template, tp)...)
	errs = append(errs, ValidatePodTemplate(&s.Template, tp)...)
	return append(errs, keepsPodsRunning(&s.Template.Spec, "ReplicaSet", tp.Child("spec"))...)
}

// validateReplicaSetUpdate keeps the selector.
func validateReplicaSetUpdate(obj, old runtime.Object) field.ErrorList {
	return apivalidation.ValidateImmutableField(obj.(*appsv1.ReplicaSet).Spec.Selector, old.(*appsv1.ReplicaSet).Spec.Selector,
		field.NewPath("spec", "selector"))
}

// validateStatefulSet checks a StatefulSet's spec. On an update the
// service name and volume claim templates are not checked (they cannot
// change), nor the template when the stored spec fails the same checks, as
// kube tolerates what older versions stored.
func validateStatefulSet(obj, old runtime.Object) field.ErrorList {
	s := &obj.(*appsv1.StatefulSet).Spec
	if old == nil {
		return validateStatefulSetSpec(s, true, false)
	}
	skipTemplate := len(validateStatefulSetSpec(&old.(*appsv1.StatefulSet).Spec, false, false)) > 0
	return validateStatefulSetSpec(s, false, skipTemplate)
}

func validateStatefulSetSpec(s *appsv1.StatefulSetSpec, create, skipTemplate bool) field.ErrorList {
	path := field.NewPath("spec")
	var errs field.ErrorList
	switch s.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(path.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(path.Child("podManagementPolicy"), s.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	errs = append(errs, validateStatefulSetUpdateStrategy(&s.UpdateStrategy, path.Child("updateStrategy"))...)
	if p := s.PersistentVolumeClaimRetentionPolicy; p != nil {
		pp := path.Child("persistentVolumeClaimRetentionPolicy")
		errs = append(errs, retentionPolicy(p.WhenDeleted, pp.Child("whenDeleted"))...)
		errs = append(errs, retentionPolicy(p.WhenScaled, pp.Child("whenScaled"))...)
	}
	errs = append(errs, NonNegative(deref(s.Replicas), path.Child("replicas"))...)
	errs = append(errs, NonNegative(s.MinReadySeconds, path.Child("minReadySeconds"))...)
	if s.Ordinals != nil {
		// kube names the field with a dot inside one path element.
		errs = append(errs, NonNegative(s.Ordinals.Start, path.Child("ordinals.start"))...)
	}
	if create {
		errs = append(errs, DNSLabel(path.Child("serviceName"), s.ServiceName)...)
	}
	errs = append(errs, appsSelector(s.Selector, "statefulset", path.Child("selector"))...)

	tp := path.Child("template")
	if sel, err := metav1.LabelSelectorAsSelector(s.Selector); err != nil {
		errs = append(errs, field.Invalid(path.Child("selector"), s.Selector, ""))
	} else {
		// The controller sets each pod's hostname and subdomain, so the
		// template's are not checked.
		t := s.Template.DeepCopy()
		t.Spec.Hostname, t.Spec.Subdomain = "", ""
		errs = append(errs, matchesTemplate(sel, t, tp)...)
		if !skipTemplate {
			errs = append(errs, ValidatePodTemplate(t, tp)...)
		}
		// kube checks the template's labels and annotations a second time.
		errs = append(errs, metav1validation.ValidateLabels(t.Labels, tp.Child("labels"))...)
		errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, tp.Child("annotations"))...)
	}
	return append(errs, keepsPodsRunning(&s.Template.Spec, "StatefulSet", tp.Child("spec"))...)
}

// validateStatefulSetUpdateStrategy accepts RollingUpdate, with a partition
// and maxUnavailable in range, and OnDelete without rolling update
// parameters. (Recreate is behind an alpha feature gate, off in 1.37.)
func validateStatefulSetUpdateStrategy(u *appsv1.StatefulSetUpdateStrategy, path *field.Path) field.ErrorList {
	switch u.Type {
	case "":
		return field.ErrorList{field.Required(path, "")}
	case appsv1.OnDeleteStatefulSetStrategyType:
		if u.RollingUpdate != nil {
			return field.ErrorList{field.Invalid(path.Child("rollingUpdate"), internalRollingUpdate(u.RollingUpdate),
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType))}
		}
		return nil
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if u.RollingUpdate == nil {
			return nil
		}
		rp := path.Child("rollingUpdate")
		errs := NonNegative(deref(u.RollingUpdate.Partition), rp.Child("partition"))
		if mu := u.RollingUpdate.MaxUnavailable; mu != nil {
			errs = append(errs, maxUnavailable(*mu, rp.Child("maxUnavailable"))...)
		}
		return errs
	}
	return field.ErrorList{field.Invalid(path, internalUpdateStrategy{Type: string(u.Type), RollingUpdate: internalRollingUpdate(u.RollingUpdate)},
		fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType))}
}

// internalUpdateStrategy and internalRollingUpdate are kube's internal
// types of the update strategy, whose Go field names kube's errors show.
type internalUpdateStrategy struct {
	Type          string
	RollingUpdate *internalRollingUpdateStrategy
}

type internalRollingUpdateStrategy struct {
	Partition      int32
	MaxUnavailable *intstr.IntOrString
}

func internalRollingUpdate(r *appsv1.RollingUpdateStatefulSetStrategy) *internalRollingUpdateStrategy {
	if r == nil {
		return nil
	}
	return &internalRollingUpdateStrategy{Partition: deref(r.Partition), MaxUnavailable: r.MaxUnavailable}
}

// maxUnavailable is a count or a percentage, above 0 and at most 100%.
func maxUnavailable(v intstr.IntOrString, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch v.Type {
	case intstr.String:
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(path, v, msg))
		}
	case intstr.Int:
		errs = append(errs, NonNegative(v.IntVal, path)...)
	}
	pct, isPct := percent(v)
	n := v.IntValue()
	if isPct {
		n = pct
	}
	if n == 0 {
		errs = append(errs, field.Invalid(path, v, "cannot be 0"))
	}
	if isPct && pct > 100 {
		errs = append(errs, field.Invalid(path, v, "must not be greater than 100%"))
	}
	return errs
}

// percent reads a valid percentage ("25%").
func percent(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(validation.IsValidPercent(v.StrVal)) > 0 {
		return 0, false
	}
	n, _ := strconv.Atoi(v.StrVal[:len(v.StrVal)-1])
	return n, true
}

func retentionPolicy(p appsv1.PersistentVolumeClaimRetentionPolicyType, path *field.Path) field.ErrorList {
	switch p {
	case appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
		return nil
	}
	return field.ErrorList{field.NotSupported(path, p, []string{
		string(appsv1.RetainPersistentVolumeClaimRetentionPolicyType), string(appsv1.DeletePersistentVolumeClaimRetentionPolicyType)})}
}

// validateStatefulSetUpdate keeps what the controller's pods and claims
// are made from: the selector, the volume claim templates, the service
// name and the pod management policy. The rest of the spec (replicas,
// ordinals, template, update strategy, claim retention, minReadySeconds,
// revision history) may change.
func validateStatefulSetUpdate(obj, old runtime.Object) field.ErrorList {
	s, o := &obj.(*appsv1.StatefulSet).Spec, &old.(*appsv1.StatefulSet).Spec
	path := field.NewPath("spec")
	errs := apivalidation.ValidateImmutableField(s.Selector, o.Selector, path.Child("selector"))
	errs = append(errs, apivalidation.ValidateImmutableField(s.VolumeClaimTemplates, o.VolumeClaimTemplates, path.Child("volumeClaimTemplates"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(s.ServiceName, o.ServiceName, path.Child("serviceName"))...)
	return append(errs, apivalidation.ValidateImmutableField(s.PodManagementPolicy, o.PodManagementPolicy, path.Child("podManagementPolicy"))...)
}

// The status rules: counts not negative, and none above the replicas the
// status counts (available not above ready either), each kind naming its
// own counts in kube's order.

// statusCount is one count of a status, named by its field; set is false for
// an optional count the writer left out.
type statusCount struct {
	name string
	n    int64
	set  bool
}

func n32(name string, n int32) statusCount { return statusCount{name, int64(n), true} }
func n64(name string, n int64) statusCount { return statusCount{name, n, true} }
func opt32(name string, n *int32) statusCount {
	if n == nil {
		return statusCount{name: name}
	}
	return n32(name, *n)
}

// nonNegativeCounts checks that no count set is negative.
func nonNegativeCounts(path *field.Path, counts ...statusCount) field.ErrorList {
	var errs field.ErrorList
	for _, c := range counts {
		if c.set {
			errs = append(errs, NonNegative(c.n, path.Child(c.name))...)
		}
	}
	return errs
}

// notAboveReplicas checks that none of counts is above replicas, and that
// available is not above ready (availableDetail is kube's message for it,
// which differs between the kinds).
func notAboveReplicas(path *field.Path, replicas, available, ready int32, availableDetail string, counts ...statusCount) field.ErrorList {
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

func validateReplicaSetStatus(obj, _ runtime.Object) field.ErrorList {
	st := obj.(*appsv1.ReplicaSet).Status
	return replicatedStatus(st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas, st.ObservedGeneration, st.TerminatingReplicas)
}

// replicatedStatus checks the counts a ReplicationController's or a
// ReplicaSet's status shares (and a ReplicaSet's terminating count).
func replicatedStatus(replicas, fullyLabeled, ready, available int32, observedGeneration int64, terminating *int32) field.ErrorList {
	path := field.NewPath("status")
	errs := nonNegativeCounts(path, n32("replicas", replicas), n32("fullyLabeledReplicas", fullyLabeled), n32("readyReplicas", ready),
		n32("availableReplicas", available), n64("observedGeneration", observedGeneration), opt32("terminatingReplicas", terminating))
	return append(errs, notAboveReplicas(path, replicas, available, ready, "cannot be greater than readyReplicas",
		n32("fullyLabeledReplicas", fullyLabeled), n32("readyReplicas", ready), n32("availableReplicas", available))...)
}

func validateStatefulSetStatus(obj, old runtime.Object) field.ErrorList {
	st := obj.(*appsv1.StatefulSet).Status
	path := field.NewPath("status")
	errs := nonNegativeCounts(path, n32("replicas", st.Replicas), n32("readyReplicas", st.ReadyReplicas), n32("currentReplicas", st.CurrentReplicas),
		n32("updatedReplicas", st.UpdatedReplicas), n32("availableReplicas", st.AvailableReplicas), n64("observedGeneration", st.ObservedGeneration),
		opt32("collisionCount", st.CollisionCount))
	errs = append(errs, notAboveReplicas(path, st.Replicas, st.AvailableReplicas, st.ReadyReplicas, "cannot be greater than status.readyReplicas",
		n32("readyReplicas", st.ReadyReplicas), n32("currentReplicas", st.CurrentReplicas), n32("updatedReplicas", st.UpdatedReplicas),
		n32("availableReplicas", st.AvailableReplicas))...)
	if old == nil {
		return errs
	}
	return append(errs, collisionNotLowered(path, st.CollisionCount, old.(*appsv1.StatefulSet).Status.CollisionCount)...)
}

// collisionNotLowered checks that a workload's collision count only grows.
func collisionNotLowered(path *field.Path, now, was *int32) field.ErrorList {
	if was != nil && (now == nil || *now < *was) {
		return field.ErrorList{field.Invalid(path.Child("collisionCount"), deref(now), "cannot be decremented")}
	}
	return nil
}
