package authn

import (
	"net/http"
	"slices"
)

// WithAuthenticatedGroup returns a Request that adds AllAuthenticated to
// the groups of every user a authenticates, except the anonymous user and
// users that already carry AllAuthenticated or AllUnauthenticated. The
// response is copied, never modified in place, because it may be shared
// with a cache.
func WithAuthenticatedGroup(a Request) Request { return groupAdder{a} }

// AddAuthenticated returns groups with AllAuthenticated appended, unless
// it (or AllUnauthenticated) is already there. It appends in place when
// groups has room, so callers pass a slice they own. Authenticators build
// their responses with it, so that the group adder of the chain finds
// nothing to add and copies nothing.
func AddAuthenticated(groups []string) []string {
	for _, g := range groups {
		if g == AllAuthenticated || g == AllUnauthenticated {
			return groups
		}
	}
	return append(groups, AllAuthenticated)
}

type groupAdder struct{ a Request }

var _ Request = groupAdder{}

func (g groupAdder) AuthenticateRequest(r *http.Request) (*Response, bool, error) {
	resp, ok, err := g.a.AuthenticateRequest(r)
	if err != nil || !ok {
		return nil, false, err
	}
	return withAuthenticatedGroup(resp), true, nil
}

// withAuthenticatedGroup returns resp, or a copy of it with
// AllAuthenticated added to the groups (see WithAuthenticatedGroup).
func withAuthenticatedGroup(resp *Response) *Response {
	if resp.User.Name == Anonymous {
		return resp
	}
	for _, group := range resp.User.Groups {
		if group == AllAuthenticated || group == AllUnauthenticated {
			return resp
		}
	}
	out := *resp
	out.User.Groups = append(slices.Clip(resp.User.Groups), AllAuthenticated)
	return &out
}
