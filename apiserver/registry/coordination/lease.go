// Package coordination is the coordination.k8s.io API group: Leases, which
// components renew to hold a leadership and kubelets renew as their nodes'
// heartbeats. kube-apiserver validates them and acts on nothing else.
package coordination

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{{
		GVR: coordinationv1.SchemeGroupVersion.WithResource("leases"), Kind: "Lease", Singular: "lease", Namespaced: true,
		ValidateName: apivalidation.NameIsDNSSubdomain, Validate: validateLease, Table: leaseTable,
	}}
}

// validateLease checks the durations (D.5). kube drops the strategy fields
// (its CoordinatedLeaderElection gate is off), so they are not checked.
func validateLease(obj, _ runtime.Object) field.ErrorList {
	spec := &obj.(*coordinationv1.Lease).Spec
	var errs field.ErrorList
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if t := spec.LeaseTransitions; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "leaseTransitions"), *t, "must be greater than or equal to 0"))
	}
	return errs
}

// leaseTable is kube's: the holder between the name and the age (B.5).
var leaseTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
		apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		l := obj.(*coordinationv1.Lease)
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return []any{l.Name, holder, apiserver.Age(l.CreationTimestamp, now)}
	},
}
