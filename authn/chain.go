package authn

import "net/http"

// chain is the Request New builds: Union, WithAuthenticatedGroup,
// FailOnError with anonymous and the API audience check as steps of one
// method rather than nested wrappers, each of which would cost a call
// through an interface on every request.
type chain struct {
	union     union
	anonymous bool
	auds      []string // the API audiences; nil: none
}

var _ Request = (*chain)(nil)

func (c *chain) AuthenticateRequest(r *http.Request) (*Response, bool, error) {
	resp, ok, err := c.union.AuthenticateRequest(r)
	switch {
	case err != nil:
		return nil, false, err // a bad credential is refused, never anonymous
	case ok:
		resp = withAuthenticatedGroup(resp)
	case c.anonymous:
		resp = anonymousResponse()
	default:
		return nil, false, nil
	}
	if err := checkResponseAudiences(resp, c.auds); err != nil {
		return nil, false, err
	}
	return resp, true, nil
}
