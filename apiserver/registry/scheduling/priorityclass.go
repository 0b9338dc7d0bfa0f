// Package scheduling is the scheduling.k8s.io API group: PriorityClasses,
// which name the priorities pods may ask for (D.11). The two system
// classes exist from the start and cannot be deleted; the Priority
// admission plugin (apiserver/admission) turns a pod's priorityClassName
// into its priority.
package scheduling

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

const (
	// systemClassPrefix starts the names reserved for the system classes.
	systemClassPrefix = "system-"
	// highestUserPriority is the highest value a class other than the
	// system ones may have.
	highestUserPriority = 1000000000
)

// systemPriorityClasses are the classes kube-apiserver creates at start.
var systemPriorityClasses = []schedulingv1.PriorityClass{
	{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 2000001000,
		Description: "Used for system critical pods that must not be moved from their current node."},
	{ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: 2000000000,
		Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
}

// IsSystemPriorityClass reports whether name is one of the system classes.
func IsSystemPriorityClass(name string) bool {
	for _, pc := range systemPriorityClasses {
		if pc.Name == name {
			return true
		}
	}
	return false
}

// systemPriorityClass refuses the deletion of a system class (D.11).
func systemPriorityClass(name string) error {
	if IsSystemPriorityClass(name) {
		return errors.New("this is a system priority class and cannot be deleted")
	}
	return nil
}

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{{GVR: apiserver.PriorityClassesGVR, Kind: "PriorityClass", Singular: "priorityclass", ShortNames: []string{"pc"},
		ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true, Undeletable: systemPriorityClass, Defaults: defaultPriorityClass,
		Validate: validatePriorityClass, ValidateUpdate: validatePriorityClassUpdate, Table: priorityClassTable, Initial: initialPriorityClasses}}
}

func defaultPriorityClass(obj runtime.Object) {
	if pc := obj.(*schedulingv1.PriorityClass); pc.PreemptionPolicy == nil {
		p := corev1.PreemptLowerPriority
		pc.PreemptionPolicy = &p
	}
}

// validatePriorityClass: a system- name only for the system classes with
// their values, other values at most highestUserPriority, and a known
// preemption policy.
func validatePriorityClass(obj, _ runtime.Object) field.ErrorList {
	pc := obj.(*schedulingv1.PriorityClass)
	var errs field.ErrorList
	if strings.HasPrefix(pc.Name, systemClassPrefix) {
		if err := knownSystemClass(pc); err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+systemClassPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > highestUserPriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %d", highestUserPriority)))
	}
	if p := pc.PreemptionPolicy; p != nil && *p != corev1.PreemptLowerPriority && *p != corev1.PreemptNever {
		errs = append(errs, field.NotSupported(field.NewPath("preemptionPolicy"), *p, []string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)}))
	}
	return errs
}

// knownSystemClass says why pc is not one of the system classes as it
// must be.
func knownSystemClass(pc *schedulingv1.PriorityClass) error {
	for _, spc := range systemPriorityClasses {
		if spc.Name != pc.Name {
			continue
		}
		if spc.Value != pc.Value {
			return fmt.Errorf("value of %s PriorityClass must be %d", spc.Name, spc.Value)
		}
		if spc.GlobalDefault != pc.GlobalDefault {
			return fmt.Errorf("globalDefault of %s PriorityClass must be %t", spc.Name, spc.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%s is not a known system priority class", pc.Name)
}

// validatePriorityClassUpdate: the value and the preemption policy never
// change.
func validatePriorityClassUpdate(obj, old runtime.Object) field.ErrorList {
	pc, oldPC := obj.(*schedulingv1.PriorityClass), old.(*schedulingv1.PriorityClass)
	var errs field.ErrorList
	if pc.Value != oldPC.Value {
		errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	if p, o := pc.PreemptionPolicy, oldPC.PreemptionPolicy; (p == nil) != (o == nil) || p != nil && *p != *o {
		errs = append(errs, field.Invalid(field.NewPath("preemptionPolicy"), p, "field is immutable"))
	}
	return errs
}

// initialPriorityClasses are the system classes, which kube-apiserver
// creates at start when they are missing.
func initialPriorityClasses() []runtime.Object {
	objs := make([]runtime.Object, len(systemPriorityClasses))
	for i := range systemPriorityClasses {
		objs[i] = systemPriorityClasses[i].DeepCopy()
	}
	return objs
}

var priorityClassTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Value", Type: "integer", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["value"]},
		{Name: "Global-Default", Type: "boolean", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["globalDefault"]},
		apiserver.AgeColumn,
		{Name: "PreemptionPolicy", Type: "string", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["preemptionPolicy"]},
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		pc := obj.(*schedulingv1.PriorityClass)
		policy := ""
		if pc.PreemptionPolicy != nil {
			policy = string(*pc.PreemptionPolicy)
		}
		return []any{pc.Name, int64(pc.Value), pc.GlobalDefault, apiserver.Age(pc.CreationTimestamp, now), policy}
	},
}
