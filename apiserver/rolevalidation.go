package apiserver

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

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
