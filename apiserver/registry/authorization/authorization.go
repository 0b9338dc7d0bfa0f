// Package authorization is the authorization.k8s.io/v1 API group as the
// API server serves it: its virtual resources, answered and never stored,
// selfsubjectaccessreviews (kubectl auth can-i), selfsubjectrulesreviews
// (kubectl auth can-i --list), subjectaccessreviews and
// localsubjectaccessreviews.
//
// Each is an apiserver.Creator, as it needs the server's authorizer;
// Creators returns them keyed as apiserver.Config.Creators expects.
package authorization

import (
	"context"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

// RulesResolver lists the rules granted to a user in a namespace, as
// rbac.Authorizer does. An error means the list may be incomplete.
type RulesResolver interface {
	RulesFor(u authn.User, namespace string) ([]rbacv1.PolicyRule, error)
}

// Config is what the resources need.
type Config struct {
	// Authorizer answers access reviews; it should be the server's whole
	// chain. Nil leaves the access reviews out.
	Authorizer authz.Authorizer
	// Rules answers rules reviews; nil leaves selfsubjectrulesreviews out.
	Rules RulesResolver
}

// The keys of Creators.
const (
	SelfSubjectAccessReviewsKey  = "authorization.k8s.io/v1/selfsubjectaccessreviews"
	SelfSubjectRulesReviewsKey   = "authorization.k8s.io/v1/selfsubjectrulesreviews"
	SubjectAccessReviewsKey      = "authorization.k8s.io/v1/subjectaccessreviews"
	LocalSubjectAccessReviewsKey = "authorization.k8s.io/v1/localsubjectaccessreviews"
)

// Creators returns the resources c makes possible, keyed by
// GROUP/VERSION/RESOURCE; none when c is empty.
func Creators(c Config) map[string]apiserver.Creator {
	cp := &c
	m := map[string]apiserver.Creator{}
	if c.Authorizer != nil {
		m[SelfSubjectAccessReviewsKey] = &selfSubjectAccessReviews{cp}
		m[SubjectAccessReviewsKey] = &subjectAccessReviews{cp}
		m[LocalSubjectAccessReviewsKey] = &localSubjectAccessReviews{cp}
	}
	if c.Rules != nil {
		m[SelfSubjectRulesReviewsKey] = &selfSubjectRulesReviews{cp}
	}
	return m
}

var authorizationGV = authorizationv1.SchemeGroupVersion

// reviewKind is what kube-apiserver's 422 for an access review names: the
// group without a kind (".authorization.k8s.io \"\" is invalid"), as its
// handlers take the kind from the decoded review, which has none.
var reviewKind = schema.GroupKind{Group: authorizationGV.Group}

// validateAttributes checks that exactly one kind of attributes is given,
// with kube-apiserver's wording: either way the error is on spec, with
// the non-resource attributes as its value.
func validateAttributes(spec *authorizationv1.SubjectAccessReviewSpec) field.ErrorList {
	if (spec.ResourceAttributes == nil) == (spec.NonResourceAttributes == nil) {
		return field.ErrorList{field.Invalid(field.NewPath("spec"), internalNonResource(spec.NonResourceAttributes),
			"exactly one of nonResourceAttributes or resourceAttributes must be specified")}
	}
	return nil
}

// nonResourceValue is non-resource attributes as kube-apiserver's errors
// print them: its internal type, without json names ({"Path":…,"Verb":…}).
type nonResourceValue struct {
	Path string
	Verb string
}

func internalNonResource(a *authorizationv1.NonResourceAttributes) *nonResourceValue {
	if a == nil {
		return nil
	}
	return &nonResourceValue{Path: a.Path, Verb: a.Verb}
}

// attributes converts a review's attributes to what an authorizer sees.
func attributes(u authn.User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authz.Attributes {
	if ra != nil {
		return authz.Attributes{User: u, ResourceRequest: true, Verb: ra.Verb, Namespace: ra.Namespace,
			APIGroup: ra.Group, APIVersion: ra.Version, Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name}
	}
	return authz.Attributes{User: u, Verb: nra.Verb, Path: nra.Path}
}

// decide asks the authorizer and fills a review status as kube-apiserver
// does: allowed and denied from the decision, the reason, and the
// evaluation error if any.
func (c *Config) decide(ctx context.Context, a authz.Attributes) authorizationv1.SubjectAccessReviewStatus {
	d, reason, err := c.Authorizer.Authorize(ctx, a)
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: d == authz.Allow, Denied: d == authz.Deny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

// selfSubjectAccessReviews answers "may I do this?" for the requester.
type selfSubjectAccessReviews struct{ c *Config }

func (*selfSubjectAccessReviews) New() runtime.Object {
	return &authorizationv1.SelfSubjectAccessReview{}
}
func (*selfSubjectAccessReviews) Namespaced() bool { return false }
func (*selfSubjectAccessReviews) Kind() string     { return "SelfSubjectAccessReview" }

func (r *selfSubjectAccessReviews) Create(ctx context.Context, req *apiserver.CreateRequest) (runtime.Object, error) {
	in, ok := req.Object.(*authorizationv1.SelfSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectAccessReview: %T", req.Object))
	}
	spec := authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: in.Spec.ResourceAttributes, NonResourceAttributes: in.Spec.NonResourceAttributes}
	if errs := append(validateAttributes(&spec), emptyMetadata(in.ObjectMeta, false)...); len(errs) > 0 {
		return nil, apierrors.NewInvalid(reviewKind, "", errs)
	}
	return &authorizationv1.SelfSubjectAccessReview{
		TypeMeta:   metav1.TypeMeta{APIVersion: authorizationGV.String(), Kind: "SelfSubjectAccessReview"},
		ObjectMeta: in.ObjectMeta,
		Spec:       in.Spec,
		Status:     r.c.decide(ctx, attributes(req.User, spec.ResourceAttributes, spec.NonResourceAttributes)),
	}, nil
}

// subjectAccessReviews answers "may this user do this?".
type subjectAccessReviews struct{ c *Config }

func (*subjectAccessReviews) New() runtime.Object { return &authorizationv1.SubjectAccessReview{} }
func (*subjectAccessReviews) Namespaced() bool    { return false }
func (*subjectAccessReviews) Kind() string        { return "SubjectAccessReview" }

func (r *subjectAccessReviews) Create(ctx context.Context, req *apiserver.CreateRequest) (runtime.Object, error) {
	in, ok := req.Object.(*authorizationv1.SubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SubjectAccessReview: %T", req.Object))
	}
	errs := validateAttributes(&in.Spec)
	if in.Spec.User == "" && len(in.Spec.Groups) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "user"), in.Spec.User, "at least one of user or group must be specified"))
	}
	errs = append(errs, emptyMetadata(in.ObjectMeta, false)...)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(reviewKind, "", errs)
	}
	return &authorizationv1.SubjectAccessReview{
		TypeMeta:   metav1.TypeMeta{APIVersion: authorizationGV.String(), Kind: "SubjectAccessReview"},
		ObjectMeta: in.ObjectMeta,
		Spec:       in.Spec,
		Status:     r.c.decide(ctx, attributes(reviewedUser(&in.Spec), in.Spec.ResourceAttributes, in.Spec.NonResourceAttributes)),
	}, nil
}

// reviewedUser is the user a review's spec names.
func reviewedUser(spec *authorizationv1.SubjectAccessReviewSpec) authn.User {
	u := authn.User{Name: spec.User, UID: spec.UID, Groups: slices.Clone(spec.Groups)}
	if len(spec.Extra) > 0 {
		u.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			u.Extra[k] = slices.Clone(v)
		}
	}
	return u
}

// emptyMetadata refuses a review with metadata, as kube-apiserver does:
// only the managedFields its create handler records, and for a local
// review the namespace, may be set.
func emptyMetadata(m metav1.ObjectMeta, namespace bool) field.ErrorList {
	c := m
	c.ManagedFields = nil
	msg := "must be empty"
	if namespace {
		c.Namespace = ""
		msg = "must be empty except for namespace"
	}
	if !apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, c) {
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), m, msg)}
	}
	return nil
}

// localSubjectAccessReviews answers "may this user do this in this
// namespace?", for namespace admins.
type localSubjectAccessReviews struct{ c *Config }

func (*localSubjectAccessReviews) New() runtime.Object {
	return &authorizationv1.LocalSubjectAccessReview{}
}
func (*localSubjectAccessReviews) Namespaced() bool { return true }
func (*localSubjectAccessReviews) Kind() string     { return "LocalSubjectAccessReview" }

func (r *localSubjectAccessReviews) Create(ctx context.Context, req *apiserver.CreateRequest) (runtime.Object, error) {
	in, ok := req.Object.(*authorizationv1.LocalSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a LocalSubjectAccessReview: %T", req.Object))
	}
	errs := validateAttributes(&in.Spec)
	if in.Spec.User == "" && len(in.Spec.Groups) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "user"), in.Spec.User, "at least one of user or group must be specified"))
	}
	errs = append(errs, emptyMetadata(in.ObjectMeta, true)...)
	if ra := in.Spec.ResourceAttributes; ra != nil && ra.Namespace != in.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("spec.resourceAttributes.namespace"), ra.Namespace, "must match metadata.namespace"))
	}
	if nra := in.Spec.NonResourceAttributes; nra != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec.nonResourceAttributes"), internalNonResource(nra), "disallowed on this kind of request"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(reviewKind, "", errs)
	}
	if req.Namespace == "" {
		return nil, apierrors.NewBadRequest("namespace is required on this type: ")
	}
	if req.Namespace != in.Namespace {
		return nil, apierrors.NewBadRequest("spec.resourceAttributes.namespace must match namespace: " + req.Namespace)
	}
	return &authorizationv1.LocalSubjectAccessReview{
		TypeMeta:   metav1.TypeMeta{APIVersion: authorizationGV.String(), Kind: "LocalSubjectAccessReview"},
		ObjectMeta: in.ObjectMeta,
		Spec:       in.Spec,
		Status:     r.c.decide(ctx, attributes(reviewedUser(&in.Spec), in.Spec.ResourceAttributes, in.Spec.NonResourceAttributes)),
	}, nil
}

// selfSubjectRulesReviews lists what the requester may do in a namespace.
type selfSubjectRulesReviews struct{ c *Config }

func (*selfSubjectRulesReviews) New() runtime.Object {
	return &authorizationv1.SelfSubjectRulesReview{}
}
func (*selfSubjectRulesReviews) Namespaced() bool { return false }
func (*selfSubjectRulesReviews) Kind() string     { return "SelfSubjectRulesReview" }

func (r *selfSubjectRulesReviews) Create(_ context.Context, req *apiserver.CreateRequest) (runtime.Object, error) {
	in, ok := req.Object.(*authorizationv1.SelfSubjectRulesReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectRulesReview: %T", req.Object))
	}
	if in.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	rules, err := r.c.Rules.RulesFor(req.User, in.Spec.Namespace)
	// kube-apiserver answers with a new review holding only the status.
	out := &authorizationv1.SelfSubjectRulesReview{
		TypeMeta: metav1.TypeMeta{APIVersion: authorizationGV.String(), Kind: "SelfSubjectRulesReview"},
	}
	if authz.InGroup(req.User, authz.SystemMasters) {
		// The privileged-group authorizer allows members everything.
		out.Status.ResourceRules = append(out.Status.ResourceRules, authorizationv1.ResourceRule{
			Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}})
		out.Status.NonResourceRules = append(out.Status.NonResourceRules, authorizationv1.NonResourceRule{
			Verbs: []string{"*"}, NonResourceURLs: []string{"*"}})
	}
	for _, rule := range rules {
		if len(rule.Resources) > 0 {
			out.Status.ResourceRules = append(out.Status.ResourceRules, authorizationv1.ResourceRule{
				Verbs: rule.Verbs, APIGroups: rule.APIGroups, Resources: rule.Resources, ResourceNames: rule.ResourceNames})
		}
		if len(rule.NonResourceURLs) > 0 {
			out.Status.NonResourceRules = append(out.Status.NonResourceRules, authorizationv1.NonResourceRule{
				Verbs: rule.Verbs, NonResourceURLs: rule.NonResourceURLs})
		}
	}
	if err != nil {
		out.Status.EvaluationError = err.Error()
	}
	return out, nil
}
