package apps

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry/core"
)

// StatefulSets, stored with kube-apiserver's defaults and validation
// (D.5). Their name is a DNS label, as kube's is: their pods' hostnames
// are made from it.

func statefulSetResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: appsv1.SchemeGroupVersion.WithResource("statefulsets"), Kind: "StatefulSet", Singular: "statefulset",
		Namespaced: true, ShortNames: []string{"sts"}, Categories: []string{"all"}, Subresources: statusAndScale(), ValidateName: apivalidation.NameIsDNSLabel, Generation: true,
		Defaults: defaultStatefulSet, Restore: restoreClaimTypeMeta, Validate: validateStatefulSet, ValidateUpdate: validateStatefulSetUpdate, Warnings: statefulSetWarnings,
		ValidateStatus: validateStatefulSetStatus, ResetStatus: resetStatefulSetStatus, Table: statefulSetTable}
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
			r.Partition = ptr.To[int32](0)
		}
		if r.MaxUnavailable == nil {
			r.MaxUnavailable = ptr.To(intstr.FromInt32(1))
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
	core.DefaultReplicas(&s.Replicas)
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr.To[int32](10)
	}
	core.DefaultPodSpec(&s.Template.Spec)
	for i := range s.VolumeClaimTemplates {
		c := &s.VolumeClaimTemplates[i]
		c.APIVersion, c.Kind = "v1", "PersistentVolumeClaim"
		if c.Status.Phase == "" {
			c.Status.Phase = corev1.ClaimPending
		}
		if c.Spec.VolumeMode == nil {
			c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		}
	}
}

func resetStatefulSetStatus(obj, old runtime.Object) {
	ss := obj.(*appsv1.StatefulSet)
	ss.Status = appsv1.StatefulSetStatus{}
	if old != nil {
		ss.Status = old.(*appsv1.StatefulSet).Status
	}
}

// statefulSetWarnings are the template's, on a create and on an update
// that changes the spec (D.5).
func statefulSetWarnings(obj, old runtime.Object) []string {
	sts := obj.(*appsv1.StatefulSet)
	if o, ok := old.(*appsv1.StatefulSet); ok && apiequality.Semantic.DeepEqual(sts.Spec, o.Spec) {
		return nil
	}
	return core.PodTemplateWarnings(&sts.Spec.Template)
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
	errs = append(errs, apiserver.NonNegative(ptr.Deref(s.Replicas, 0), path.Child("replicas"))...)
	errs = append(errs, apiserver.NonNegative(s.MinReadySeconds, path.Child("minReadySeconds"))...)
	if s.Ordinals != nil {
		// kube names the field with a dot inside one path element.
		errs = append(errs, apiserver.NonNegative(s.Ordinals.Start, path.Child("ordinals.start"))...)
	}
	if create {
		errs = append(errs, apiserver.DNSLabel(path.Child("serviceName"), s.ServiceName)...)
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
		errs = append(errs, core.MatchesTemplate(sel, t, tp)...)
		if !skipTemplate {
			errs = append(errs, core.ValidatePodTemplate(t, tp)...)
		}
		// kube checks the template's labels and annotations a second time.
		errs = append(errs, metav1validation.ValidateLabels(t.Labels, tp.Child("labels"))...)
		errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, tp.Child("annotations"))...)
	}
	return append(errs, core.KeepsPodsRunning(&s.Template.Spec, "StatefulSet", tp.Child("spec"))...)
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
		errs := apiserver.NonNegative(ptr.Deref(u.RollingUpdate.Partition, 0), rp.Child("partition"))
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
	return &internalRollingUpdateStrategy{Partition: ptr.Deref(r.Partition, 0), MaxUnavailable: r.MaxUnavailable}
}

// maxUnavailable is a count or a percentage, above 0 and at most 100%.
func maxUnavailable(v intstr.IntOrString, path *field.Path) field.ErrorList {
	errs := apiserver.IntOrPercentUpTo100(v, path)
	if intOrPercentValue(v) == 0 {
		errs = append(errs, field.Invalid(path, v, "cannot be 0"))
	}
	return errs
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

// restoreClaimTypeMeta gives a stored set's claim templates the
// apiVersion and kind kube's conversion writes into each answer, which
// their stored protobuf encoding does not keep.
func restoreClaimTypeMeta(obj runtime.Object) {
	templates := obj.(*appsv1.StatefulSet).Spec.VolumeClaimTemplates
	for i := range templates {
		templates[i].APIVersion, templates[i].Kind = "v1", "PersistentVolumeClaim"
	}
}

func validateStatefulSetStatus(obj, old runtime.Object) field.ErrorList {
	st := obj.(*appsv1.StatefulSet).Status
	path := field.NewPath("status")
	errs := core.NonNegativeCounts(path, core.N32("replicas", st.Replicas), core.N32("readyReplicas", st.ReadyReplicas), core.N32("currentReplicas", st.CurrentReplicas),
		core.N32("updatedReplicas", st.UpdatedReplicas), core.N32("availableReplicas", st.AvailableReplicas), core.N64("observedGeneration", st.ObservedGeneration),
		core.Opt32("collisionCount", st.CollisionCount))
	errs = append(errs, core.NotAboveReplicas(path, st.Replicas, st.AvailableReplicas, st.ReadyReplicas, "cannot be greater than status.readyReplicas",
		core.N32("readyReplicas", st.ReadyReplicas), core.N32("currentReplicas", st.CurrentReplicas), core.N32("updatedReplicas", st.UpdatedReplicas),
		core.N32("availableReplicas", st.AvailableReplicas))...)
	if old == nil {
		return errs
	}
	return append(errs, collisionNotLowered(path, st.CollisionCount, old.(*appsv1.StatefulSet).Status.CollisionCount)...)
}

var statefulSetTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
		apiserver.AgeColumn, core.ContainersColumn, core.ImagesColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		ss := obj.(*appsv1.StatefulSet)
		names, images := core.ContainerCells(ss.Spec.Template.Spec.Containers)
		return []any{ss.Name, fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, core.Replicas(ss.Spec.Replicas)),
			apiserver.Age(ss.CreationTimestamp, now), names, images}
	},
}
