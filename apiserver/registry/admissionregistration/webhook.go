package admissionregistration

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	admissionwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/util/webhook"
)

// Webhook configurations (D.12). An update is held to what the stored
// configuration already met, as kube holds it, so that a configuration an
// older server let in can still be changed: side effects other than None
// and NoneOnDryRun, review versions this server does not know, duplicate
// webhook names and label values a selector may not hold are refused only
// when no webhook of the stored configuration had them, and unchanged
// match conditions are not checked again.

var (
	// reviewVersions are the AdmissionReview versions kube accepts.
	reviewVersions = []string{"v1", "v1beta1"}
	// noSideEffects are the side effects a v1 webhook may declare.
	noSideEffects  = []string{"None", "NoneOnDryRun"}
	allSideEffects = []string{"None", "NoneOnDryRun", "Some", "Unknown"}
)

// validatingWebhooks and mutatingWebhooks read a configuration's webhooks
// through the admission plugin's accessor, the view both kinds share.
func validatingWebhooks(obj runtime.Object) []admissionwebhook.WebhookAccessor {
	c, _ := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	if c == nil {
		return nil
	}
	hooks := make([]admissionwebhook.WebhookAccessor, len(c.Webhooks))
	for i := range c.Webhooks {
		hooks[i] = admissionwebhook.NewValidatingWebhookAccessor("", c.Name, &c.Webhooks[i])
	}
	return hooks
}

func mutatingWebhooks(obj runtime.Object) []admissionwebhook.WebhookAccessor {
	c, _ := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	if c == nil {
		return nil
	}
	hooks := make([]admissionwebhook.WebhookAccessor, len(c.Webhooks))
	for i := range c.Webhooks {
		hooks[i] = admissionwebhook.NewMutatingWebhookAccessor("", c.Name, &c.Webhooks[i])
	}
	return hooks
}

func validateValidatingWebhookConfiguration(obj, old runtime.Object) field.ErrorList {
	return validateWebhookConfiguration(obj.(metav1.Object).GetName(), validatingWebhooks(obj), validatingWebhooks(old), old == nil)
}

func validateMutatingWebhookConfiguration(obj, old runtime.Object) field.ErrorList {
	return validateWebhookConfiguration(obj.(metav1.Object).GetName(), mutatingWebhooks(obj), mutatingWebhooks(old), old == nil)
}

// webhookRules is what a configuration must meet, strict on a create and
// on an update what the stored webhooks (old) all met.
type webhookRules struct {
	checkMatchConditions     bool
	noSideEffects            bool
	knownReviewVersion       bool
	uniqueNames              bool
	storedConditionExprs     sets.Set[string]
	paramsInMatchConditions  bool
	selectorValidationOption metav1validation.LabelSelectorValidationOptions
}

func newWebhookRules(hooks, old []admissionwebhook.WebhookAccessor, create bool) webhookRules {
	r := webhookRules{checkMatchConditions: true, noSideEffects: true, knownReviewVersion: true, uniqueNames: true, storedConditionExprs: sets.New[string]()}
	if create {
		return r
	}
	r.checkMatchConditions = len(hooks) != len(old)
	names := sets.New[string]()
	for i, h := range old {
		if !r.checkMatchConditions && !apiequality.Semantic.DeepEqual(hooks[i].GetMatchConditions(), h.GetMatchConditions()) {
			r.checkMatchConditions = true
		}
		if h.GetSideEffects() == nil || !slices.Contains(noSideEffects, string(*h.GetSideEffects())) {
			r.noSideEffects = false
		}
		if len(h.GetAdmissionReviewVersions()) > 0 && !slices.ContainsFunc(h.GetAdmissionReviewVersions(), func(v string) bool { return slices.Contains(reviewVersions, v) }) {
			r.knownReviewVersion = false
		}
		if names.Has(h.GetName()) {
			r.uniqueNames = false
		}
		names.Insert(h.GetName())
		for _, s := range []*metav1.LabelSelector{h.GetNamespaceSelector(), h.GetObjectSelector()} {
			if s != nil && len(metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
				r.selectorValidationOption.AllowInvalidLabelValueInSelector = true
			}
		}
		for _, mc := range h.GetMatchConditions() {
			r.storedConditionExprs.Insert(mc.Expression)
		}
	}
	return r
}

func validateWebhookConfiguration(name string, hooks, old []admissionwebhook.WebhookAccessor, create bool) field.ErrorList {
	rules := newWebhookRules(hooks, old, create)
	var errs field.ErrorList
	names := sets.New[string]()
	for i, h := range hooks {
		path := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(h, rules, path)...)
		errs = append(errs, validateReviewVersions(h.GetAdmissionReviewVersions(), rules.knownReviewVersion, path.Child("admissionReviewVersions"))...)
		if rules.uniqueNames && h.GetName() != "" {
			if names.Has(h.GetName()) {
				errs = append(errs, field.Duplicate(path.Child("name"), h.GetName()))
			}
			names.Insert(h.GetName())
		}
	}
	if create {
		errs = append(errs, validateStaticSuffix(name)...)
	}
	return errs
}

func validateWebhook(h admissionwebhook.WebhookAccessor, rules webhookRules, path *field.Path) field.ErrorList {
	errs := utilvalidation.IsFullyQualifiedName(path.Child("name"), h.GetName())
	ruleOps := h.GetRules()
	for i := range ruleOps {
		errs = append(errs, validateRuleWithOperations(&ruleOps[i], path.Child("rules").Index(i))...)
	}
	errs = append(errs, optionalOneOf(path.Child("failurePolicy"), h.GetFailurePolicy(), failurePolicies)...)
	errs = append(errs, optionalOneOf(path.Child("matchPolicy"), h.GetMatchPolicy(), matchPolicies)...)
	sideEffects := allSideEffects
	if rules.noSideEffects {
		sideEffects = noSideEffects
	}
	if h.GetSideEffects() == nil {
		errs = append(errs, field.Required(path.Child("sideEffects"), "must specify one of "+strings.Join(sideEffects, ", ")))
	} else {
		errs = append(errs, oneOf(path.Child("sideEffects"), *h.GetSideEffects(), sideEffects)...)
	}
	if t := h.GetTimeoutSeconds(); t != nil && (*t > 30 || *t < 1) {
		errs = append(errs, field.Invalid(path.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	if h.GetNamespaceSelector() != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(h.GetNamespaceSelector(), rules.selectorValidationOption, path.Child("namespaceSelector"))...)
	}
	if h.GetObjectSelector() != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(h.GetObjectSelector(), rules.selectorValidationOption, path.Child("objectSelector"))...)
	}
	if m, ok := h.GetMutatingWebhook(); ok {
		errs = append(errs, optionalOneOf(path.Child("reinvocationPolicy"), m.ReinvocationPolicy, reinvocationPolices)...)
	}
	cc := h.GetClientConfig()
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(path.Child("clientConfig"), "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, webhook.ValidateWebhookURL(path.Child("clientConfig", "url"), *cc.URL, true)...)
	default:
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		// kube passes the service's name where the check takes its
		// namespace, and the other way round, and so names the other
		// field of the two that is missing.
		errs = append(errs, webhook.ValidateWebhookService(path.Child("clientConfig", "service"), cc.Service.Name, cc.Service.Namespace, cc.Service.Path, port)...)
	}
	if rules.checkMatchConditions {
		errs = append(errs, validateMatchConditions(h.GetMatchConditions(), rules.paramsInMatchConditions, rules.storedConditionExprs, path.Child("matchConditions"))...)
	}
	return errs
}

// validateReviewVersions checks a webhook's AdmissionReview versions: at
// least one, each a DNS label given once, one of them known to kube unless
// the stored configuration had none known.
func validateReviewVersions(versions []string, requireKnown bool, path *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(path, "must specify one of "+strings.Join(reviewVersions, ", "))}
	}
	var errs field.ErrorList
	seen := sets.New[string]()
	known := false
	for i, v := range versions {
		if seen.Has(v) {
			errs = append(errs, field.Invalid(path.Index(i), v, "duplicate version"))
			continue
		}
		seen.Insert(v)
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(path.Index(i), v, msg))
		}
		known = known || slices.Contains(reviewVersions, v)
	}
	if requireKnown && !known {
		errs = append(errs, field.Invalid(path, versions, "must include at least one of "+strings.Join(reviewVersions, ", ")))
	}
	return errs
}

// maxMatchConditions is how many match conditions a webhook or policy may
// have.
const maxMatchConditions = 64

// validateMatchConditions checks match conditions: at most 64, each named
// once with a qualified name, with an expression that compiles without
// variables (params only in a policy with a paramKind).
func validateMatchConditions(conditions []admissionregistrationv1.MatchCondition, params bool, stored sets.Set[string], path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conditions) > maxMatchConditions {
		errs = append(errs, field.TooMany(path, len(conditions), maxMatchConditions))
	}
	names := sets.New[string]()
	for i, mc := range conditions {
		p := path.Index(i)
		if expr := strings.TrimSpace(mc.Expression); expr == "" {
			errs = append(errs, field.Required(p.Child("expression"), ""))
		} else {
			errs = append(errs, compile(statelessCompiler(), &matchconditions.MatchCondition{Expression: expr},
				plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}, envType(expr, stored), p.Child("expression"))...)
		}
		if mc.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			errs = append(errs, validateQualifiedName(mc.Name, p.Child("name"))...)
		}
		if mc.Name != "" {
			if names.Has(mc.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), mc.Name))
			}
			names.Insert(mc.Name)
		}
	}
	return errs
}

// staticSuffix ends the names kube reserves for the configurations it
// reads from manifests at start, which the API may not create.
const staticSuffix = ".static.k8s.io"

var staticSuffixMessage = fmt.Sprintf("names ending with %q are reserved for static manifest-based configurations and cannot be managed via the API", staticSuffix)

// validateStaticSuffix refuses the creation of an object with a reserved
// name.
func validateStaticSuffix(name string) field.ErrorList {
	if strings.HasSuffix(name, staticSuffix) {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name, staticSuffixMessage)}
	}
	return nil
}

// staticSuffixWarnings warns of a reserved name on an update, which only
// an object from before the reservation can have.
func staticSuffixWarnings(obj, old runtime.Object) []string {
	if old != nil && strings.HasSuffix(obj.(metav1.Object).GetName(), staticSuffix) {
		return []string{"metadata.name: " + staticSuffixMessage}
	}
	return nil
}

// ExcludedResources are the resources kube-apiserver keeps from every
// admission policy and webhook: reviews, never stored, whose interception
// could lock the cluster out. The dynamic admission plugins are given
// them, and a rule that names one is warned about.
var ExcludedResources = []schema.GroupResource{
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"},
	{Group: "authentication.k8s.io", Resource: "tokenreviews"},
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"},
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
}

func validatingWebhookConfigurationWarnings(obj, old runtime.Object) []string {
	return append(staticSuffixWarnings(obj, old), excludedRuleWarnings(validatingWebhooks(obj))...)
}

func mutatingWebhookConfigurationWarnings(obj, old runtime.Object) []string {
	return append(staticSuffixWarnings(obj, old), excludedRuleWarnings(mutatingWebhooks(obj))...)
}

// excludedRuleWarnings warns of each excluded resource a rule names
// without a wildcard, once per rule, in the rule's order.
func excludedRuleWarnings(hooks []admissionwebhook.WebhookAccessor) []string {
	var warnings []string
	for i, h := range hooks {
		for j, r := range h.GetRules() {
			if slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*") {
				continue
			}
			seen := sets.New[schema.GroupResource]()
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					gr := schema.GroupResource{Group: g, Resource: res}
					if slices.Contains(ExcludedResources, gr) && !seen.Has(gr) {
						seen.Insert(gr)
						warnings = append(warnings, fmt.Sprintf("%s: %s is excluded from admission webhooks; this rule will have no effect",
							field.NewPath("webhooks").Index(i).Child("rules").Index(j), gr))
					}
				}
			}
		}
	}
	return warnings
}
