package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegate/kubegate/authn"
	jwtauthn "github.com/kubegate/kubegate/authn/jwt"
	"github.com/kubegate/kubegate/console"
	"github.com/kubegate/kubegate/gateway/internal/h1"
)

// The web console (docs/architecture.md, "The web console"): its files
// are served to anyone, its endpoints under the request policy like any
// other request, and every request the gateway finishes, on any serving
// path, is published to its feed by record.

// routeConsole adds the console's routes to r.
func (g *Gateway) routeConsole(r interface {
	Handle(string, http.Handler)
}) {
	c := g.cfg.Console
	static := http.HandlerFunc(c.ServeStatic)
	r.Handle("/kubegate/ui", static)
	r.Handle(console.Prefix+"*", static)
	r.Handle(console.APIPrefix+"*", console.Headers(g.authenticated(g.serveConsole)))
}

// serveConsole serves an admitted request for the console's endpoints,
// as the identity the request acts as.
func (g *Gateway) serveConsole(w http.ResponseWriter, r *http.Request, st *reqState) {
	if reason := g.cfg.Console.ServeAPI(w, r, console.Identity{User: *st.target, Authenticator: st.resp.Authenticator}); reason != "" {
		st.reason = reason
	}
}

// publish hands a finished request to the console's feed.
func (g *Gateway) publish(code int, method, path string, st *reqState) {
	rec := console.Record{
		Time: st.start, RequestID: st.id, Authenticator: st.authenticator(), Issuer: st.issuer,
		Method: method, Path: path, RawQuery: st.query, Status: code, Reason: st.reason,
		User: st.target,
	}
	g.feed.Publish(&rec)
}

// noteAdmission keeps, for the feed, what admit learnt of r: its query,
// the issuer of a JWT, and why authentication failed, never with the
// credential in it. authorization is the Authorization header as it
// came, which authentication deletes.
func (g *Gateway) noteAdmission(r *http.Request, authorization string, st *reqState, err error) {
	st.query = r.URL.RawQuery
	if st.resp != nil && st.resp.Authenticator == jwtauthn.Name {
		st.issuer = tokenIssuer(authorization)
	}
	if st.refusal == nil || st.refusal.code != http.StatusUnauthorized {
		return
	}
	switch {
	case err == nil:
		st.reason = "no credential was presented, and anonymous requests are not allowed"
	case leaksCredential(authorization, err.Error()):
		st.reason = "the credential was refused"
	default:
		st.reason = err.Error()
	}
}

// leaksCredential reports whether msg holds the bearer token or a part
// of it: authenticators' errors do not, and this makes sure.
func leaksCredential(authorization, msg string) bool {
	tok, ok := authn.BearerToken(authorization)
	if !ok || tok == "" {
		return false
	}
	if strings.Contains(msg, tok) {
		return true
	}
	for part := range strings.SplitSeq(tok, ".") {
		if len(part) >= 8 && strings.Contains(msg, part) {
			return true
		}
	}
	return false
}

// tokenIssuer reads the iss claim of the request's JWT, which the
// authenticator has verified: the issuer only, never the token.
func tokenIssuer(authorization string) string {
	tok, ok := authn.BearerToken(authorization)
	if !ok {
		return ""
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Iss string `json:"iss"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	return claims.Iss
}

// keepRefusal reads the body of the upstream's 403 answer resp, up to
// h1.MaxRefusalBody bytes, for the feed's reason, and gives the client
// the same bytes.
func keepRefusal(resp *http.Response, st *reqState) {
	if resp.StatusCode != http.StatusForbidden || resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, h1.MaxRefusalBody))
	resp.Body = readCloser{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	if err == nil || len(b) > 0 {
		st.reason = statusMessage(b)
	}
}

type readCloser struct {
	io.Reader
	io.Closer
}

// protobufPrefix starts kube's protobuf envelope.
var protobufPrefix = []byte("k8s\x00")

// statusMessage returns the message of a Status body in JSON or in
// kube's protobuf envelope; "" when b is neither.
func statusMessage(b []byte) string {
	var s metav1.Status
	if rest, ok := bytes.CutPrefix(b, protobufPrefix); ok {
		var u runtime.Unknown
		if u.Unmarshal(rest) != nil || s.Unmarshal(u.Raw) != nil {
			return ""
		}
		return s.Message
	}
	if json.Unmarshal(b, &s) != nil {
		return ""
	}
	return s.Message
}
