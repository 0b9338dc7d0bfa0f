package console

import "net/http"

// sessionUser is the user of a session answer.
type sessionUser struct {
	Username string              `json:"username"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// Views says which of the gateway's own views a user may open. The
// cluster and scheduling views read the Kubernetes API and are not
// listed: RBAC decides each of their requests.
type Views struct {
	// PKI is true for those who may get PKIViewPath.
	PKI bool `json:"pki"`
	// Requests is "all" for those who may get RequestsViewPath, who see
	// everyone's requests, else "own".
	Requests string `json:"requests"`
}

// Request stream scopes (Views.Requests).
const (
	AllRequests = "all"
	OwnRequests = "own"
)

type session struct {
	User          sessionUser `json:"user"`
	Authenticator string      `json:"authenticator"`
	Views         Views       `json:"views"`
}

// views asks the Authorizer, for this request only, which views id may
// open.
func (c *Console) views(r *http.Request, id Identity) Views {
	v := Views{Requests: OwnRequests}
	v.PKI, _ = c.allowed(r, id, PKIViewPath)
	if ok, _ := c.allowed(r, id, RequestsViewPath); ok {
		v.Requests = AllRequests
	}
	return v
}

func (c *Console) serveSession(w http.ResponseWriter, r *http.Request, id Identity) string {
	groups := id.User.Groups
	if groups == nil {
		groups = []string{}
	}
	writeJSON(w, session{
		User:          sessionUser{Username: id.User.Name, UID: id.User.UID, Groups: groups, Extra: id.User.Extra},
		Authenticator: id.Authenticator,
		Views:         c.views(r, id),
	})
	return ""
}
