package admissionregistration

import (
	"fmt"
	"regexp"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/client-go/util/jsonpath"
)

// Validating and mutating admission policies and their bindings (D.12).
// An update keeps the stored policy's expressions valid in the environment
// of stored expressions, and checks its match conditions again only when
// they or the paramKind changed.

var (
	validationReasons = []string{"Forbidden", "Invalid", "RequestEntityTooLarge"}
	validationActions = []string{"Audit", "Deny", "Warn"}
	patchTypes        = []string{"ApplyConfiguration", "JSONPatch"}
)

const (
	maxAuditAnnotations = 20
	// maxValueExpressionLength bounds an audit annotation's expression.
	maxValueExpressionLength = 5 * 1024
)

// storedExpressions are the expressions of the policy an update replaces,
// by where they stand.
type storedExpressions struct {
	matchConditions, validations, messages, auditAnnotations, applyConfigurations sets.Set[string]
}

func newStoredExpressions() storedExpressions {
	return storedExpressions{sets.New[string](), sets.New[string](), sets.New[string](), sets.New[string](), sets.New[string]()}
}

// policyRules is what a policy's checks depend on beyond the policy.
type policyRules struct {
	checkMatchConditions bool
	stored               storedExpressions
}

// updateRules are the rules of an update: the match conditions are
// checked again only if they or the parameter kind changed, and the
// expressions stored before compile as they did then.
func updateRules(paramKind, oldParamKind *admissionregistrationv1.ParamKind, conditions, oldConditions []admissionregistrationv1.MatchCondition) policyRules {
	rules := policyRules{stored: newStoredExpressions()}
	rules.checkMatchConditions = !apiequality.Semantic.DeepEqual(paramKind, oldParamKind) ||
		!apiequality.Semantic.DeepEqual(conditions, oldConditions)
	for _, mc := range oldConditions {
		rules.stored.matchConditions.Insert(mc.Expression)
	}
	return rules
}

func validateValidatingAdmissionPolicy(obj, old runtime.Object) field.ErrorList {
	p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	rules := policyRules{checkMatchConditions: true, stored: newStoredExpressions()}
	if o, ok := old.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
		rules = updateRules(p.Spec.ParamKind, o.Spec.ParamKind, p.Spec.MatchConditions, o.Spec.MatchConditions)
		for _, v := range o.Spec.Validations {
			rules.stored.validations.Insert(v.Expression)
			if v.MessageExpression != "" {
				rules.stored.messages.Insert(v.MessageExpression)
			}
		}
		for _, a := range o.Spec.AuditAnnotations {
			rules.stored.auditAnnotations.Insert(a.ValueExpression)
		}
	}
	errs := validateValidatingPolicySpec(p.Name, &p.Spec, rules, field.NewPath("spec"))
	if old == nil {
		errs = append(errs, validateStaticSuffix(p.Name)...)
	}
	return errs
}

func validateValidatingPolicySpec(name string, s *admissionregistrationv1.ValidatingAdmissionPolicySpec, rules policyRules, path *field.Path) field.ErrorList {
	var compiler plugincel.Compiler // one per policy, made when first needed
	getCompiler := func() plugincel.Compiler {
		if compiler == nil {
			compiler = newCompiler(len(s.Variables) > 0)
		}
		return compiler
	}
	errs := requiredOneOf(path.Child("failurePolicy"), s.FailurePolicy, failurePolicies)
	errs = append(errs, validatePolicyMatch(s.ParamKind, s.MatchConstraints, path)...)
	if rules.checkMatchConditions {
		errs = append(errs, validateMatchConditions(s.MatchConditions, s.ParamKind != nil, rules.stored.matchConditions, path.Child("matchConditions"))...)
	}
	for i := range s.Variables {
		errs = append(errs, validateVariable(getCompiler(), &s.Variables[i], s.ParamKind != nil, rules.stored, path.Child("variables").Index(i))...)
	}
	if len(s.Validations) == 0 && len(s.AuditAnnotations) == 0 {
		const msg = "validations or auditAnnotations must contain at least one item"
		return append(errs, field.Required(path.Child("validations"), msg), field.Required(path.Child("auditAnnotations"), msg))
	}
	for i := range s.Validations {
		errs = append(errs, validateValidation(getCompiler(), &s.Validations[i], s.ParamKind != nil, rules.stored, path.Child("validations").Index(i))...)
	}
	if s.AuditAnnotations != nil {
		if len(s.AuditAnnotations) > maxAuditAnnotations {
			errs = append(errs, field.Invalid(path.Child("auditAnnotations"), s.AuditAnnotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
		}
		keys := sets.New[string]()
		for i := range s.AuditAnnotations {
			a := &s.AuditAnnotations[i]
			p := path.Child("auditAnnotations").Index(i)
			errs = append(errs, validateAuditAnnotation(getCompiler(), name, a, s.ParamKind != nil, rules.stored, p)...)
			if keys.Has(a.Key) {
				errs = append(errs, field.Duplicate(p.Child("key"), a.Key))
			}
			keys.Insert(a.Key)
		}
	}
	return errs
}

// validatePolicyMatch checks a policy's paramKind and match constraints,
// which must have a resource rule to type its expressions.
func validatePolicyMatch(pk *admissionregistrationv1.ParamKind, m *admissionregistrationv1.MatchResources, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pk != nil {
		errs = append(errs, validateParamKind(pk, path.Child("paramKind"))...)
	}
	if m == nil {
		return append(errs, field.Required(path.Child("matchConstraints"), ""))
	}
	errs = append(errs, validateMatchResources(m, path.Child("matchConstraints"))...)
	if len(m.ResourceRules) == 0 {
		errs = append(errs, field.Required(path.Child("matchConstraints", "resourceRules"), ""))
	}
	return errs
}

// validateVariable checks a variable's name, a CEL identifier, and
// compiles its expression into the policy's compiler, which keeps it for
// the expressions after it.
func validateVariable(c plugincel.Compiler, v *admissionregistrationv1.Variable, params bool, stored storedExpressions, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Name) == "" {
		errs = append(errs, field.Required(path.Child("name"), "name is not specified"))
	} else if !isCELIdentifier(v.Name) {
		errs = append(errs, field.Invalid(path.Child("name"), v.Name, "must be a valid CEL identifier"))
	}
	if strings.TrimSpace(v.Expression) == "" {
		return append(errs, field.Required(path.Child("expression"), "expression is not specified"))
	}
	composited, ok := c.(*plugincel.CompositedCompiler)
	if !ok {
		return append(errs, field.InternalError(path, fmt.Errorf("variable composition is not allowed")))
	}
	variable := &validating.Variable{Name: v.Name, Expression: v.Expression}
	r := composited.CompileAndStoreVariable(variable, plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true},
		envType(v.Expression, stored.validations))
	if r.Error != nil {
		errs = append(errs, celError(path.Child("expression"), variable, r.Error))
	}
	return errs
}

var lineBreaks = regexp.MustCompile(`[\n\r]+`)

// validateValidation checks a validation's expression, message
// expression, message (one line) and reason.
func validateValidation(c plugincel.Compiler, v *admissionregistrationv1.Validation, params bool, stored storedExpressions, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Expression) == "" {
		errs = append(errs, field.Required(path.Child("expression"), "expression is not specified"))
	} else {
		errs = append(errs, compile(c, &validating.ValidationCondition{Expression: v.Expression},
			plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}, envType(v.Expression, stored.validations), path.Child("expression"))...)
	}
	switch me := strings.TrimSpace(v.MessageExpression); {
	case v.MessageExpression != "" && me == "":
		errs = append(errs, field.Invalid(path.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	case me != "":
		// A message expression has no authorizer.
		errs = append(errs, compile(c, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression},
			plugincel.OptionalVariableDeclarations{HasParams: params}, envType(v.MessageExpression, stored.messages), path.Child("messageExpression"))...)
	}
	switch msg := strings.TrimSpace(v.Message); {
	case v.Message != "" && msg == "":
		errs = append(errs, field.Invalid(path.Child("message"), v.Message, "must be non-empty if specified"))
	case lineBreaks.MatchString(msg):
		errs = append(errs, field.Invalid(path.Child("message"), v.Message, "must not contain line breaks"))
	}
	if v.Reason != nil {
		errs = append(errs, oneOf(path.Child("reason"), *v.Reason, validationReasons)...)
	}
	return errs
}

// validateAuditAnnotation checks an audit annotation's key, which with the
// policy's name must be a qualified name, and its value expression.
func validateAuditAnnotation(c plugincel.Compiler, policy string, a *admissionregistrationv1.AuditAnnotation, params bool, stored storedExpressions, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policy != "" {
		errs = append(errs, validateQualifiedName(policy+"/"+a.Key, path.Child("key"))...)
	} else {
		errs = append(errs, field.Invalid(path.Child("key"), a.Key, "requires metadata.name be non-empty"))
	}
	expr := strings.TrimSpace(a.ValueExpression)
	switch {
	case expr == "":
		errs = append(errs, field.Required(path.Child("valueExpression"), "valueExpression is not specified"))
	case len(expr) > maxValueExpressionLength:
		errs = append(errs, field.Required(path.Child("valueExpression"), fmt.Sprintf("must not exceed %d bytes in length", maxValueExpressionLength)))
	default:
		e := &validating.AuditAnnotationCondition{ValueExpression: expr}
		r := c.CompileCELExpression(e, plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}, envType(a.ValueExpression, stored.auditAnnotations))
		if r.Error != nil {
			// kube shows the untrimmed expression.
			errs = append(errs, celError(path.Child("valueExpression"), &validating.AuditAnnotationCondition{ValueExpression: a.ValueExpression}, r.Error))
		}
	}
	return errs
}

// validateValidatingAdmissionPolicyStatus checks a status write: each
// expression warning with its text and a field reference that parses as
// a JSONPath, and the conditions.
func validateValidatingAdmissionPolicyStatus(obj, _ runtime.Object) field.ErrorList {
	st := &obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Status
	path := field.NewPath("status")
	var errs field.ErrorList
	if tc := st.TypeChecking; tc != nil {
		for i, w := range tc.ExpressionWarnings {
			p := path.Child("typeChecking", "expressionWarnings").Index(i)
			if w.Warning == "" {
				errs = append(errs, field.Required(p.Child("warning"), ""))
			}
			ref := strings.TrimSpace(w.FieldRef)
			if ref == "" {
				errs = append(errs, field.Required(p.Child("fieldRef"), ""))
			} else if err := jsonpath.New("spec").Parse("{" + ref + "}"); err != nil {
				errs = append(errs, field.Invalid(p.Child("fieldRef"), ref, fmt.Sprintf("invalid JSONPath: %v", err)))
			}
		}
	}
	return append(errs, metav1validation.ValidateConditions(st.Conditions, path.Child("conditions"))...)
}

func validateValidatingAdmissionPolicyBinding(obj, old runtime.Object) field.ErrorList {
	b := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
	path := field.NewPath("spec")
	errs := validatePolicyName(b.Spec.PolicyName, path.Child("policyName"))
	errs = append(errs, validateParamRef(b.Spec.ParamRef, path.Child("paramRef"))...)
	errs = append(errs, validateMatchResources(b.Spec.MatchResources, path.Child("matchResources"))...)
	errs = append(errs, validateValidationActions(b.Spec.ValidationActions, path.Child("validationActions"))...)
	if old == nil {
		errs = append(errs, validateStaticSuffix(b.Name)...)
	}
	// kube's declarative checks of the two required fields come last.
	if b.Spec.PolicyName == "" {
		errs = append(errs, field.Required(path.Child("policyName"), ""))
	}
	if len(b.Spec.ValidationActions) == 0 {
		errs = append(errs, field.Required(path.Child("validationActions"), ""))
	}
	return errs
}

// validateValidationActions checks each action known and given once, and
// not both Deny and Warn, which would say the same thing twice.
func validateValidationActions(actions []admissionregistrationv1.ValidationAction, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[admissionregistrationv1.ValidationAction]()
	for i, a := range actions {
		errs = append(errs, oneOf(path.Index(i), a, validationActions)...)
		if seen.Has(a) {
			errs = append(errs, field.Duplicate(path.Index(i), a))
		}
		seen.Insert(a)
	}
	if seen.Has(admissionregistrationv1.Deny) && seen.Has(admissionregistrationv1.Warn) {
		errs = append(errs, field.Invalid(path, actions,
			"must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	return errs
}

func validateMutatingAdmissionPolicy(obj, old runtime.Object) field.ErrorList {
	p := obj.(*admissionregistrationv1.MutatingAdmissionPolicy)
	rules := policyRules{checkMatchConditions: true, stored: newStoredExpressions()}
	if o, ok := old.(*admissionregistrationv1.MutatingAdmissionPolicy); ok {
		rules = updateRules(p.Spec.ParamKind, o.Spec.ParamKind, p.Spec.MatchConditions, o.Spec.MatchConditions)
		// kube looks a JSON patch's expression up among the stored
		// apply configurations' too, so that a stored JSON patch
		// compiles as a new one.
		for _, m := range o.Spec.Mutations {
			if m.ApplyConfiguration != nil {
				rules.stored.applyConfigurations.Insert(m.ApplyConfiguration.Expression)
			}
		}
	}
	s := &p.Spec
	path := field.NewPath("spec")
	compiler := newCompiler(true)
	errs := requiredOneOf(path.Child("failurePolicy"), s.FailurePolicy, failurePolicies)
	errs = append(errs, validatePolicyMatch(s.ParamKind, s.MatchConstraints, path)...)
	if s.MatchConstraints != nil {
		errs = append(errs, validateMutatingOperations(s.MatchConstraints, path.Child("matchConstraints"))...)
	}
	if rules.checkMatchConditions {
		errs = append(errs, validateMatchConditions(s.MatchConditions, s.ParamKind != nil, rules.stored.matchConditions, path.Child("matchConditions"))...)
	}
	for i := range s.Variables {
		errs = append(errs, validateVariable(compiler, &s.Variables[i], s.ParamKind != nil, rules.stored, path.Child("variables").Index(i))...)
	}
	if len(s.Mutations) == 0 {
		errs = append(errs, field.Required(path.Child("mutations"), "mutations must contain at least one item"))
	}
	for i := range s.Mutations {
		errs = append(errs, validateMutation(compiler, &s.Mutations[i], s.ParamKind != nil, rules.stored, path.Child("mutations").Index(i))...)
	}
	if s.ReinvocationPolicy == "" {
		errs = append(errs, field.Required(path.Child("reinvocationPolicy"), ""))
	} else {
		errs = append(errs, oneOf(path.Child("reinvocationPolicy"), s.ReinvocationPolicy, reinvocationPolices)...)
	}
	if old == nil {
		errs = append(errs, validateStaticSuffix(p.Name)...)
	}
	return errs
}

// validateMutation checks a mutation's patch type and the one patch it
// names, whose expression must compile with the patch types declared.
func validateMutation(c plugincel.Compiler, m *admissionregistrationv1.Mutation, params bool, stored storedExpressions, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	decls := plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true, HasPatchTypes: true}
	patchExpression := func(expression string, accessor func(string) plugincel.ExpressionAccessor, p *field.Path) field.ErrorList {
		expr := strings.TrimSpace(expression)
		if expr == "" {
			return field.ErrorList{field.Required(p, "")}
		}
		return compile(c, accessor(expr), decls, envType(expression, stored.applyConfigurations), p)
	}
	switch m.PatchType {
	case "":
		errs = append(errs, field.Required(path.Child("patchType"), ""))
	case admissionregistrationv1.PatchTypeJSONPatch:
		if m.JSONPatch == nil {
			errs = append(errs, field.Required(path.Child("jsonPatch"), "must be specified when patchType is JSONPatch"))
		} else {
			errs = append(errs, patchExpression(m.JSONPatch.Expression, func(e string) plugincel.ExpressionAccessor {
				return &patch.JSONPatchCondition{Expression: e}
			}, path.Child("jsonPatch", "expression"))...)
		}
		if m.ApplyConfiguration != nil {
			errs = append(errs, field.Invalid(path.Child("applyConfiguration"), "{applyConfiguration}", "must not be specified when patchType is JSONPatch"))
		}
	case admissionregistrationv1.PatchTypeApplyConfiguration:
		if m.ApplyConfiguration == nil {
			errs = append(errs, field.Required(path.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration"))
		} else {
			errs = append(errs, patchExpression(m.ApplyConfiguration.Expression, func(e string) plugincel.ExpressionAccessor {
				return &patch.ApplyConfigurationCondition{Expression: e}
			}, path.Child("applyConfiguration", "expression"))...)
		}
		if m.JSONPatch != nil {
			errs = append(errs, field.Invalid(path.Child("jsonPatch"), "{jsonPatch}", "must not be specified when patchType is ApplyConfiguration"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("patchType"), m.PatchType, patchTypes))
	}
	return errs
}

func validateMutatingAdmissionPolicyBinding(obj, old runtime.Object) field.ErrorList {
	b := obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
	path := field.NewPath("spec")
	var errs field.ErrorList
	if b.Spec.PolicyName == "" {
		errs = append(errs, field.Required(path.Child("policyName"), ""))
	}
	errs = append(errs, validatePolicyName(b.Spec.PolicyName, path.Child("policyName"))...)
	errs = append(errs, validateParamRef(b.Spec.ParamRef, path.Child("paramRef"))...)
	if m := b.Spec.MatchResources; m != nil {
		errs = append(errs, validateMatchResources(m, path.Child("matchResources"))...)
		errs = append(errs, validateMutatingOperations(m, path.Child("matchResources"))...)
	}
	if old == nil {
		errs = append(errs, validateStaticSuffix(b.Name)...)
	}
	return errs
}
