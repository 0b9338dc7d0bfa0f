package authn

import (
	"context"
	"net/http"
	"slices"
)

type audiencesKey struct{}

// WithAudiences returns a copy of ctx carrying the audiences a token must
// be issued for.
func WithAudiences(ctx context.Context, auds []string) context.Context {
	return context.WithValue(ctx, audiencesKey{}, auds)
}

// AudiencesFrom returns the audiences stored in ctx by WithAudiences.
func AudiencesFrom(ctx context.Context) ([]string, bool) {
	auds, ok := ctx.Value(audiencesKey{}).([]string)
	return auds, ok
}

// withTokenAudiences gives every token lookup the API audiences, unless
// the caller already chose others.
type withTokenAudiences struct {
	t    Token
	auds any // []string, boxed once rather than on every request
}

func newTokenAudiences(t Token, auds []string) Token {
	return withTokenAudiences{t: t, auds: auds}
}

var _ Token = withTokenAudiences{}

func (w withTokenAudiences) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	if _, ok := AudiencesFrom(ctx); !ok {
		ctx = context.WithValue(ctx, audiencesKey{}, w.auds)
	}
	return w.t.AuthenticateToken(ctx, token)
}

// WithAPIAudiences returns a Request that refuses a response of a whose
// audiences, when it names any, include none of the API audiences auds:
// the check kube-apiserver's authentication filter makes after every
// success.
func WithAPIAudiences(a Request, auds []string) Request {
	return apiAudiences{a: a, auds: slices.Clone(auds)}
}

type apiAudiences struct {
	a    Request
	auds []string
}

var _ Request = apiAudiences{}

func (w apiAudiences) AuthenticateRequest(r *http.Request) (*Response, bool, error) {
	resp, ok, err := w.a.AuthenticateRequest(r)
	if err != nil || !ok {
		return nil, false, err
	}
	if err := checkResponseAudiences(resp, w.auds); err != nil {
		return nil, false, err
	}
	return resp, true, nil
}

// audienceError names the audiences that did not match; audiences are
// not secret.
type audienceError struct{ got, want []string }

func (e audienceError) Error() string {
	return "response audiences " + quoteList(e.got) + " do not match the API audiences " + quoteList(e.want)
}

// checkResponseAudiences refuses a response whose audiences, when it names
// any, do not include one of the API audiences auds (when there are any).
func checkResponseAudiences(resp *Response, auds []string) error {
	if len(auds) > 0 && len(resp.Audiences) > 0 && !intersects(resp.Audiences, auds) {
		return audienceError{got: resp.Audiences, want: auds}
	}
	return nil
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

func quoteList(l []string) string {
	s := "["
	for i, x := range l {
		if i > 0 {
			s += ", "
		}
		s += `"` + x + `"`
	}
	return s + "]"
}
