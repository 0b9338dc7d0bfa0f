package storage

import (
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

const (
	// IsDefaultClassAnnotation marks a StorageClass as the default, which
	// a claim that names no class is given (the newest, should several be).
	IsDefaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"
	// BetaIsDefaultClassAnnotation is its older spelling, still honoured.
	BetaIsDefaultClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// IsDefaultClass reports whether sc is marked as a default class.
func IsDefaultClass(sc *storagev1.StorageClass) bool {
	return sc.Annotations[IsDefaultClassAnnotation] == "true" || sc.Annotations[BetaIsDefaultClassAnnotation] == "true"
}

// DefaultClass returns the default among classes: of those marked, the
// newest, and of those as new the first by name; nil when none is marked.
func DefaultClass(classes []*storagev1.StorageClass) *storagev1.StorageClass {
	var def *storagev1.StorageClass
	for _, sc := range classes {
		if !IsDefaultClass(sc) {
			continue
		}
		if def == nil || sc.CreationTimestamp.After(def.CreationTimestamp.Time) ||
			sc.CreationTimestamp.Equal(&def.CreationTimestamp) && sc.Name < def.Name {
			def = sc
		}
	}
	return def
}

// defaultStorageClass: Delete and Immediate unless set (D.17).
func defaultStorageClass(obj runtime.Object) {
	sc := obj.(*storagev1.StorageClass)
	if sc.ReclaimPolicy == nil {
		p := corev1.PersistentVolumeReclaimDelete
		sc.ReclaimPolicy = &p
	}
	if sc.VolumeBindingMode == nil {
		m := storagev1.VolumeBindingImmediate
		sc.VolumeBindingMode = &m
	}
}

var (
	reclaimPolicies = []string{string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRetain)}
	bindingModes    = []string{string(storagev1.VolumeBindingImmediate), string(storagev1.VolumeBindingWaitForFirstConsumer)}
)

// validateStorageClass: a provisioner, known policy and binding mode, and
// valid topologies. kube checks that the provisioner is there
// declaratively, after everything else.
func validateStorageClass(obj, old runtime.Object) field.ErrorList {
	sc := obj.(*storagev1.StorageClass)
	var errs field.ErrorList
	if sc.Provisioner != "" {
		errs = validateDriverName(sc.Provisioner, field.NewPath("provisioner"))
	}
	errs = append(errs, validateParameters(sc.Parameters, true, field.NewPath("parameters"))...)
	if p := sc.ReclaimPolicy; p != nil && *p != "" && *p != corev1.PersistentVolumeReclaimDelete && *p != corev1.PersistentVolumeReclaimRetain {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), p, reclaimPolicies))
	}
	if m := sc.VolumeBindingMode; m == nil {
		errs = append(errs, field.Required(field.NewPath("volumeBindingMode"), ""))
	} else if *m != storagev1.VolumeBindingImmediate && *m != storagev1.VolumeBindingWaitForFirstConsumer {
		errs = append(errs, field.NotSupported(field.NewPath("volumeBindingMode"), m, bindingModes))
	}
	errs = append(errs, validateTopologyTerms(sc.AllowedTopologies, field.NewPath("allowedTopologies"))...)
	if old == nil && sc.Provisioner == "" {
		errs = append(errs, field.Required(field.NewPath("provisioner"), ""))
	}
	return errs
}

// validateStorageClassUpdate: the provisioner, parameters, reclaim policy
// and binding mode never change, which kube checks declaratively.
func validateStorageClassUpdate(obj, old runtime.Object) field.ErrorList {
	sc, o := obj.(*storagev1.StorageClass), old.(*storagev1.StorageClass)
	var errs field.ErrorList
	if sc.Provisioner != o.Provisioner {
		if sc.Provisioner == "" {
			errs = append(errs, field.Required(field.NewPath("provisioner"), ""))
		}
		errs = append(errs, immutable(field.NewPath("provisioner")))
	}
	if !apiequality.Semantic.DeepEqual(sc.Parameters, o.Parameters) {
		errs = append(errs, immutable(field.NewPath("parameters")))
	}
	if !apiequality.Semantic.DeepEqual(sc.ReclaimPolicy, o.ReclaimPolicy) {
		errs = append(errs, immutable(field.NewPath("reclaimPolicy")))
	}
	if !apiequality.Semantic.DeepEqual(sc.VolumeBindingMode, o.VolumeBindingMode) {
		errs = append(errs, immutable(field.NewPath("volumeBindingMode")))
	}
	return errs
}

// storageClassTable is kube's; in a list, the default class's name is
// followed by " (default)".
var storageClassTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Provisioner", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["provisioner"]},
		{Name: "ReclaimPolicy", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["reclaimPolicy"]},
		{Name: "VolumeBindingMode", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["volumeBindingMode"]},
		{Name: "AllowVolumeExpansion", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["allowVolumeExpansion"]},
		apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		sc := obj.(*storagev1.StorageClass)
		policy, mode := string(corev1.PersistentVolumeReclaimDelete), string(storagev1.VolumeBindingImmediate)
		if sc.ReclaimPolicy != nil {
			policy = string(*sc.ReclaimPolicy)
		}
		if sc.VolumeBindingMode != nil {
			mode = string(*sc.VolumeBindingMode)
		}
		expand := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
		return []any{sc.Name, sc.Provisioner, policy, mode, expand, apiserver.Age(sc.CreationTimestamp, now)}
	},
	MarkList: func(items []runtime.Object, rows []metav1.TableRow) {
		classes := make([]*storagev1.StorageClass, len(items))
		for i, item := range items {
			classes[i] = item.(*storagev1.StorageClass)
		}
		def := DefaultClass(classes)
		for i, sc := range classes {
			if sc == def {
				rows[i].Cells[0] = fmt.Sprint(sc.Name, " (default)")
			}
		}
	},
}

// validateVolumeAttributesClass: a driver and at least one parameter,
// neither changed by an update, whose refusals kube reports first.
func validateVolumeAttributesClass(obj, old runtime.Object) field.ErrorList {
	vac := obj.(*storagev1.VolumeAttributesClass)
	var errs field.ErrorList
	if o, ok := old.(*storagev1.VolumeAttributesClass); ok {
		if vac.DriverName != o.DriverName {
			errs = append(errs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
		}
		if !reflect.DeepEqual(vac.Parameters, o.Parameters) {
			errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
		}
	}
	if vac.DriverName == "" {
		errs = append(errs, field.Required(field.NewPath("driverName"), ""))
	} else {
		errs = append(errs, validateDriverName(vac.DriverName, field.NewPath("driverName"))...)
	}
	return append(errs, validateParameters(vac.Parameters, false, field.NewPath("parameters"))...)
}

var volumeAttributesClassTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "DriverName", Type: "string", Description: storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"]},
		apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		vac := obj.(*storagev1.VolumeAttributesClass)
		return []any{vac.Name, vac.DriverName, apiserver.Age(vac.CreationTimestamp, now)}
	},
}
