package authn

import (
	"net/http"
	"slices"
)

// WithAuthenticatedGroup returns a Request that adds AllAuthenticated to
// the groups of the users a authenticates, as AddsAuthenticated decides.
// The response is copied, never modified in place, because it may be
// shared with a cache.
func WithAuthenticatedGroup(a Request) Request { return groupAdder{a} }

// AddsAuthenticated reports whether the chain adds AllAuthenticated to the
// groups of a user called name: it does for every user except the
// anonymous one, whatever authenticated it, and except users whose groups
// already hold AllAuthenticated or AllUnauthenticated.
func AddsAuthenticated(name string, groups []string) bool {
	if name == Anonymous {
		return false
	}
	for _, g := range groups {
		if g == AllAuthenticated || g == AllUnauthenticated {
			return false
		}
	}
	return true
}

// AddAuthenticated returns the groups of the user called name with
// AllAuthenticated appended when AddsAuthenticated says so, and groups
// unchanged otherwise. It appends in place when groups has room, so
// callers pass a slice they own. Authenticators build their responses
// with it, so that the group adder of the chain finds nothing to add and
// copies nothing.
func AddAuthenticated(name string, groups []string) []string {
	if !AddsAuthenticated(name, groups) {
		return groups
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
	if !AddsAuthenticated(resp.User.Name, resp.User.Groups) {
		return resp
	}
	out := *resp
	out.User.Groups = append(slices.Clip(resp.User.Groups), AllAuthenticated)
	return &out
}
