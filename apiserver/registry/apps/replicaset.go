package apps

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry/core"
)

// ReplicaSets, stored with kube-apiserver's defaults and validation (D.5).
// They share the checks of their pod template and status, and their
// table's columns, with ReplicationControllers.

func replicaSetResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: appsv1.SchemeGroupVersion.WithResource("replicasets"), Kind: "ReplicaSet", Singular: "replicaset",
		Namespaced: true, ShortNames: []string{"rs"}, Categories: []string{"all"}, Subresources: statusAndScale(), ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true,
		Fields: replicaSetFields, Defaults: defaultReplicaSet, Validate: validateReplicaSet, ValidateUpdate: validateReplicaSetUpdate, Warnings: replicaSetWarnings,
		ValidateStatus: validateReplicaSetStatus, ResetStatus: resetReplicaSetStatus, Table: replicaSetTable}
}

// defaultReplicaSet gives one replica and the template's pod spec defaults.
// A ReplicaSet's selector is never taken from its template.
func defaultReplicaSet(obj runtime.Object) {
	rs := obj.(*appsv1.ReplicaSet)
	core.DefaultReplicas(&rs.Spec.Replicas)
	core.DefaultPodSpec(&rs.Spec.Template.Spec)
}

func resetReplicaSetStatus(obj, old runtime.Object) {
	rs := obj.(*appsv1.ReplicaSet)
	rs.Status = appsv1.ReplicaSetStatus{}
	if old != nil {
		rs.Status = old.(*appsv1.ReplicaSet).Status
	}
}

// ReplicaSets can be selected by the replicas their status counts, as in
// kube.
func replicaSetFields(obj runtime.Object, set fields.Set) {
	set["status.replicas"] = strconv.Itoa(int(obj.(*appsv1.ReplicaSet).Status.Replicas))
}

// replicaSetWarnings are the template's, on a create and on an update that
// changes the spec (D.5).
func replicaSetWarnings(obj, old runtime.Object) []string {
	rs := obj.(*appsv1.ReplicaSet)
	if o, ok := old.(*appsv1.ReplicaSet); ok && apiequality.Semantic.DeepEqual(rs.Spec, o.Spec) {
		return nil
	}
	return core.PodTemplateWarnings(&rs.Spec.Template)
}

// validateReplicaSet checks replicas, minReadySeconds, the selector and the
// template.
func validateReplicaSet(obj, _ runtime.Object) field.ErrorList {
	s := &obj.(*appsv1.ReplicaSet).Spec
	path := field.NewPath("spec")
	errs := apiserver.NonNegative(ptr.Deref(s.Replicas, 0), path.Child("replicas"))
	errs = append(errs, apiserver.NonNegative(s.MinReadySeconds, path.Child("minReadySeconds"))...)
	errs = append(errs, appsSelector(s.Selector, "deployment", path.Child("selector"))...)
	sel, err := metav1.LabelSelectorAsSelector(s.Selector)
	if err != nil {
		return append(errs, field.Invalid(path.Child("selector"), s.Selector, "invalid label selector"))
	}
	tp := path.Child("template")
	errs = append(errs, core.MatchesTemplate(sel, &s.Template, tp)...)
	errs = append(errs, core.ValidatePodTemplate(&s.Template, tp)...)
	return append(errs, core.KeepsPodsRunning(&s.Template.Spec, "ReplicaSet", tp.Child("spec"))...)
}

// validateReplicaSetUpdate keeps the selector.
func validateReplicaSetUpdate(obj, old runtime.Object) field.ErrorList {
	return apivalidation.ValidateImmutableField(obj.(*appsv1.ReplicaSet).Spec.Selector, old.(*appsv1.ReplicaSet).Spec.Selector,
		field.NewPath("spec", "selector"))
}

// validateReplicaSetStatus checks the counts a ReplicationController has
// too, and the terminating count.
func validateReplicaSetStatus(obj, _ runtime.Object) field.ErrorList {
	st := obj.(*appsv1.ReplicaSet).Status
	return core.ReplicatedStatus(st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas, st.ObservedGeneration, st.TerminatingReplicas)
}

// replicaSetTable has the columns of a ReplicationController's table.
var replicaSetTable = &apiserver.TableDef{
	Columns: core.ReplicasColumns(appsv1.ReplicaSetSpec{}.SwaggerDoc(), appsv1.ReplicaSetStatus{}.SwaggerDoc()),
	Cells: func(obj runtime.Object, now time.Time) []any {
		rs := obj.(*appsv1.ReplicaSet)
		names, images := core.ContainerCells(rs.Spec.Template.Spec.Containers)
		return []any{rs.Name, core.Replicas(rs.Spec.Replicas), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
			apiserver.Age(rs.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(rs.Spec.Selector)}
	},
}
