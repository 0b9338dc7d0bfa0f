package authentication

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
)

var authenticationGV = authenticationv1.SchemeGroupVersion

// userInfo converts an authenticated user to the API's UserInfo.
func userInfo(u authn.User) authenticationv1.UserInfo {
	ui := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups)}
	if len(u.Extra) > 0 {
		ui.Extra = make(map[string]authenticationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			ui.Extra[k] = slices.Clone(v)
		}
	}
	return ui
}

// selfSubjectReviews tells a user who the server thinks they are.
type selfSubjectReviews struct{ c *Config }

func (*selfSubjectReviews) New() runtime.Object { return &authenticationv1.SelfSubjectReview{} }
func (*selfSubjectReviews) Namespaced() bool    { return false }
func (*selfSubjectReviews) Kind() string        { return "SelfSubjectReview" }

func (r *selfSubjectReviews) Create(_ context.Context, req *apiserver.CreateRequest) (runtime.Object, error) {
	return &authenticationv1.SelfSubjectReview{
		TypeMeta:   metav1.TypeMeta{APIVersion: authenticationGV.String(), Kind: "SelfSubjectReview"},
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(r.c.now())},
		Status:     authenticationv1.SelfSubjectReviewStatus{UserInfo: userInfo(req.User)},
	}, nil
}

// tokenReviews checks a token as the server would check it on a request.
type tokenReviews struct{ c *Config }

func (*tokenReviews) New() runtime.Object { return &authenticationv1.TokenReview{} }
func (*tokenReviews) Namespaced() bool    { return false }
func (*tokenReviews) Kind() string        { return "TokenReview" }

func (r *tokenReviews) Create(ctx context.Context, req *apiserver.CreateRequest) (runtime.Object, error) {
	in, ok := req.Object.(*authenticationv1.TokenReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenReview: %T", req.Object))
	}
	if in.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	out := &authenticationv1.TokenReview{
		TypeMeta:   metav1.TypeMeta{APIVersion: authenticationGV.String(), Kind: "TokenReview"},
		ObjectMeta: in.ObjectMeta,
		Spec:       in.Spec,
	}
	auds := in.Spec.Audiences
	if len(auds) == 0 {
		auds = r.c.APIAudiences
	}
	// The token is checked on a request that carries nothing else, so only
	// the token authenticators can answer.
	fake, err := http.NewRequestWithContext(authn.WithAudiences(ctx, auds), http.MethodGet, "/", nil)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	fake.Header.Set("Authorization", "Bearer "+in.Spec.Token)
	resp, ok, err := r.c.Tokens.AuthenticateRequest(fake)
	if err != nil {
		out.Status.Error = err.Error()
		return out, nil
	}
	if !ok {
		return out, nil
	}
	got := resp.Audiences
	if len(got) == 0 {
		// A credential without audiences (a static token) is good for the
		// API audiences only.
		got = intersect(auds, r.c.APIAudiences)
		if len(auds) > 0 && len(got) == 0 {
			out.Status.Error = fmt.Sprintf("token audiences %q is invalid for the target audiences %q", r.c.APIAudiences, auds)
			return out, nil
		}
	} else if len(auds) > 0 && len(intersect(auds, got)) == 0 {
		return nil, apierrors.NewInternalError(fmt.Errorf("error validating audiences"))
	}
	out.Status.Authenticated = true
	out.Status.User = userInfo(resp.User)
	out.Status.Audiences = got
	return out, nil
}

// intersect returns the elements of a that are in b, in a's order.
func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
