// Package storagemigration is the storagemigration.k8s.io API group:
// StorageVersionMigrations, which ask for every object of a resource to be
// written again in its storage version (D.21). kubegate validates and
// stores them; no migration controller runs, so their status is what
// writers of the status subresource put there.
package storagemigration

import (
	"fmt"
	"strings"
	"time"

	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	storagemigrationv1beta1 "k8s.io/api/storagemigration/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{{
		GVR: storagemigrationv1.SchemeGroupVersion.WithResource("storageversionmigrations"), Kind: "StorageVersionMigration",
		Singular: "storageversionmigration", Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()},
		ValidateName: apivalidation.NameIsDNSSubdomain, Validate: validateMigration, ValidateStatus: validateMigrationStatus,
		ResetStatus: resetMigrationStatus, Table: migrationTable,
		// kube-apiserver stores them as v1beta1.
		StoredAs: storagemigrationv1beta1.SchemeGroupVersion.WithKind("StorageVersionMigration"),
	}}
}

func resetMigrationStatus(obj, old runtime.Object) {
	m := obj.(*storagemigrationv1.StorageVersionMigration)
	m.Status = storagemigrationv1.StorageVersionMigrationStatus{}
	if old != nil {
		m.Status = *old.(*storagemigrationv1.StorageVersionMigration).Status.DeepCopy()
	}
}

// validateMigration: the resource is a DNS-1035 label and the group a
// DNS subdomain; on an update the spec does not change.
func validateMigration(obj, old runtime.Object) field.ErrorList {
	m := obj.(*storagemigrationv1.StorageVersionMigration)
	res := field.NewPath("spec", "resource")
	var errs field.ErrorList
	if r := m.Spec.Resource.Resource; r == "" {
		errs = append(errs, field.Required(res.Child("resource"), "resource is required to be set"))
	} else if msgs := validation.IsDNS1035Label(r); len(msgs) > 0 {
		errs = append(errs, field.Invalid(res.Child("resource"), r, strings.Join(msgs, ",")))
	}
	if g := m.Spec.Resource.Group; g != "" {
		if msgs := validation.IsDNS1123Subdomain(g); len(msgs) > 0 {
			errs = append(errs, field.Invalid(res.Child("group"), g, strings.Join(msgs, ",")))
		}
	}
	if o, ok := old.(*storagemigrationv1.StorageVersionMigration); ok && !apiequality.Semantic.DeepEqual(m.Spec, o.Spec) {
		// kube quotes its internal spec, whose field has no JSON name.
		errs = append(errs, field.Invalid(field.NewPath("spec"), struct{ Resource metav1.GroupResource }{m.Spec.Resource}, "field is immutable"))
	}
	return errs
}

// validateMigrationStatus: a resourceVersion that parses and, once set,
// stays; conditions as metav1 has them; Succeeded and Failed never both
// true, and neither taken back.
func validateMigrationStatus(obj, old runtime.Object) field.ErrorList {
	m, o := obj.(*storagemigrationv1.StorageVersionMigration), old.(*storagemigrationv1.StorageVersionMigration)
	p := field.NewPath("status")
	var errs field.ErrorList
	if rv := m.Status.ResourceVersion; rv != "" {
		if _, err := resourceversion.CompareResourceVersion(rv, rv); err != nil {
			errs = append(errs, field.Invalid(p.Child("resourceVersion"), rv, err.Error()))
		}
	}
	errs = append(errs, metav1validation.ValidateConditions(m.Status.Conditions, p.Child("conditions"))...)
	if o.Status.ResourceVersion != "" && o.Status.ResourceVersion != m.Status.ResourceVersion {
		errs = append(errs, field.Invalid(p.Child("resourceVersion"), m.Status.ResourceVersion, "field is immutable"))
	}
	succeeded, failed := conditionTrue(m, storagemigrationv1.MigrationSucceeded), conditionTrue(m, storagemigrationv1.MigrationFailed)
	conds := p.Child("conditions")
	if succeeded && failed {
		errs = append(errs, field.Invalid(conds, m.Status.Conditions, "Both success and failed conditions cannot be true at the same time"))
	}
	if conditionTrue(o, storagemigrationv1.MigrationSucceeded) && !succeeded {
		errs = append(errs, field.Invalid(conds, m.Status.Conditions, "Success condition cannot be set to false once it is true"))
	}
	if conditionTrue(o, storagemigrationv1.MigrationFailed) && !failed {
		errs = append(errs, field.Invalid(conds, m.Status.Conditions, "Failed condition cannot be set to false once it is true"))
	}
	return errs
}

func conditionTrue(m *storagemigrationv1.StorageVersionMigration, t storagemigrationv1.MigrationConditionType) bool {
	c := meta.FindStatusCondition(m.Status.Conditions, string(t))
	return c != nil && c.Status == metav1.ConditionTrue
}

// migrationTable is kube's: the group resource and the last true
// condition of the three kube knows, else Unknown; no age (B.5).
var migrationTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Resource", Type: "string", Description: "GroupResource to migrate"},
		{Name: "Status", Type: "string", Description: "Status of the migration"},
	},
	Cells: func(obj runtime.Object, _ time.Time) []any {
		m := obj.(*storagemigrationv1.StorageVersionMigration)
		status := "Unknown"
		for _, c := range m.Status.Conditions {
			switch storagemigrationv1.MigrationConditionType(c.Type) {
			case storagemigrationv1.MigrationRunning, storagemigrationv1.MigrationFailed, storagemigrationv1.MigrationSucceeded:
				if c.Status == metav1.ConditionTrue {
					status = c.Type
				}
			}
		}
		return []any{m.Name, groupResource(m.Spec.Resource), status}
	},
}

// groupResource is "resource.group", or the resource of the core group.
func groupResource(gr metav1.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return fmt.Sprintf("%s.%s", gr.Resource, gr.Group)
}
