package admissionregistration

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The checks the webhooks and the policies share (D.12): their rules, match
// resources, selectors, and the values each field may take, listed sorted
// as kube's errors list them.

var (
	failurePolicies     = []string{"Fail", "Ignore"}
	matchPolicies       = []string{"Equivalent", "Exact"}
	operations          = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}
	mutatingOperations  = []string{"*", "CONNECT", "CREATE", "UPDATE"}
	reinvocationPolices = []string{"IfNeeded", "Never"}
	scopes              = []string{"*", "Cluster", "Namespaced"}
)

// oneOf returns a NotSupported error unless v is one of values.
func oneOf[T ~string](path *field.Path, v T, values []string) field.ErrorList {
	if slices.Contains(values, string(v)) {
		return nil
	}
	return field.ErrorList{field.NotSupported(path, v, values)}
}

// optionalOneOf is oneOf for a field that may be left out.
func optionalOneOf[T ~string](path *field.Path, v *T, values []string) field.ErrorList {
	if v == nil {
		return nil
	}
	return oneOf(path, *v, values)
}

// requiredOneOf is oneOf for a field that must be given.
func requiredOneOf[T ~string](path *field.Path, v *T, values []string) field.ErrorList {
	if v == nil {
		return field.ErrorList{field.Required(path, "")}
	}
	return oneOf(path, *v, values)
}

// validateRuleWithOperations checks a rule's operations and then the rule.
func validateRuleWithOperations(r *admissionregistrationv1.RuleWithOperations, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	ops := path.Child("operations")
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(ops, ""))
	}
	if len(r.Operations) > 1 && slices.Contains(r.Operations, admissionregistrationv1.OperationAll) {
		errs = append(errs, field.Invalid(ops, r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		errs = append(errs, oneOf(ops.Index(i), op, operations)...)
	}
	return append(errs, validateRule(&r.Rule, path)...)
}

// validateRule checks a rule's groups, versions, resources (subresources
// allowed) and scope.
func validateRule(r *admissionregistrationv1.Rule, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	groups, versions := path.Child("apiGroups"), path.Child("apiVersions")
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(groups, ""))
	}
	if len(r.APIGroups) > 1 && slices.Contains(r.APIGroups, "*") {
		errs = append(errs, field.Invalid(groups, r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(versions, ""))
	}
	if len(r.APIVersions) > 1 && slices.Contains(r.APIVersions, "*") {
		errs = append(errs, field.Invalid(versions, r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(versions.Index(i), ""))
		}
	}
	errs = append(errs, validateResources(r.Resources, path.Child("resources"))...)
	return append(errs, optionalOneOf(path.Child("scope"), r.Scope, scopes)...)
}

// validateResources checks resources and RESOURCE/SUBRESOURCE entries,
// where a wildcard on either side rules out what it already covers.
func validateResources(resources []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(path, ""))
	}
	allSubs, allResources := sets.New[string](), sets.New[string]() // x/* and */x
	var doubleWildcard, wildcard, plain bool
	for i, r := range resources {
		if r == "" {
			errs = append(errs, field.Required(path.Index(i), ""))
			continue
		}
		doubleWildcard = doubleWildcard || r == "*/*"
		wildcard = wildcard || r == "*"
		res, sub, ok := strings.Cut(r, "/")
		if !ok {
			// kube keeps only the last plain entry's word on it.
			plain = r != "*"
			continue
		}
		if allSubs.Has(res) {
			errs = append(errs, field.Invalid(path.Index(i), r, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, r)))
		}
		if allResources.Has(sub) {
			errs = append(errs, field.Invalid(path.Index(i), r, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, r)))
		}
		if sub == "*" {
			allSubs.Insert(res)
		}
		if res == "*" {
			allResources.Insert(sub)
		}
	}
	if len(resources) > 1 && doubleWildcard {
		errs = append(errs, field.Invalid(path, resources, "if '*/*' is present, must not specify other resources"))
	}
	if wildcard && plain {
		errs = append(errs, field.Invalid(path, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

// validateMatchResources checks a policy's match constraints or a
// binding's match resources, their selectors strictly.
func validateMatchResources(m *admissionregistrationv1.MatchResources, path *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	errs := requiredOneOf(path.Child("matchPolicy"), m.MatchPolicy, matchPolicies)
	errs = append(errs, requiredSelector(m.NamespaceSelector, path.Child("namespaceSelector"))...)
	errs = append(errs, requiredSelector(m.ObjectSelector, path.Child("objectSelector"))...)
	for i := range m.ResourceRules {
		errs = append(errs, validateNamedRule(&m.ResourceRules[i], path.Child("resourceRules").Index(i))...)
	}
	for i := range m.ExcludeResourceRules {
		errs = append(errs, validateNamedRule(&m.ExcludeResourceRules[i], path.Child("excludeResourceRules").Index(i))...)
	}
	return errs
}

func requiredSelector(s *metav1.LabelSelector, path *field.Path) field.ErrorList {
	if s == nil {
		return field.ErrorList{field.Required(path, "")}
	}
	return metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, path)
}

// validateNamedRule checks a rule's resource names, each one path
// segment and given once, and then the rule.
func validateNamedRule(r *admissionregistrationv1.NamedRuleWithOperations, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, name := range r.ResourceNames {
		p := path.Child("resourceNames").Index(i)
		for _, msg := range content.IsPathSegmentName(name) {
			errs = append(errs, field.Invalid(p, name, msg))
		}
		if seen.Has(name) {
			errs = append(errs, field.Duplicate(p, name))
		}
		seen.Insert(name)
	}
	return append(errs, validateRuleWithOperations(&r.RuleWithOperations, path)...)
}

// validateMutatingOperations refuses DELETE in a mutating policy's or
// binding's resource rules, which can only mutate writes; kube names the
// rules' field without an index.
func validateMutatingOperations(m *admissionregistrationv1.MatchResources, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, r := range m.ResourceRules {
		for _, op := range r.Operations {
			errs = append(errs, oneOf(path.Child("resourceRules", "operations"), op, mutatingOperations)...)
		}
	}
	return errs
}

// validateParamKind checks a policy's paramKind: a group that is a DNS
// subdomain, a version that is a DNS label, and a kind that would be one
// in lower case.
func validateParamKind(pk *admissionregistrationv1.ParamKind, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	apiVersion := path.Child("apiVersion")
	switch group, version, err := splitAPIVersion(pk.APIVersion); {
	case pk.APIVersion == "":
		errs = append(errs, field.Required(apiVersion, ""))
	case err != nil:
		errs = append(errs, field.Invalid(apiVersion, pk.APIVersion, err.Error()))
	default:
		if group != "" {
			if msgs := utilvalidation.IsDNS1123Subdomain(group); len(msgs) > 0 {
				errs = append(errs, field.Invalid(apiVersion, group, strings.Join(msgs, ",")))
			}
		}
		if version == "" {
			errs = append(errs, field.Invalid(apiVersion, pk.APIVersion, "version must be specified"))
		} else if msgs := utilvalidation.IsDNS1035Label(version); len(msgs) > 0 {
			errs = append(errs, field.Invalid(apiVersion, version, strings.Join(msgs, ",")))
		}
	}
	if pk.Kind == "" {
		errs = append(errs, field.Required(path.Child("kind"), ""))
	} else if msgs := utilvalidation.IsDNS1035Label(strings.ToLower(pk.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(path.Child("kind"), pk.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	return errs
}

// splitAPIVersion splits GROUP/VERSION, or a core VERSION.
func splitAPIVersion(gv string) (group, version string, err error) {
	if gv == "/" {
		return "", "", nil
	}
	switch strings.Count(gv, "/") {
	case 0:
		return "", gv, nil
	case 1:
		group, version, _ = strings.Cut(gv, "/")
		return group, version, nil
	}
	return "", "", fmt.Errorf("unexpected GroupVersion string: %v", gv)
}

// validateParamRef checks a binding's paramRef: a name or a selector,
// not both, and what to do when no parameter is found.
func validateParamRef(pr *admissionregistrationv1.ParamRef, path *field.Path) field.ErrorList {
	if pr == nil {
		return nil
	}
	var errs field.ErrorList
	const exclusive = "name and selector are mutually exclusive"
	if pr.Name != "" {
		for _, msg := range content.IsPathSegmentName(pr.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), pr.Name, msg))
		}
		if pr.Selector != nil {
			errs = append(errs, field.Forbidden(path.Child("name"), exclusive))
		}
	}
	if pr.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(pr.Selector, metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))...)
		if pr.Name != "" {
			errs = append(errs, field.Forbidden(path.Child("selector"), exclusive))
		}
	}
	if pr.Name == "" && pr.Selector == nil {
		errs = append(errs, field.Required(path, "one of name or selector must be specified"))
	}
	action := pr.ParameterNotFoundAction
	switch {
	case action == nil || *action == "":
		errs = append(errs, field.Required(path.Child("parameterNotFoundAction"), ""))
	case *action != admissionregistrationv1.DenyAction && *action != admissionregistrationv1.AllowAction:
		errs = append(errs, field.NotSupported(path.Child("parameterNotFoundAction"), action,
			[]string{string(admissionregistrationv1.DenyAction), string(admissionregistrationv1.AllowAction)}))
	}
	return errs
}

// validatePolicyName checks a binding's policyName; kube's declarative
// check of a missing one comes after all the others (requiredLast).
func validatePolicyName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// validateQualifiedName is kube's check of a qualified name such as a
// label key.
func validateQualifiedName(v string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsQualifiedName(v) {
		errs = append(errs, field.Invalid(path, v, msg))
	}
	return errs
}
