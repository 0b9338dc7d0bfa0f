// Package node is the node.k8s.io API group: RuntimeClasses, which name
// the container runtime handler a pod runs with, its overhead and where
// it may be scheduled (D.16). The RuntimeClass admission plugin
// (apiserver/admission) merges a class into the pods that name it.
package node

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// RuntimeClassesGVR is node.k8s.io/v1's runtimeclasses.
var RuntimeClassesGVR = nodev1.SchemeGroupVersion.WithResource("runtimeclasses")

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{{GVR: RuntimeClassesGVR, Kind: "RuntimeClass", Singular: "runtimeclass",
		ValidateName: apivalidation.NameIsDNSSubdomain, RequireResourceVersion: true,
		Validate: validateRuntimeClass, Table: runtimeClassTable}}
}

// validateRuntimeClass: a DNS label handler, which never changes, an
// overhead of container resources not negative, and valid scheduling
// labels and tolerations.
func validateRuntimeClass(obj, old runtime.Object) field.ErrorList {
	rc := obj.(*nodev1.RuntimeClass)
	var errs field.ErrorList
	if rc.Overhead != nil {
		errs = append(errs, validateOverhead(rc.Overhead.PodFixed, field.NewPath("overhead", "limits"))...)
	}
	if s := rc.Scheduling; s != nil {
		errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, field.NewPath("scheduling", "nodeSelector"))...)
		errs = append(errs, validateTolerations(s.Tolerations, field.NewPath("scheduling", "tolerations"))...)
	}
	// kube's declarative validation checks the handler, and its errors
	// come after the others, an immutable one without the value.
	if rc.Handler == "" {
		errs = append(errs, field.Required(field.NewPath("handler"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Label(rc.Handler) {
			errs = append(errs, field.Invalid(field.NewPath("handler"), rc.Handler, msg))
		}
	}
	if old != nil && rc.Handler != old.(*nodev1.RuntimeClass).Handler {
		errs = append(errs, field.Invalid(field.NewPath("handler"), nil, "field is immutable"))
	}
	return errs
}

// standardContainerResources are the resources a container may name
// without a domain.
var standardContainerResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}

// standardResources are the other resources kube knows without a domain,
// which a quota may count but a container not ask for.
var standardResources = []corev1.ResourceName{"pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
	"configmaps", "persistentvolumeclaims", "storage", "requests.cpu", "requests.memory", "requests.storage",
	"requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage"}

// validateOverhead checks the overhead as kube checks a container's
// limits: known resource names and quantities not negative.
func validateOverhead(list corev1.ResourceList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(func(yield func(corev1.ResourceName) bool) {
		for k := range list {
			if !yield(k) {
				return
			}
		}
	}) {
		p, q := path.Key(string(name)), list[name]
		switch {
		case len(validation.IsQualifiedName(string(name))) > 0:
			for _, msg := range validation.IsQualifiedName(string(name)) {
				errs = append(errs, field.Invalid(p, name, msg))
			}
		case strings.Contains(string(name), "/") || slices.Contains(standardContainerResources, name) ||
			strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		case !slices.Contains(standardResources, name):
			errs = append(errs, field.Invalid(p, name, "must be a standard resource type or fully qualified"))
		default:
			errs = append(errs, field.Invalid(p, name, "must be a standard resource for containers"))
		}
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
	}
	return errs
}

var (
	tolerationOperators = []string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}
	taintEffects        = []string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}
)

// validateTolerations checks each toleration as kube checks a pod's, and
// refuses the same toleration twice.
func validateTolerations(tolerations []corev1.Toleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.Toleration]bool{}
	for i, t := range tolerations {
		p := path.Index(i)
		if t.Key != "" {
			for _, msg := range validation.IsQualifiedName(t.Key) {
				errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
			}
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, tolerationOperators))
		}
		if t.Effect != "" && !slices.Contains(taintEffects, string(t.Effect)) {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
		}
		k := corev1.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
		if seen[k] {
			errs = append(errs, field.Duplicate(p, t))
		}
		seen[k] = true
	}
	return errs
}

var runtimeClassTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		// kube describes the column with metadata's (missing) "handler".
		{Name: "Handler", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["handler"]},
		apiserver.AgeColumn,
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		rc := obj.(*nodev1.RuntimeClass)
		return []any{rc.Name, rc.Handler, apiserver.Age(rc.CreationTimestamp, now)}
	},
}
