package flowcontrol

import (
	"fmt"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/util/shufflesharding"
	"k8s.io/utils/ptr"
)

// The limits and sets kube validates against (D.20).
const (
	maxMatchingPrecedence = 10000
	maxQueues             = 10 * 1000 * 1000
	nsErrIntro            = "each member of this list must be '*' or a DNS-1123 label; "
)

var (
	distinguisherMethods = []string{string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType)}
	ruleVerbs            = sets.New("get", "list", "create", "update", "delete", "deletecollection", "patch", "watch", "proxy")
	subjectKinds         = []string{string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindUser)}
	levelTypes           = []string{string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)}
	limitResponseTypes   = []string{string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)}
)

// defaultFlowSchema gives a schema kube's default matching precedence.
func defaultFlowSchema(obj runtime.Object) {
	if spec := &obj.(*flowcontrolv1.FlowSchema).Spec; spec.MatchingPrecedence == 0 {
		spec.MatchingPrecedence = 1000
	}
}

// defaultPriorityLevel fills kube's defaults of the exempt and limited
// configurations and of the queuing.
func defaultPriorityLevel(obj runtime.Object) {
	spec := &obj.(*flowcontrolv1.PriorityLevelConfiguration).Spec
	if e := spec.Exempt; e != nil {
		e.NominalConcurrencyShares = cmpOr(e.NominalConcurrencyShares, 0)
		e.LendablePercent = cmpOr(e.LendablePercent, 0)
	}
	if l := spec.Limited; l != nil {
		l.NominalConcurrencyShares = cmpOr(l.NominalConcurrencyShares, 30)
		l.LendablePercent = cmpOr(l.LendablePercent, 0)
		if q := l.LimitResponse.Queuing; q != nil {
			q.HandSize = cmpZero(q.HandSize, 8)
			q.Queues = cmpZero(q.Queues, 64)
			q.QueueLengthLimit = cmpZero(q.QueueLengthLimit, 50)
		}
	}
}

func cmpOr(p *int32, v int32) *int32 {
	if p == nil {
		return ptr.To(v)
	}
	return p
}

func cmpZero(n, v int32) int32 {
	if n == 0 {
		return v
	}
	return n
}

// validateFlowSchema: a precedence in range (1 for exempt only), a known
// distinguisher, a priority level named, rules with subjects and rules
// kube accepts, the mandatory schemas' specs as fixed, and the status.
func validateFlowSchema(obj, _ runtime.Object) field.ErrorList {
	fs := obj.(*flowcontrolv1.FlowSchema)
	spec, specPath := &fs.Spec, field.NewPath("spec")
	var errs field.ErrorList
	mp := specPath.Child("matchingPrecedence")
	if spec.MatchingPrecedence <= 0 {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, "must be a positive value"))
	}
	if spec.MatchingPrecedence > maxMatchingPrecedence {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, fmt.Sprintf("must not be greater than %v", maxMatchingPrecedence)))
	}
	if spec.MatchingPrecedence == 1 && fs.Name != flowcontrolv1.FlowSchemaNameExempt {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if dm := spec.DistinguisherMethod; dm != nil && !slices.Contains(distinguisherMethods, string(dm.Type)) {
		// kube quotes its internal method, whose field has no JSON name.
		errs = append(errs, field.NotSupported(specPath.Child("distinguisherMethod", "type"), struct {
			Type flowcontrolv1.FlowDistinguisherMethodType
		}{dm.Type}, distinguisherMethods))
	}
	plPath := specPath.Child("priorityLevelConfiguration", "name")
	if name := spec.PriorityLevelConfiguration.Name; name == "" {
		errs = append(errs, field.Required(plPath, "must reference a priority level"))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
			errs = append(errs, field.Invalid(plPath, name, msg))
		}
	}
	for i := range spec.Rules {
		errs = append(errs, validateRule(&spec.Rules[i], specPath.Child("rules").Index(i))...)
	}
	if mand := mandatoryFlowSchema(fs.Name); mand != nil && !apiequality.Semantic.DeepEqual(*spec, *mand) {
		errs = append(errs, field.Invalid(specPath, *spec, fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
	}
	return append(errs, validateFlowSchemaStatus(fs)...)
}

func validateFlowSchemaStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	return validateFlowSchemaStatus(obj.(*flowcontrolv1.FlowSchema))
}

// validateFlowSchemaStatus: each condition has a type, given once.
func validateFlowSchemaStatus(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	types := make([]string, len(fs.Status.Conditions))
	for i, c := range fs.Status.Conditions {
		types[i] = string(c.Type)
	}
	return validateConditionTypes(types)
}

func validateConditionTypes(types []string) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, t := range types {
		p := field.NewPath("status", "conditions").Index(i)
		if seen.Has(t) {
			errs = append(errs, field.Duplicate(p.Child("type"), t))
		}
		seen.Insert(t)
		if t == "" {
			errs = append(errs, field.Required(p.Child("type"), ""))
		}
	}
	return errs
}

func validateRule(rule *flowcontrolv1.PolicyRulesWithSubjects, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Subjects) == 0 {
		errs = append(errs, field.Required(p.Child("subjects"), "subjects must contain at least one value"))
	}
	for i := range rule.Subjects {
		errs = append(errs, validateSubject(&rule.Subjects[i], p.Child("subjects").Index(i))...)
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		errs = append(errs, field.Required(p, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i := range rule.ResourceRules {
		errs = append(errs, validateResourceRule(&rule.ResourceRules[i], p.Child("resourceRules").Index(i))...)
	}
	for i := range rule.NonResourceRules {
		errs = append(errs, validateNonResourceRule(&rule.NonResourceRules[i], p.Child("nonResourceRules").Index(i))...)
	}
	return errs
}

// validateSubject: the member of the subject's kind is there and valid,
// and the others are not.
func validateSubject(s *flowcontrolv1.Subject, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.Kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		errs = validateServiceAccountSubject(s.ServiceAccount, p.Child("serviceAccount"))
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(p.Child("user"), "user is required when subject kind is 'User'"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(p.Child("user", "name"), ""))
		}
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(p.Child("group"), "group is required when subject kind is 'Group'"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(p.Child("group", "name"), ""))
		}
	default:
		return field.ErrorList{field.NotSupported(p.Child("kind"), s.Kind, subjectKinds)}
	}
	if s.Kind != flowcontrolv1.SubjectKindServiceAccount && s.ServiceAccount != nil {
		errs = append(errs, field.Forbidden(p.Child("serviceAccount"), "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"))
	}
	if s.Kind != flowcontrolv1.SubjectKindUser && s.User != nil {
		errs = append(errs, field.Forbidden(p.Child("user"), "user is forbidden when subject kind is not 'User'"))
	}
	if s.Kind != flowcontrolv1.SubjectKindGroup && s.Group != nil {
		errs = append(errs, field.Forbidden(p.Child("group"), "group is forbidden when subject kind is not 'Group'"))
	}
	return errs
}

func validateServiceAccountSubject(sa *flowcontrolv1.ServiceAccountSubject, p *field.Path) field.ErrorList {
	if sa == nil {
		return field.ErrorList{field.Required(p, "serviceAccount is required when subject kind is 'ServiceAccount'")}
	}
	var errs field.ErrorList
	if sa.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else if sa.Name != flowcontrolv1.NameAll {
		for _, msg := range apivalidation.ValidateServiceAccountName(sa.Name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), sa.Name, msg))
		}
	}
	if sa.Namespace == "" {
		errs = append(errs, field.Required(p.Child("namespace"), "must specify namespace for service account"))
	} else {
		for _, msg := range apivalidation.ValidateNamespaceName(sa.Namespace, false) {
			errs = append(errs, field.Invalid(p.Child("namespace"), sa.Namespace, msg))
		}
	}
	return errs
}

// validateVerbs: some verbs, "*" alone or kube's verbs.
func validateVerbs(verbs []string, p *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(p, "verbs must contain at least one value")}
	case slices.Contains(verbs, flowcontrolv1.VerbAll):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(p, verbs, "if '*' is present, must not specify other verbs")}
		}
	case !ruleVerbs.HasAll(verbs...):
		return field.ErrorList{field.NotSupported(p, verbs, sets.List(ruleVerbs))}
	}
	return nil
}

func validateResourceRule(rule *flowcontrolv1.ResourcePolicyRule, p *field.Path) field.ErrorList {
	errs := validateVerbs(rule.Verbs, p.Child("verbs"))
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	} else if len(rule.APIGroups) > 1 && slices.Contains(rule.APIGroups, "*") {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), rule.APIGroups, "if '*' is present, must not specify other api groups"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	} else if len(rule.Resources) > 1 && slices.Contains(rule.Resources, "*") {
		errs = append(errs, field.Invalid(p.Child("resources"), rule.Resources, "if '*' is present, must not specify other resources"))
	}
	switch {
	case len(rule.Namespaces) == 0 && !rule.ClusterScope:
		errs = append(errs, field.Required(p.Child("namespaces"), "resource rules that are not cluster scoped must supply at least one namespace"))
	case slices.Contains(rule.Namespaces, "*"):
		if len(rule.Namespaces) > 1 {
			errs = append(errs, field.Invalid(p.Child("namespaces"), rule.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	default:
		for i, ns := range rule.Namespaces {
			for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
				errs = append(errs, field.Invalid(p.Child("namespaces").Index(i), ns, nsErrIntro+msg))
			}
		}
	}
	return errs
}

func validateNonResourceRule(rule *flowcontrolv1.NonResourcePolicyRule, p *field.Path) field.ErrorList {
	errs := validateVerbs(rule.Verbs, p.Child("verbs"))
	urls := p.Child("nonResourceURLs")
	switch {
	case len(rule.NonResourceURLs) == 0:
		errs = append(errs, field.Required(urls, "nonResourceURLs must contain at least one value"))
	case slices.Contains(rule.NonResourceURLs, "*"):
		if len(rule.NonResourceURLs) > 1 {
			errs = append(errs, field.Invalid(urls, rule.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs"))
		}
	default:
		for i, u := range rule.NonResourceURLs {
			if msg := nonResourceURLProblem(u); msg != "" {
				errs = append(errs, field.Invalid(urls.Index(i), u, msg))
			}
		}
	}
	return errs
}

// nonResourceURLProblem says what is wrong with a rule's URL path, or "".
func nonResourceURLProblem(path string) string {
	switch {
	case path == "":
		return "must not be empty"
	case path == "/":
		return ""
	case !strings.HasPrefix(path, "/"):
		return "must start with slash"
	case strings.Contains(path, " "):
		return "must not contain white-space"
	case strings.Contains(path, "//"):
		return "must not contain double slash"
	}
	if n := strings.Count(path, "*"); n > 1 || n == 1 && !strings.HasSuffix(path, "/*") {
		return "wildcard can only do suffix matching"
	}
	return ""
}

// validatePriorityLevel: no preserve-zero annotation, a spec of its type,
// the mandatory levels' specs as fixed (but exempt's spec.exempt), and
// the status.
func validatePriorityLevel(obj, _ runtime.Object) field.ErrorList {
	pl := obj.(*flowcontrolv1.PriorityLevelConfiguration)
	var errs field.ErrorList
	if _, ok := pl.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey]; ok {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations"),
			fmt.Sprintf("annotation '%s' is forbidden", flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey)))
	}
	specPath := field.NewPath("spec")
	errs = append(errs, validatePriorityLevelSpec(pl.Name, &pl.Spec, specPath)...)
	if mand := mandatoryPriorityLevel(pl.Name); mand != nil {
		have := pl.Spec.DeepCopy()
		msg := fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name)
		if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
			have.Exempt = mand.Exempt
			msg = fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name)
		}
		if !apiequality.Semantic.DeepEqual(*have, *mand) {
			errs = append(errs, field.Invalid(specPath, pl.Spec, msg))
		}
	}
	return append(errs, validatePriorityLevelStatus(pl)...)
}

func validatePriorityLevelStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	return validatePriorityLevelStatus(obj.(*flowcontrolv1.PriorityLevelConfiguration))
}

func validatePriorityLevelStatus(pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	types := make([]string, len(pl.Status.Conditions))
	for i, c := range pl.Status.Conditions {
		types[i] = string(c.Type)
	}
	return validateConditionTypes(types)
}

func validatePriorityLevelSpec(name string, spec *flowcontrolv1.PriorityLevelConfigurationSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(p.Child("type"), spec.Type, "must be 'Exempt' if and only if `name` is 'exempt'"))
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			errs = append(errs, field.Forbidden(p.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := spec.Exempt; e != nil {
			errs = append(errs, validateShares(e.NominalConcurrencyShares, e.LendablePercent, p.Child("exempt"))...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			errs = append(errs, field.Forbidden(p.Child("exempt"), "must be nil if the type is Limited"))
		}
		if spec.Limited == nil {
			errs = append(errs, field.Required(p.Child("limited"), "must not be empty when type is Limited"))
		} else {
			errs = append(errs, validateLimited(spec.Limited, p.Child("limited"))...)
		}
	case "":
		errs = append(errs, field.Required(p.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), spec.Type, levelTypes))
	}
	return errs
}

func validateShares(shares, lendable *int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if shares != nil && *shares < 0 {
		errs = append(errs, field.Invalid(p.Child("nominalConcurrencyShares"), *shares, "must be a non-negative integer"))
	}
	if lendable != nil && (*lendable < 0 || *lendable > 100) {
		errs = append(errs, field.Invalid(p.Child("lendablePercent"), *lendable, "must be between 0 and 100, inclusive"))
	}
	return errs
}

func validateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if l.NominalConcurrencyShares != nil && *l.NominalConcurrencyShares < 0 {
		errs = append(errs, field.Invalid(p.Child("nominalConcurrencyShares"), *l.NominalConcurrencyShares, "must be a non-negative integer"))
	}
	errs = append(errs, validateLimitResponse(&l.LimitResponse, p.Child("limitResponse"))...)
	errs = append(errs, validateShares(nil, l.LendablePercent, p)...)
	if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
		errs = append(errs, field.Invalid(p.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
	}
	return errs
}

func validateLimitResponse(lr *flowcontrolv1.LimitResponse, p *field.Path) field.ErrorList {
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			return field.ErrorList{field.Forbidden(p.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited")}
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if lr.Queuing == nil {
			return field.ErrorList{field.Required(p.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited")}
		}
		return validateQueuing(lr.Queuing, p.Child("queuing"))
	case "":
		return field.ErrorList{field.Required(p.Child("type"), "")}
	default:
		return field.ErrorList{field.NotSupported(p.Child("type"), lr.Type, limitResponseTypes)}
	}
	return nil
}

// validateQueuing: positive sizes, at most maxQueues queues, and a hand
// that fits the queues and the shuffle-sharding hash.
func validateQueuing(q *flowcontrolv1.QueuingConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		errs = append(errs, field.Invalid(p.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	if q.Queues <= 0 {
		errs = append(errs, field.Invalid(p.Child("queues"), q.Queues, "must be positive"))
	} else if q.Queues > maxQueues {
		errs = append(errs, field.Invalid(p.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", maxQueues)))
	}
	hand := p.Child("handSize")
	switch {
	case q.HandSize <= 0:
		errs = append(errs, field.Invalid(hand, q.HandSize, "must be positive"))
	case q.HandSize > q.Queues:
		errs = append(errs, field.Invalid(hand, q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
	case shufflesharding.RequiredEntropyBits(int(q.Queues), int(q.HandSize)) > shufflesharding.MaxHashBits:
		errs = append(errs, field.Invalid(hand, q.HandSize, fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d",
			q.Queues, q.HandSize, shufflesharding.MaxHashBits)))
	}
	return errs
}
