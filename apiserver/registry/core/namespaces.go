package core

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// Namespaces (G.9): their defaults, finalizer and validation. The
// lifecycle (no new content in a terminating namespace, the system
// namespaces, their deletion refused) is apiserver's, which needs this
// resource served.

func namespaceResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace", Singular: "namespace", ShortNames: []string{"ns"},
		ReturnDeleted: true, NoDeleteCollection: true, Undeletable: apiserver.UndeletableNamespace,
		Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource(), "finalize": finalizeSubresource{}}, SpecSubresource: "finalize",
		ValidateName: apivalidation.NameIsDNSLabel, Defaults: defaultNamespace, Validate: validateNamespace, Prepare: prepareNamespace,
		ResetStatus: resetNamespaceStatus, Table: namespaceTable}
}

// finalizeSubresource is namespaces/finalize: a PUT is the one way to
// change a namespace's spec.finalizers (its status stays); a namespace
// being deleted that is left with no finalizers of either kind goes (G.9).
type finalizeSubresource struct{}

func (finalizeSubresource) Name() string                       { return "finalize" }
func (finalizeSubresource) Verbs() []string                    { return []string{"update"} }
func (finalizeSubresource) Kind() schema.GroupVersionKind      { return schema.GroupVersionKind{} }
func (finalizeSubresource) Serve(req *apiserver.Request) error { return req.ServeUpdate() }

var _ apiserver.Subresource = finalizeSubresource{}

func defaultNamespace(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

// prepareNamespace gives a new namespace the "kubernetes" finalizer that
// the namespace controller removes once the namespace is empty (G.9);
// only the finalize subresource changes spec.finalizers afterwards.
func prepareNamespace(obj, old runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
	if old != nil {
		ns.Spec.Finalizers = old.(*corev1.Namespace).Spec.Finalizers
		return
	}
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
}

func resetNamespaceStatus(obj, old runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if old == nil {
		ns.Status = corev1.NamespaceStatus{}
		return
	}
	ns.Status = old.(*corev1.Namespace).Status
}

// validateNamespace checks the finalizers of a new Namespace, and on
// every update that the phase agrees with the deletion timestamp. kube
// names the field status.Phase, capital P.
func validateNamespace(obj, old runtime.Object) field.ErrorList {
	ns := obj.(*corev1.Namespace)
	if old == nil {
		var errs field.ErrorList
		path := field.NewPath("spec", "finalizers")
		for _, f := range ns.Spec.Finalizers {
			errs = append(errs, apivalidation.ValidateFinalizerName(string(f), path)...)
			if !strings.Contains(string(f), "/") && !standardFinalizers[string(f)] {
				errs = append(errs, field.Invalid(path, string(f), "name is neither a standard finalizer name nor is it fully qualified"))
			}
		}
		return errs
	}
	var errs field.ErrorList
	for i, f := range ns.Spec.Finalizers {
		// only the finalize subresource can change them
		path := field.NewPath("spec", "finalizers").Index(i)
		errs = append(errs, apivalidation.ValidateFinalizerName(string(f), path)...)
		if !strings.Contains(string(f), "/") && !standardFinalizers[string(f)] {
			errs = append(errs, field.Invalid(path, string(f), "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	phase := field.NewPath("status", "Phase")
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			return field.ErrorList{field.Invalid(phase, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty")}
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		return field.ErrorList{field.Invalid(phase, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")}
	}
	return nil
}

// standardFinalizers may be written without a domain.
var standardFinalizers = map[string]bool{
	string(corev1.FinalizerKubernetes): true, metav1.FinalizerOrphanDependents: true, metav1.FinalizerDeleteDependents: true,
}

var namespaceTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Status", Type: "string", Description: "The status of the namespace"}, apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		ns := obj.(*corev1.Namespace)
		return []any{ns.Name, string(ns.Status.Phase), apiserver.Age(ns.CreationTimestamp, now)}
	},
}
