package authapi

import (
	"context"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

var authorizationGV = authorizationv1.SchemeGroupVersion

// validateAttributes checks that exactly one kind of attributes is given,
// with kube-apiserver's wording.
func validateAttributes(spec *authorizationv1.SubjectAccessReviewSpec) field.ErrorList {
	p := field.NewPath("spec")
	switch {
	case spec.ResourceAttributes == nil && spec.NonResourceAttributes == nil:
		return field.ErrorList{field.Required(p.Child("resourceAttributes"), "exactly one of nonResourceAttributes or resourceAttributes must be specified")}
	case spec.ResourceAttributes != nil && spec.NonResourceAttributes != nil:
		return field.ErrorList{field.Invalid(p.Child("nonResourceAttributes"), spec.NonResourceAttributes, "cannot be specified in combination with resourceAttributes")}
	}
	return nil
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
	if errs := validateAttributes(&spec); len(errs) > 0 {
		return nil, apierrors.NewInvalid(authorizationGV.WithKind("SelfSubjectAccessReview").GroupKind(), "", errs)
	}
	return &authorizationv1.SelfSubjectAccessReview{
		TypeMeta:   metav1.TypeMeta{APIVersion: authorizationGV.String(), Kind: "SelfSubjectAccessReview"},
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(r.c.now())},
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
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(authorizationGV.WithKind("SubjectAccessReview").GroupKind(), "", errs)
	}
	u := authn.User{Name: in.Spec.User, UID: in.Spec.UID, Groups: slices.Clone(in.Spec.Groups)}
	if len(in.Spec.Extra) > 0 {
		u.Extra = make(map[string][]string, len(in.Spec.Extra))
		for k, v := range in.Spec.Extra {
			u.Extra[k] = slices.Clone(v)
		}
	}
	return &authorizationv1.SubjectAccessReview{
		TypeMeta:   metav1.TypeMeta{APIVersion: authorizationGV.String(), Kind: "SubjectAccessReview"},
		ObjectMeta: metav1.ObjectMeta{Name: in.Name, CreationTimestamp: metav1.NewTime(r.c.now())},
		Spec:       in.Spec,
		Status:     r.c.decide(ctx, attributes(u, in.Spec.ResourceAttributes, in.Spec.NonResourceAttributes)),
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
	out := &authorizationv1.SelfSubjectRulesReview{
		TypeMeta:   metav1.TypeMeta{APIVersion: authorizationGV.String(), Kind: "SelfSubjectRulesReview"},
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(r.c.now())},
		Spec:       in.Spec,
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
