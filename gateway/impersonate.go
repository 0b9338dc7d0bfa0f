package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

// ImpersonationAuthorizer decides whether user may use the verb
// "impersonate" on attrs, as kube-apiserver's impersonation filter asks
// its authorizer (K8S-BEHAVIOUR.md A.6).
type ImpersonationAuthorizer interface {
	AuthorizeImpersonation(ctx context.Context, user *authn.User, attrs authorizationv1.ResourceAttributes) (allowed bool, reason string, err error)
}

// NonResourceAuthorizer decides whether user may use attrs.Verb on the
// non-resource path attrs.Path, as kube-apiserver's authorizer decides
// for /metrics.
type NonResourceAuthorizer interface {
	AuthorizeNonResource(ctx context.Context, user *authn.User, attrs authorizationv1.NonResourceAttributes) (allowed bool, reason string, err error)
}

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

var (
	_ ImpersonationAuthorizer = (*SubjectAccessReviewer)(nil)
	_ NonResourceAuthorizer   = (*SubjectAccessReviewer)(nil)
)

// AuthorizeImpersonation asks the upstream.
func (s *SubjectAccessReviewer) AuthorizeImpersonation(ctx context.Context, user *authn.User, attrs authorizationv1.ResourceAttributes) (bool, string, error) {
	return s.review(ctx, user, authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &attrs})
}

// AuthorizeNonResource asks the upstream.
func (s *SubjectAccessReviewer) AuthorizeNonResource(ctx context.Context, user *authn.User, attrs authorizationv1.NonResourceAttributes) (bool, string, error) {
	return s.review(ctx, user, authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: &attrs})
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

// requestedImpersonation reads the Impersonate-* headers of h.
func requestedImpersonation(h http.Header) (u authn.User, hasOthers bool) {
	for k, vs := range h {
		switch {
		case strings.EqualFold(k, authz.ImpersonateUserHeader):
			if len(vs) > 0 {
				u.Name = vs[0]
			}
		case strings.EqualFold(k, authz.ImpersonateUIDHeader):
			if len(vs) > 0 {
				u.UID = vs[0]
			}
			hasOthers = true
		case strings.EqualFold(k, authz.ImpersonateGroupHeader):
			u.Groups = append(u.Groups, vs...)
			hasOthers = true
		case hasPrefixFold(k, authz.ImpersonateExtraHeaderPrefix):
			key := strings.ToLower(k[len(authz.ImpersonateExtraHeaderPrefix):])
			if unescaped, err := url.PathUnescape(key); err == nil {
				key = unescaped
			}
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			u.Extra[key] = append(u.Extra[key], vs...)
			hasOthers = true
		}
	}
	return u, hasOthers
}

// authorizeImpersonation checks a client's Impersonate-* headers for
// requester and returns the identity to forward, or nil with the HTTP
// status and message to answer.
func (g *Gateway) authorizeImpersonation(r *http.Request, requester *authn.User) (*authn.User, int, string) {
	want, hasOthers := requestedImpersonation(r.Header)
	if want.Name == "" {
		if hasOthers {
			return nil, http.StatusBadRequest, "requested impersonation of groups, UID or extra without impersonating a user"
		}
		return nil, http.StatusBadRequest, "Impersonate-User is empty"
	}
	if g.cfg.Impersonation == nil {
		return nil, http.StatusForbidden, fmt.Sprintf("impersonation is not enabled on this gateway: User %q cannot impersonate", requester.Name)
	}
	var checks []authorizationv1.ResourceAttributes
	if ns, name, ok := serviceAccountName(want.Name); ok {
		checks = append(checks, authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: name})
		if len(want.Groups) == 0 {
			want.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}
		}
	} else {
		checks = append(checks, authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users", Name: want.Name})
	}
	for _, grp := range want.Groups {
		checks = append(checks, authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "groups", Name: grp})
	}
	for k, vs := range want.Extra {
		for _, v := range vs {
			checks = append(checks, authorizationv1.ResourceAttributes{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "userextras", Subresource: k, Name: v})
		}
	}
	if want.UID != "" {
		checks = append(checks, authorizationv1.ResourceAttributes{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "uids", Name: want.UID})
	}
	for _, c := range checks {
		allowed, reason, err := g.cfg.Impersonation.AuthorizeImpersonation(r.Context(), requester, c)
		if err != nil {
			g.log.Error("impersonation check failed", "user", requester.Name, "error", err)
			return nil, http.StatusForbidden, fmt.Sprintf("User %q cannot impersonate: authorization check failed", requester.Name)
		}
		if !allowed {
			msg := fmt.Sprintf("%s %q is forbidden: User %q cannot impersonate resource %q in API group %q at the cluster scope",
				c.Resource, c.Name, requester.Name, c.Resource, c.Group)
			if reason != "" {
				msg += ": " + reason
			}
			return nil, http.StatusForbidden, msg
		}
	}
	return &want, 0, ""
}

// serviceAccountName splits system:serviceaccount:NS:NAME.
func serviceAccountName(user string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	return ns, name, ok && ns != "" && name != "" && !strings.Contains(name, ":")
}
