// Package rbac is the rbac.authorization.k8s.io API group: Roles,
// ClusterRoles, RoleBindings and ClusterRoleBindings (D.5). The server
// checks every write of them for escalation before validating it (C.2),
// by their group; apiserver/rbacsource feeds the stored objects to the
// authorizer.
package rbac

import (
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources. Their names need only be path segments.
func Resources() []*apiserver.Resource {
	segment := apiserver.ValidatePathSegmentName
	gv := rbacv1.SchemeGroupVersion
	return []*apiserver.Resource{
		{GVR: gv.WithResource("roles"), Kind: "Role", Singular: "role", Namespaced: true, ValidateName: segment, Validate: validateRole},
		{GVR: gv.WithResource("clusterroles"), Kind: "ClusterRole", Singular: "clusterrole", ValidateName: segment, Validate: validateClusterRole},
		{GVR: gv.WithResource("rolebindings"), Kind: "RoleBinding", Singular: "rolebinding", Namespaced: true, ValidateName: segment,
			Prepare: prepareBinding, Validate: validateRoleBinding, Table: roleBindingTable},
		{GVR: gv.WithResource("clusterrolebindings"), Kind: "ClusterRoleBinding", Singular: "clusterrolebinding", ValidateName: segment,
			Prepare: prepareBinding, Validate: validateClusterRoleBinding, Table: clusterRoleBindingTable},
	}
}

// Role and ClusterRole validation (D.5).

func validateRole(obj, _ runtime.Object) field.ErrorList {
	return validateRules(obj.(*rbacv1.Role).Rules, true, nil)
}

func validateClusterRole(obj, _ runtime.Object) field.ErrorList {
	r := obj.(*rbacv1.ClusterRole)
	var errs field.ErrorList
	if a := r.AggregationRule; a != nil {
		path := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(a.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(path, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range a.ClusterRoleSelectors {
			s := &a.ClusterRoleSelectors[i]
			errs = append(errs, metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, path.Index(i))...)
			// kube shows the selector it failed to build: none, null.
			if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
				errs = append(errs, field.Invalid(path.Index(i), nil, "invalid label selector."))
			}
		}
	}
	return validateRules(r.Rules, false, errs)
}

// validateRules checks each rule: non-resource URLs only in a cluster
// role and never with resources; else API groups and resources. kube
// checks verbs declaratively, after all its other checks, so a missing
// verb comes after the errors given in before and the others.
func validateRules(rules []rbacv1.PolicyRule, namespaced bool, before field.ErrorList) field.ErrorList {
	errs := before
	var noVerbs field.ErrorList
	for i, r := range rules {
		p := field.NewPath("rules").Index(i)
		if len(r.Verbs) == 0 {
			noVerbs = append(noVerbs, field.Required(p.Child("verbs"), ""))
		}
		if len(r.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(r.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(r.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return append(errs, noVerbs...)
}

// Defaults and validation of RoleBindings and ClusterRoleBindings.
//
// A binding may only reference a Role or ClusterRole of
// rbac.authorization.k8s.io: the escalation checks and the authorizer
// resolve roles by kind and name alone, so a reference naming another API
// group must never be stored. The reference is fixed once the binding
// exists; changing what a binding grants means deleting and recreating it.

// prepareBinding fills what clients may leave out: the roleRef's API group
// and the API group of User and Group subjects, all rbac.authorization.k8s.io.
func prepareBinding(obj, _ runtime.Object) {
	var ref *rbacv1.RoleRef
	var subjects []rbacv1.Subject
	switch b := obj.(type) {
	case *rbacv1.RoleBinding:
		ref, subjects = &b.RoleRef, b.Subjects
	case *rbacv1.ClusterRoleBinding:
		ref, subjects = &b.RoleRef, b.Subjects
	default:
		return
	}
	*ref = defaultRoleRef(*ref)
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

// defaultRoleRef returns ref with an empty API group read as
// rbac.authorization.k8s.io.
func defaultRoleRef(ref rbacv1.RoleRef) rbacv1.RoleRef {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	return ref
}

// validateRoleBinding checks a RoleBinding, and on update (old not nil)
// that its roleRef is unchanged.
func validateRoleBinding(obj, old runtime.Object) field.ErrorList {
	b := obj.(*rbacv1.RoleBinding)
	errs := validateRoleRef(b.RoleRef, []string{"Role", "ClusterRole"})
	errs = append(errs, validateSubjects(b.Subjects, true)...)
	if old != nil {
		errs = append(errs, validateRoleRefUnchanged(b.RoleRef, old.(*rbacv1.RoleBinding).RoleRef)...)
	}
	return errs
}

// validateClusterRoleBinding checks a ClusterRoleBinding, and on update
// (old not nil) that its roleRef is unchanged.
func validateClusterRoleBinding(obj, old runtime.Object) field.ErrorList {
	b := obj.(*rbacv1.ClusterRoleBinding)
	errs := validateRoleRef(b.RoleRef, []string{"ClusterRole"})
	errs = append(errs, validateSubjects(b.Subjects, false)...)
	if old != nil {
		errs = append(errs, validateRoleRefUnchanged(b.RoleRef, old.(*rbacv1.ClusterRoleBinding).RoleRef)...)
	}
	return errs
}

// validateRoleRef accepts a reference to a role of one of kinds in
// rbac.authorization.k8s.io, by a name a role can have.
func validateRoleRef(ref rbacv1.RoleRef, kinds []string) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(p.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	if !slices.Contains(kinds, ref.Kind) {
		errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	for _, msg := range apiserver.ValidatePathSegmentName(ref.Name, false) {
		errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
	}
	return errs
}

// validateRoleRefUnchanged refuses an update that changes the roleRef.
// A stored reference without an API group counts as
// rbac.authorization.k8s.io, as it did when it was written.
func validateRoleRefUnchanged(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref == defaultRoleRef(old) {
		return nil
	}
	// kube-apiserver reports the value as its internal type, which has no
	// JSON names: {"APIGroup":…,"Kind":…,"Name":…}.
	type roleRef struct{ APIGroup, Kind, Name string }
	return field.ErrorList{field.Invalid(field.NewPath("roleRef"), roleRef{ref.APIGroup, ref.Kind, ref.Name}, "field is immutable")}
}

// validateSubjects checks each subject: a name, a known kind, and the API
// group of that kind ("" for ServiceAccount, rbac.authorization.k8s.io for
// User and Group). Outside a namespace (namespaced false) a ServiceAccount
// subject must name its namespace.
func validateSubjects(subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, s := range subjects {
		p := field.NewPath("subjects").Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			if s.Name != "" {
				for _, msg := range apivalidation.ValidateServiceAccountName(s.Name, false) {
					errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
				}
			}
			if s.APIGroup != "" {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
			}
			if !namespaced && s.Namespace == "" {
				errs = append(errs, field.Required(p.Child("namespace"), ""))
			}
		case rbacv1.UserKind, rbacv1.GroupKind:
			if s.APIGroup != rbacv1.GroupName {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind,
				[]string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
		}
	}
	return errs
}

// bindingColumns are the columns of role bindings ("roleBinding") and
// cluster role bindings ("clusterRoleBinding"). kube takes the Role
// description from the v1beta1 types, whose wording differs from v1's.
func bindingColumns(kind, roleRefDoc string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Role", Type: "string", Description: roleRefDoc},
		apiserver.AgeColumn,
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the " + kind},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the " + kind},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the " + kind},
	}
}

// bindingCells lists the subjects by kind, each list joined with ", ";
// service accounts as namespace/name.
func bindingCells(om metav1.ObjectMeta, ref rbacv1.RoleRef, subjects []rbacv1.Subject, now time.Time) []any {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	return []any{om.Name, ref.Kind + "/" + ref.Name, apiserver.Age(om.CreationTimestamp, now),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}

var roleBindingTable = &apiserver.TableDef{
	Columns: bindingColumns("roleBinding", rbacv1beta1.RoleBinding{}.SwaggerDoc()["roleRef"]),
	Cells: func(obj runtime.Object, now time.Time) []any {
		b := obj.(*rbacv1.RoleBinding)
		return bindingCells(b.ObjectMeta, b.RoleRef, b.Subjects, now)
	},
}

var clusterRoleBindingTable = &apiserver.TableDef{
	Columns: bindingColumns("clusterRoleBinding", rbacv1beta1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"]),
	Cells: func(obj runtime.Object, now time.Time) []any {
		b := obj.(*rbacv1.ClusterRoleBinding)
		return bindingCells(b.ObjectMeta, b.RoleRef, b.Subjects, now)
	},
}
