package apiserver

import (
	"context"

	"github.com/google/uuid"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

// LoopbackUserName is the identity of the server's own clients, as
// kube-apiserver's loopback client has it: the admission plugins' and the
// API server's controllers' informers and writes.
const LoopbackUserName = "system:apiserver"

// loopbackKey marks a request's context as the server's own.
type loopbackKey struct{}

// loopbackUser is made once per process: kube-apiserver gives its loopback
// identity a fresh UID at each start.
var loopbackUser = authn.User{Name: LoopbackUserName, UID: uuid.NewString(),
	Groups: []string{authz.SystemMasters, "system:authenticated"}}

// WithLoopback marks ctx as a request the process makes to its own API
// server. A request whose context carries the mark is authenticated as
// LoopbackUserName in the system:masters group without a credential. The
// mark lives only in a context value of this package: a client outside
// the process has no header, certificate or token that sets it, and only
// a transport that calls the handler in process (apiserver/server's
// loopback configuration) can pass it on.
func WithLoopback(ctx context.Context) context.Context {
	return context.WithValue(ctx, loopbackKey{}, true)
}

// loopbackFrom returns the loopback identity of a request marked by
// WithLoopback.
func loopbackFrom(ctx context.Context) (*authn.Response, bool) {
	if v, _ := ctx.Value(loopbackKey{}).(bool); !v {
		return nil, false
	}
	return &authn.Response{User: loopbackUser, Authenticator: "loopback"}, true
}
