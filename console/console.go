// Package console serves kubegate's web console at /kubegate/ui/ on the
// gateway (docs/architecture.md, "The web console"): the browser files
// of package console/ui, to anyone, as they hold no cluster data, and
// three JSON endpoints under /kubegate/ui/api/ to authenticated users
// only: session (who the user is and which views they may open), pki
// (the cluster's certificates, without a key or token) and requests (the
// gateway's requests as they end, from a Feed).
//
// The package never authenticates: the gateway does, and calls ServeAPI
// with the identity. Every answer carries the same security headers
// (SetHeaders), the refusals included.
package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/console/ui"
)

// Paths the console is served at.
const (
	// Prefix is where the console lives; the browser files are served
	// under it without authentication.
	Prefix = "/kubegate/ui/"
	// APIPrefix is where its endpoints live, behind authentication.
	APIPrefix = Prefix + "api/"
	// RequestsPath is the request stream, which the feed leaves out of
	// itself.
	RequestsPath = APIPrefix + "requests"
)

// The non-resource paths a SubjectAccessReview asks about for the views
// (docs/architecture.md, "The web console").
const (
	PKIViewPath      = "/kubegate/ui/pki"
	RequestsViewPath = "/kubegate/ui/requests"
)

// contentSecurityPolicy allows the console's own files and nothing else:
// no inline script or style, no other origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// SetHeaders sets the security headers every answer under Prefix
// carries.
func SetHeaders(h http.Header) {
	h["Content-Security-Policy"] = []string{contentSecurityPolicy}
	h["X-Content-Type-Options"] = []string{"nosniff"}
	h["Referrer-Policy"] = []string{"no-referrer"}
	h["X-Frame-Options"] = []string{"DENY"}
}

// Headers wraps next so that its answers carry the security headers
// (SetHeaders) and, under APIPrefix, Cache-Control: no-store, whoever
// writes them: the gateway's refusals as well as the console.
func Headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetHeaders(w.Header())
		if strings.HasPrefix(r.URL.Path, APIPrefix) {
			w.Header()["Cache-Control"] = []string{"no-store"}
		}
		next.ServeHTTP(w, r)
	})
}

// Config configures a Console.
type Config struct {
	// Authorizer answers the views' SubjectAccessReviews (get on
	// PKIViewPath and RequestsViewPath); nil allows neither view.
	Authorizer authz.Authorizer
	// PKIDir is the cluster directory of the PKI view, in kubeadm's
	// layout (DIR/pki, DIR/*.conf); "" means no PKI view.
	PKIDir string
	// Feed is the requests the stream shows; nil means an empty stream.
	Feed *Feed
	// Static holds the browser files at its root; nil means
	// console/ui's static/ directory.
	Static fs.FS
	// Logger logs failed authorization checks; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of the PKI view's remaining times; nil means
	// time.Now.
	Now func() time.Time
}

// Identity is who an API request comes from, as the gateway
// authenticated it.
type Identity struct {
	User          authn.User
	Authenticator string
}

// Console serves the web console.
type Console struct {
	cfg    Config
	static fs.FS
}

// New returns a Console for c.
func New(c Config) (*Console, error) {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	static := c.Static
	if static == nil {
		sub, err := fs.Sub(ui.Static, "static")
		if err != nil {
			return nil, err
		}
		static = sub
	}
	return &Console{cfg: c, static: static}, nil
}

// Feed returns the console's request feed; nil when it has none.
func (c *Console) Feed() *Feed { return c.cfg.Feed }

// ServeStatic serves the browser files under Prefix to anyone: they are
// the same for everyone and hold no cluster data. Only files of Static
// are served, never a directory listing; Prefix itself is index.html.
func (c *Console) ServeStatic(w http.ResponseWriter, r *http.Request) {
	SetHeaders(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header()["Allow"] = []string{"GET, HEAD"}
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "the console's files are read with GET")
		return
	}
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	rel, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
		return
	}
	// path.Clean on a rooted path cannot climb above the root, and
	// fs.FS refuses any name with "..", so nothing outside Static is
	// reachable.
	name := strings.TrimPrefix(path.Clean("/"+rel), "/")
	if name == "" || strings.HasSuffix(rel, "/") {
		name = path.Join(name, "index.html")
	}
	data, err := fs.ReadFile(c.static, name)
	if err != nil {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header()["Content-Type"] = []string{ct}
	w.Header()["Cache-Control"] = []string{"no-cache"}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

// ServeAPI serves an authenticated request under APIPrefix from id. It
// returns the message of a 403 it answered, for the request's record;
// "" otherwise.
func (c *Console) ServeAPI(w http.ResponseWriter, r *http.Request, id Identity) (refusal string) {
	SetHeaders(w.Header())
	w.Header()["Cache-Control"] = []string{"no-store"}
	name, _ := strings.CutPrefix(r.URL.Path, APIPrefix)
	var serve func(http.ResponseWriter, *http.Request, Identity) string
	switch name {
	case "session":
		serve = c.serveSession
	case "pki":
		serve = c.servePKI
	case "requests":
		serve = c.serveRequests
	default:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
		return ""
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header()["Allow"] = []string{"GET"}
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			r.Method+" is not allowed on "+r.URL.Path+": the console's endpoints are read with GET")
		return ""
	}
	return serve(w, r, id)
}

// allowed asks the Authorizer whether id may get the non-resource path
// p. A failed check allows nothing and is logged.
func (c *Console) allowed(r *http.Request, id Identity, p string) (bool, string) {
	if c.cfg.Authorizer == nil {
		return false, "the console's views are not enabled on this gateway"
	}
	d, reason, err := c.cfg.Authorizer.Authorize(r.Context(), authz.Attributes{User: id.User, Verb: "get", Path: p})
	if err != nil {
		c.cfg.Logger.Error("console authorization failed", "user", id.User.Name, "path", p, "error", err)
		return false, "authorization check failed"
	}
	return d == authz.Allow, reason
}

// forbid answers kube's 403 for a get of the non-resource path p, and
// returns its message.
func forbid(w http.ResponseWriter, id Identity, p, reason string) string {
	err := authz.Forbidden(authz.Attributes{User: id.User, Verb: "get", Path: p}, reason)
	s := err.Status()
	writeStatus(w, int(s.Code), s.Reason, s.Message)
	return s.Message
}

// writeJSON writes v as the answer's JSON body.
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "the answer could not be encoded")
		return
	}
	w.Header()["Content-Type"] = []string{"application/json"}
	_, _ = w.Write(append(b, '\n'))
}

// writeStatus writes a kube Status answer.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	b, err := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: message, Reason: reason, Code: int32(code),
	})
	if err != nil {
		panic(errors.New("console: a Status always encodes"))
	}
	w.Header()["Content-Type"] = []string{"application/json"}
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
