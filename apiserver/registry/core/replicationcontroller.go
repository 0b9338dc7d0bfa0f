package core

import (
	"maps"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// replicationControllerResource is stored with its defaults and validated
// (D.5); no controller acts on it yet.
func replicationControllerResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: corev1.SchemeGroupVersion.WithResource("replicationcontrollers"), Kind: "ReplicationController", Singular: "replicationcontroller",
		Namespaced: true, ShortNames: []string{"rc"}, Categories: []string{"all"},
		Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource(), "scale": apiserver.ScaleSubresource()},
		ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true, GC: apiserver.GCOrphan,
		Fields: replicationControllerFields, Defaults: defaultReplicationController, Validate: validateReplicationController, Warnings: replicationControllerWarnings,
		ValidateStatus: validateReplicationControllerStatus, ResetStatus: resetReplicationControllerStatus, Table: replicationControllerTable}
}

// defaultReplicationController takes the selector and, when the object has
// none, its labels from the template's labels; one replica; the template's
// pod spec defaults.
func defaultReplicationController(obj runtime.Object) {
	rc := obj.(*corev1.ReplicationController)
	if t := rc.Spec.Template; t != nil && t.Labels != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = maps.Clone(t.Labels)
		}
		if len(rc.Labels) == 0 {
			rc.Labels = maps.Clone(t.Labels)
		}
	}
	DefaultReplicas(&rc.Spec.Replicas)
	if rc.Spec.Template != nil {
		DefaultPodSpec(&rc.Spec.Template.Spec)
	}
}

func resetReplicationControllerStatus(obj, old runtime.Object) {
	rc := obj.(*corev1.ReplicationController)
	rc.Status = corev1.ReplicationControllerStatus{}
	if old != nil {
		rc.Status = old.(*corev1.ReplicationController).Status
	}
}

func replicationControllerFields(obj runtime.Object, set fields.Set) {
	set["status.replicas"] = strconv.Itoa(int(obj.(*corev1.ReplicationController).Status.Replicas))
}

// The warnings kube gives about a workload's pod template, on a create
// and on an update that changes the spec (D.5).
func replicationControllerWarnings(obj, old runtime.Object) []string {
	rc := obj.(*corev1.ReplicationController)
	if o, ok := old.(*corev1.ReplicationController); ok && apiequality.Semantic.DeepEqual(rc.Spec, o.Spec) {
		return nil
	}
	return PodTemplateWarnings(rc.Spec.Template)
}

// validateReplicationController checks the spec: minReadySeconds, a
// selector (defaulted from the template's labels), replicas, and a template
// that the selector matches. kube lets an update change the selector.
func validateReplicationController(obj, _ runtime.Object) field.ErrorList {
	s := &obj.(*corev1.ReplicationController).Spec
	path := field.NewPath("spec")
	errs := apiserver.NonNegative(s.MinReadySeconds, path.Child("minReadySeconds"))
	sel := labels.Set(s.Selector).AsSelector()
	if sel.Empty() {
		errs = append(errs, field.Required(path.Child("selector"), ""))
	}
	if s.Replicas == nil {
		errs = append(errs, field.Required(path.Child("replicas"), ""))
	} else {
		errs = append(errs, apiserver.NonNegative(*s.Replicas, path.Child("replicas"))...)
	}
	tp := path.Child("template")
	if s.Template == nil {
		return append(errs, field.Required(tp, ""))
	}
	errs = append(errs, MatchesTemplate(sel, s.Template, tp)...)
	errs = append(errs, ValidatePodTemplate(s.Template, tp)...)
	return append(errs, KeepsPodsRunning(&s.Template.Spec, "ReplicationController", tp.Child("spec"))...)
}

func validateReplicationControllerStatus(obj, _ runtime.Object) field.ErrorList {
	st := obj.(*corev1.ReplicationController).Status
	return ReplicatedStatus(st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas, st.ObservedGeneration, nil)
}

var replicationControllerTable = &apiserver.TableDef{
	Columns: ReplicasColumns(corev1.ReplicationControllerSpec{}.SwaggerDoc(), corev1.ReplicationControllerStatus{}.SwaggerDoc()),
	Cells: func(obj runtime.Object, now time.Time) []any {
		rc := obj.(*corev1.ReplicationController)
		var names, images string
		if rc.Spec.Template != nil {
			names, images = ContainerCells(rc.Spec.Template.Spec.Containers)
		}
		return []any{rc.Name, Replicas(rc.Spec.Replicas), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas),
			apiserver.Age(rc.CreationTimestamp, now), names, images, labels.FormatLabels(rc.Spec.Selector)}
	},
}
