package apps

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry/core"
)

// Deployments, stored with kube-apiserver's defaults and validation and
// with no controller acting on them (D.5). Their generation also counts
// changed annotations, as kube's deployment strategy does.

func deploymentResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment", Singular: "deployment",
		Namespaced: true, ShortNames: []string{"deploy"}, Categories: []string{"all"}, Subresources: statusAndScale(),
		ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true, GenerationCountsAnnotations: true,
		Defaults: defaultDeployment, Validate: validateDeployment, ValidateUpdate: validateDeploymentUpdate, Warnings: deploymentWarnings,
		ValidateStatus: validateDeploymentStatus, ResetStatus: resetDeploymentStatus, PrepareSubresource: keepDeploymentLabels, Table: deploymentTable,
		// The status subresource resets the labels too, as kube's
		// deployment status strategy does (B.8).
		Untracked: map[string]*fieldpath.Set{"status": fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata", "labels"))}}
}

// keepDeploymentLabels keeps the stored labels on an update of the status
// subresource: kube's deployment status strategy resets them with the
// spec, unlike the other kinds' (B.8).
func keepDeploymentLabels(sub string, obj, old runtime.Object, _ time.Time) {
	if sub == "status" {
		obj.(*appsv1.Deployment).Labels = old.(*appsv1.Deployment).Labels
	}
}

// defaultDeployment is kube's SetDefaults_Deployment: one replica; a
// rolling update with a quarter of the pods unavailable or surging; ten
// revisions; a progress deadline of ten minutes; and the template's pod
// spec defaults. A Recreate strategy gets no rolling update parameters.
func defaultDeployment(obj runtime.Object) {
	s := &obj.(*appsv1.Deployment).Spec
	core.DefaultReplicas(&s.Replicas)
	st := &s.Strategy
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if st.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		quarter := func() *intstr.IntOrString { return ptr.To(intstr.FromString("25%")) }
		if st.RollingUpdate.MaxUnavailable == nil {
			st.RollingUpdate.MaxUnavailable = quarter()
		}
		if st.RollingUpdate.MaxSurge == nil {
			st.RollingUpdate.MaxSurge = quarter()
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if s.ProgressDeadlineSeconds == nil {
		s.ProgressDeadlineSeconds = ptr.To[int32](600)
	}
	core.DefaultPodSpec(&s.Template.Spec)
}

func resetDeploymentStatus(obj, old runtime.Object) {
	d := obj.(*appsv1.Deployment)
	d.Status = appsv1.DeploymentStatus{}
	if old != nil {
		d.Status = old.(*appsv1.Deployment).Status
	}
}

// deploymentWarnings are kube's: on a create, a name that is not a DNS
// label (pods are named after it) and the template's; on an update that
// moves the generation (spec or annotations changed), the template's.
func deploymentWarnings(obj, old runtime.Object) []string {
	d := obj.(*appsv1.Deployment)
	if o, ok := old.(*appsv1.Deployment); ok {
		if apiequality.Semantic.DeepEqual(d.Spec, o.Spec) && apiequality.Semantic.DeepEqual(d.Annotations, o.Annotations) {
			return nil
		}
		return core.PodTemplateWarnings(&d.Spec.Template)
	}
	var w []string
	if msgs := validation.IsDNS1123Label(d.Name); len(msgs) != 0 {
		w = append(w, fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
	}
	return append(w, core.PodTemplateWarnings(&d.Spec.Template)...)
}

// validateDeployment is kube's ValidateDeploymentSpec: replicas, the
// selector and the template as a ReplicaSet's (kube's messages name a
// ReplicaSet), the strategy, minReadySeconds, the revision history and a
// progress deadline longer than minReadySeconds.
func validateDeployment(obj, _ runtime.Object) field.ErrorList {
	s := &obj.(*appsv1.Deployment).Spec
	path := field.NewPath("spec")
	errs := apiserver.NonNegative(ptr.Deref(s.Replicas, 0), path.Child("replicas"))
	errs = append(errs, appsSelector(s.Selector, "deployment", path.Child("selector"))...)
	if sel, err := metav1.LabelSelectorAsSelector(s.Selector); err != nil {
		errs = append(errs, field.Invalid(path.Child("selector"), s.Selector, "invalid label selector"))
	} else {
		tp := path.Child("template")
		errs = append(errs, core.MatchesTemplate(sel, &s.Template, tp)...)
		errs = append(errs, core.ValidatePodTemplate(&s.Template, tp)...)
		errs = append(errs, core.KeepsPodsRunning(&s.Template.Spec, "ReplicaSet", tp.Child("spec"))...)
	}
	errs = append(errs, validateDeploymentStrategy(&s.Strategy, path.Child("strategy"))...)
	errs = append(errs, apiserver.NonNegative(s.MinReadySeconds, path.Child("minReadySeconds"))...)
	if s.RevisionHistoryLimit != nil {
		errs = append(errs, apiserver.NonNegative(*s.RevisionHistoryLimit, path.Child("revisionHistoryLimit"))...)
	}
	if p := s.ProgressDeadlineSeconds; p != nil {
		errs = append(errs, apiserver.NonNegative(*p, path.Child("progressDeadlineSeconds"))...)
		if *p <= s.MinReadySeconds {
			errs = append(errs, field.Invalid(path.Child("progressDeadlineSeconds"), *p, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

// validateDeploymentStrategy accepts Recreate without rolling update
// parameters and RollingUpdate with them (the defaults set them).
func validateDeploymentStrategy(st *appsv1.DeploymentStrategy, path *field.Path) field.ErrorList {
	switch st.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if st.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(path.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")}
		}
		return nil
	case appsv1.RollingUpdateDeploymentStrategyType:
		if st.RollingUpdate == nil {
			return field.ErrorList{field.Required(path.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		return validateRollingUpdateDeployment(st.RollingUpdate, path.Child("rollingUpdate"))
	}
	return field.ErrorList{field.NotSupported(path, toInternalDeploymentStrategy(st),
		[]string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)})}
}

// validateRollingUpdateDeployment: each a count or a percentage, not both
// 0, and maxUnavailable not above 100%.
func validateRollingUpdateDeployment(r *appsv1.RollingUpdateDeployment, path *field.Path) field.ErrorList {
	mu, ms := ptr.Deref(r.MaxUnavailable, intstr.IntOrString{}), ptr.Deref(r.MaxSurge, intstr.IntOrString{})
	errs := apiserver.IntOrPercent(mu, path.Child("maxUnavailable"))
	errs = append(errs, apiserver.IntOrPercent(ms, path.Child("maxSurge"))...)
	if intOrPercentValue(mu) == 0 && intOrPercentValue(ms) == 0 {
		errs = append(errs, field.Invalid(path.Child("maxUnavailable"), mu, "may not be 0 when `maxSurge` is 0"))
	}
	if pct, ok := apiserver.Percent(mu); ok && pct > 100 {
		errs = append(errs, field.Invalid(path.Child("maxUnavailable"), mu, "must not be greater than 100%"))
	}
	return errs
}

func intOrPercentValue(v intstr.IntOrString) int {
	if pct, ok := apiserver.Percent(v); ok {
		return pct
	}
	return v.IntValue()
}

// internalDeploymentStrategy is kube's internal DeploymentStrategy, whose
// Go field names an unsupported strategy's error shows.
type internalDeploymentStrategy struct {
	Type          appsv1.DeploymentStrategyType
	RollingUpdate *internalRollingUpdateDeployment
}

type internalRollingUpdateDeployment struct {
	MaxUnavailable intstr.IntOrString
	MaxSurge       intstr.IntOrString
}

func toInternalDeploymentStrategy(st *appsv1.DeploymentStrategy) *internalDeploymentStrategy {
	in := &internalDeploymentStrategy{Type: st.Type}
	if r := st.RollingUpdate; r != nil {
		in.RollingUpdate = &internalRollingUpdateDeployment{MaxUnavailable: ptr.Deref(r.MaxUnavailable, intstr.IntOrString{}), MaxSurge: ptr.Deref(r.MaxSurge, intstr.IntOrString{})}
	}
	return in
}

// validateDeploymentUpdate keeps the selector.
func validateDeploymentUpdate(obj, old runtime.Object) field.ErrorList {
	return apivalidation.ValidateImmutableField(obj.(*appsv1.Deployment).Spec.Selector, old.(*appsv1.Deployment).Spec.Selector,
		field.NewPath("spec", "selector"))
}

// validateDeploymentStatus is kube's ValidateDeploymentStatusUpdate.
func validateDeploymentStatus(obj, old runtime.Object) field.ErrorList {
	st := &obj.(*appsv1.Deployment).Status
	path := field.NewPath("status")
	errs := core.NonNegativeCounts(path, core.N64("observedGeneration", st.ObservedGeneration), core.N32("replicas", st.Replicas),
		core.N32("updatedReplicas", st.UpdatedReplicas), core.N32("readyReplicas", st.ReadyReplicas), core.N32("availableReplicas", st.AvailableReplicas),
		core.N32("unavailableReplicas", st.UnavailableReplicas), core.Opt32("terminatingReplicas", st.TerminatingReplicas), core.Opt32("collisionCount", st.CollisionCount))
	errs = append(errs, core.NotAboveReplicas(path, st.Replicas, st.AvailableReplicas, st.ReadyReplicas, "cannot be greater than readyReplicas",
		core.N32("updatedReplicas", st.UpdatedReplicas), core.N32("readyReplicas", st.ReadyReplicas), core.N32("availableReplicas", st.AvailableReplicas))...)
	if old == nil {
		return errs
	}
	return append(errs, collisionNotLowered(path, st.CollisionCount, old.(*appsv1.Deployment).Status.CollisionCount)...)
}

// deploymentTable has the columns of kubectl get deploy -o wide.
var deploymentTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
		{Name: "Up-to-date", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]},
		{Name: "Available", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]},
		apiserver.AgeColumn, core.ContainersColumn, core.ImagesColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]},
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		d := obj.(*appsv1.Deployment)
		names, images := core.ContainerCells(d.Spec.Template.Spec.Containers)
		selector := "<invalid>"
		if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			selector = sel.String()
		}
		return []any{d.Name, fmt.Sprintf("%d/%d", int64(d.Status.ReadyReplicas), core.Replicas(d.Spec.Replicas)),
			int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas), apiserver.Age(d.CreationTimestamp, now), names, images, selector}
	},
}
