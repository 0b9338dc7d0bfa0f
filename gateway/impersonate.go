package gateway

import (
	"context"
	"fmt"
	"net/http"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

// SubjectAccessReviewer authorizes impersonation and non-resource
// requests by posting a SubjectAccessReview to the upstream API server
// through the gateway's clientset, as the gateway (which therefore needs
// create on subjectaccessreviews).
type SubjectAccessReviewer struct {
	// Client posts the reviews, as the gateway (NewUpstreamClient).
	// Required.
	Client kubernetes.Interface
}

var _ authz.Authorizer = (*SubjectAccessReviewer)(nil)

// Authorize asks the upstream whether a's user may do a.
func (s *SubjectAccessReviewer) Authorize(ctx context.Context, a authz.Attributes) (authz.Decision, string, error) {
	var spec authorizationv1.SubjectAccessReviewSpec
	if a.ResourceRequest {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: a.Namespace, Verb: a.Verb, Group: a.APIGroup, Version: a.APIVersion,
			Resource: a.Resource, Subresource: a.Subresource, Name: a.Name,
		}
	} else {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.Path, Verb: a.Verb}
	}
	allowed, reason, err := s.review(ctx, &a.User, spec)
	if err != nil || !allowed {
		return authz.NoOpinion, reason, err
	}
	return authz.Allow, reason, nil
}

// maxReviewBytes is the largest answer to a SubjectAccessReview read.
const maxReviewBytes = 1 << 20

// review completes spec with user and posts it, with a single request:
// the review is made for a client's request, and answers with the
// upstream's first answer rather than wait out a Retry-After. Only a 201
// or 200 is the review's answer; any other status is a failure.
func (s *SubjectAccessReviewer) review(ctx context.Context, user *authn.User, spec authorizationv1.SubjectAccessReviewSpec) (bool, string, error) {
	spec.User, spec.UID, spec.Groups = user.Name, user.UID, user.Groups
	sar := &authorizationv1.SubjectAccessReview{Spec: spec}
	if len(user.Extra) > 0 {
		sar.Spec.Extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			sar.Spec.Extra[k] = v
		}
	}
	var out authorizationv1.SubjectAccessReview
	ans := upstreamAnswer{limit: maxReviewBytes}
	res := s.Client.AuthorizationV1().RESTClient().Post().Resource("subjectaccessreviews").
		Body(sar).MaxRetries(0).Do(withAnswer(ctx, &ans))
	if ans.code != http.StatusCreated && ans.code != http.StatusOK {
		return false, "", fmt.Errorf("subject access review: %w", ans.failure(res.Error()))
	}
	if err := res.Into(&out); err != nil {
		return false, "", fmt.Errorf("subject access review: %w", ans.undecodable(err))
	}
	return out.Status.Allowed, out.Status.Reason, nil
}
