package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

// SubjectAccessReviewer authorizes impersonation and non-resource
// requests by posting a SubjectAccessReview to the upstream API server
// with the gateway's own credential (which therefore needs create on
// subjectaccessreviews).
type SubjectAccessReviewer struct {
	Upstream  *url.URL
	Transport http.RoundTripper
	// Identity is how the gateway names itself; RequestHeaderIdentity
	// sends X-Remote-User: LookupUser over the front-proxy certificate,
	// ImpersonateIdentity (and zero) sends no identity header, so that the
	// transport's own credential speaks.
	Identity UpstreamIdentity
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

// review completes spec with user and posts it.
func (s *SubjectAccessReviewer) review(ctx context.Context, user *authn.User, spec authorizationv1.SubjectAccessReviewSpec) (bool, string, error) {
	spec.User, spec.UID, spec.Groups = user.Name, user.UID, user.Groups
	sar := authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"},
		Spec:     spec,
	}
	if len(user.Extra) > 0 {
		sar.Spec.Extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			sar.Spec.Extra[k] = v
		}
	}
	body, err := json.Marshal(sar)
	if err != nil {
		return false, "", err
	}
	u := s.Upstream.JoinPath("/apis/authorization.k8s.io/v1/subjectaccessreviews").String()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return false, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if s.Identity == RequestHeaderIdentity {
		req.Header.Set(authn.RemoteUserHeader, LookupUser)
	}
	resp, err := s.Transport.RoundTrip(req)
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return false, "", fmt.Errorf("subject access review: upstream answered %d", resp.StatusCode)
	}
	var out authorizationv1.SubjectAccessReview
	if err := json.Unmarshal(data, &out); err != nil {
		return false, "", fmt.Errorf("subject access review: decode response: %w", err)
	}
	return out.Status.Allowed, out.Status.Reason, nil
}
