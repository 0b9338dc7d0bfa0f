package apps

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry/core"
)

// DaemonSets, stored with kube-apiserver's defaults and validation (D.5);
// the DaemonSet controller acts on them (G.4). Any change of the spec moves
// the generation; a change of the template also moves
// spec.templateGeneration, as kube's daemonset strategy does.

func daemonSetResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: appsv1.SchemeGroupVersion.WithResource("daemonsets"), Kind: "DaemonSet", Singular: "daemonset",
		Namespaced: true, ShortNames: []string{"ds"}, Categories: []string{"all"}, Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()},
		ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true,
		Defaults: defaultDaemonSet, Prepare: prepareDaemonSet, Validate: validateDaemonSet, ValidateUpdate: validateDaemonSetUpdate,
		Warnings: daemonSetWarnings, ValidateStatus: validateDaemonSetStatus, ResetStatus: resetDaemonSetStatus, Table: daemonSetTable}
}

// defaultDaemonSet is kube's SetDefaults_DaemonSet: a rolling update with
// one pod unavailable and none surging (OnDelete gets no parameters), ten
// revisions, and the template's pod spec defaults.
func defaultDaemonSet(obj runtime.Object) {
	s := &obj.(*appsv1.DaemonSet).Spec
	st := &s.UpdateStrategy
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if st.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if st.RollingUpdate.MaxUnavailable == nil {
			st.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
		if st.RollingUpdate.MaxSurge == nil {
			st.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr.To[int32](10)
	}
	core.DefaultPodSpec(&s.Template.Spec)
	// kube writes the template generation back as an annotation when it
	// converts, so the writer owns it; prepareDaemonSet sets its value.
	d := obj.(*appsv1.DaemonSet)
	if _, ok := d.Annotations[appsv1.DeprecatedTemplateGeneration]; !ok {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[appsv1.DeprecatedTemplateGeneration] = "0"
	}
}

// prepareDaemonSet sets kube's template generation, which apps/v1 shows
// as the annotation deprecated.daemonset.template.generation: on create
// the one given, at least 1; on update the old one, plus one when the
// template changed.
func prepareDaemonSet(obj, old runtime.Object) {
	d := obj.(*appsv1.DaemonSet)
	var tg int64
	if old == nil {
		tg = templateGeneration(d)
		if tg < 1 {
			tg = 1
		}
	} else {
		o := old.(*appsv1.DaemonSet)
		tg = templateGeneration(o)
		if !apiequality.Semantic.DeepEqual(d.Spec.Template, o.Spec.Template) {
			tg++
		}
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[appsv1.DeprecatedTemplateGeneration] = strconv.FormatInt(tg, 10)
}

func templateGeneration(d *appsv1.DaemonSet) int64 {
	tg, _ := strconv.ParseInt(d.Annotations[appsv1.DeprecatedTemplateGeneration], 10, 64)
	return tg
}

func resetDaemonSetStatus(obj, old runtime.Object) {
	d := obj.(*appsv1.DaemonSet)
	d.Status = appsv1.DaemonSetStatus{}
	if old != nil {
		d.Status = old.(*appsv1.DaemonSet).Status
	}
}

// daemonSetWarnings are kube's: the template's, on a create and on an
// update that changes the template.
func daemonSetWarnings(obj, old runtime.Object) []string {
	d := obj.(*appsv1.DaemonSet)
	if o, ok := old.(*appsv1.DaemonSet); ok && apiequality.Semantic.DeepEqual(d.Spec.Template, o.Spec.Template) {
		return nil
	}
	return core.PodTemplateWarnings(&d.Spec.Template)
}

// validateDaemonSet is kube's ValidateDaemonSetSpec, in its order: the
// selector, its match of the template's labels, not empty; the template,
// which must keep its pods running; minReadySeconds,
// the update strategy and the revision history.
func validateDaemonSet(obj, _ runtime.Object) field.ErrorList {
	s := &obj.(*appsv1.DaemonSet).Spec
	path := field.NewPath("spec")
	tp := path.Child("template")
	errs := metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))
	// A missing selector selects nothing, so its template's labels do not
	// match it either.
	if sel, err := metav1.LabelSelectorAsSelector(s.Selector); err == nil {
		errs = append(errs, core.MatchesTemplate(sel, &s.Template, tp)...)
	}
	if s.Selector != nil && len(s.Selector.MatchLabels)+len(s.Selector.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(path.Child("selector"), s.Selector, "empty selector is invalid for daemonset"))
	}
	errs = append(errs, core.ValidatePodTemplate(&s.Template, tp)...)
	errs = append(errs, core.KeepsPodsRunning(&s.Template.Spec, "DaemonSet", tp.Child("spec"))...)
	errs = append(errs, apiserver.NonNegative(s.MinReadySeconds, path.Child("minReadySeconds"))...)
	errs = append(errs, validateDaemonSetStrategy(&s.UpdateStrategy, path.Child("updateStrategy"))...)
	if s.RevisionHistoryLimit != nil {
		errs = append(errs, apiserver.NonNegative(*s.RevisionHistoryLimit, path.Child("revisionHistoryLimit"))...)
	}
	return errs
}

// validateDaemonSetStrategy is kube's ValidateDaemonSetUpdateStrategy.
func validateDaemonSetStrategy(st *appsv1.DaemonSetUpdateStrategy, path *field.Path) field.ErrorList {
	switch st.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if st.RollingUpdate == nil {
			return field.ErrorList{field.Required(path.Child("rollingUpdate"), "")}
		}
		return validateRollingUpdateDaemonSet(st.RollingUpdate, path.Child("rollingUpdate"))
	}
	return field.ErrorList{field.NotSupported(path, toInternalDaemonSetStrategy(st),
		[]string{string(appsv1.RollingUpdateDaemonSetStrategyType), string(appsv1.OnDeleteDaemonSetStrategyType)})}
}

// validateRollingUpdateDaemonSet: each a count or a percentage, neither
// above 100%, and exactly one of them not 0.
func validateRollingUpdateDaemonSet(r *appsv1.RollingUpdateDaemonSet, path *field.Path) field.ErrorList {
	mu, ms := ptr.Deref(r.MaxUnavailable, intstr.IntOrString{}), ptr.Deref(r.MaxSurge, intstr.IntOrString{})
	errs := apiserver.IntOrPercent(mu, path.Child("maxUnavailable"))
	errs = append(errs, apiserver.IntOrPercent(ms, path.Child("maxSurge"))...)
	if pct, ok := apiserver.Percent(mu); ok && pct > 100 {
		errs = append(errs, field.Invalid(path.Child("maxUnavailable"), mu, "must not be greater than 100%"))
	}
	if pct, ok := apiserver.Percent(ms); ok && pct > 100 {
		errs = append(errs, field.Invalid(path.Child("maxSurge"), ms, "must not be greater than 100%"))
	}
	hasUnavailable, hasSurge := intOrPercentValue(mu) != 0, intOrPercentValue(ms) != 0
	switch {
	case hasUnavailable && hasSurge:
		errs = append(errs, field.Invalid(path.Child("maxSurge"), ms, "may not be set when maxUnavailable is non-zero"))
	case !hasUnavailable && !hasSurge:
		errs = append(errs, field.Required(path.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
	}
	return errs
}

// internalDaemonSetStrategy is kube's internal DaemonSetUpdateStrategy,
// whose Go field names an unsupported strategy's error shows.
type internalDaemonSetStrategy struct {
	Type          appsv1.DaemonSetUpdateStrategyType
	RollingUpdate *internalRollingUpdateDaemonSet
}

type internalRollingUpdateDaemonSet struct {
	MaxUnavailable intstr.IntOrString
	MaxSurge       intstr.IntOrString
}

func toInternalDaemonSetStrategy(st *appsv1.DaemonSetUpdateStrategy) *internalDaemonSetStrategy {
	in := &internalDaemonSetStrategy{Type: st.Type}
	if r := st.RollingUpdate; r != nil {
		in.RollingUpdate = &internalRollingUpdateDaemonSet{MaxUnavailable: ptr.Deref(r.MaxUnavailable, intstr.IntOrString{}), MaxSurge: ptr.Deref(r.MaxSurge, intstr.IntOrString{})}
	}
	return in
}

// validateDaemonSetUpdate keeps the selector.
func validateDaemonSetUpdate(obj, old runtime.Object) field.ErrorList {
	return apivalidation.ValidateImmutableField(obj.(*appsv1.DaemonSet).Spec.Selector, old.(*appsv1.DaemonSet).Spec.Selector,
		field.NewPath("spec", "selector"))
}

// validateDaemonSetStatus is kube's ValidateDaemonSetStatusUpdate.
func validateDaemonSetStatus(obj, old runtime.Object) field.ErrorList {
	st := &obj.(*appsv1.DaemonSet).Status
	path := field.NewPath("status")
	errs := core.NonNegativeCounts(path, core.N32("currentNumberScheduled", st.CurrentNumberScheduled), core.N32("numberMisscheduled", st.NumberMisscheduled),
		core.N32("desiredNumberScheduled", st.DesiredNumberScheduled), core.N32("numberReady", st.NumberReady), core.N64("observedGeneration", st.ObservedGeneration),
		core.N32("updatedNumberScheduled", st.UpdatedNumberScheduled), core.N32("numberAvailable", st.NumberAvailable), core.N32("numberUnavailable", st.NumberUnavailable),
		core.Opt32("collisionCount", st.CollisionCount))
	if old == nil {
		return errs
	}
	return append(errs, collisionNotLowered(path, st.CollisionCount, old.(*appsv1.DaemonSet).Status.CollisionCount)...)
}

// daemonSetTable has the columns of kubectl get ds -o wide.
var daemonSetTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Desired", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]},
		{Name: "Current", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]},
		{Name: "Ready", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]},
		{Name: "Up-to-date", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]},
		{Name: "Available", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]},
		{Name: "Node Selector", Type: "string", Description: corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]},
		apiserver.AgeColumn, core.ContainersColumn, core.ImagesColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"]},
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		d := obj.(*appsv1.DaemonSet)
		st := &d.Status
		names, images := core.ContainerCells(d.Spec.Template.Spec.Containers)
		return []any{d.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
			int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable), labels.FormatLabels(d.Spec.Template.Spec.NodeSelector),
			apiserver.Age(d.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(d.Spec.Selector)}
	},
	HiddenAnnotations: []string{appsv1.DeprecatedTemplateGeneration},
}
