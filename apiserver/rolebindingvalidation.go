package apiserver

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

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
	for _, msg := range validatePathSegmentName(ref.Name, false) {
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
