package authn

import (
	"net/http"
	pathpkg "path"
	"strings"
)

// AnonymousName is the Response.Authenticator of the anonymous user.
const AnonymousName = "anonymous"

// NewAnonymous returns a Request that authenticates every request as the
// anonymous user, in the unauthenticated group. Put it last, behind
// FailOnError, so that a request carrying a bad credential is refused
// instead of becoming anonymous.
func NewAnonymous() Request {
	return RequestFunc(func(*http.Request) (*Response, bool, error) { return anonymousResponse(), true, nil })
}

// NewAnonymousOnPaths is NewAnonymous limited to requests whose URL path
// is one of paths exactly, as the anonymous conditions of an
// authentication configuration file limit it (A.8); on other paths a
// request without credentials is not authenticated. No paths means every
// path.
func NewAnonymousOnPaths(paths []string) Request {
	if len(paths) == 0 {
		return NewAnonymous()
	}
	allowed := make(map[string]bool, len(paths))
	for _, p := range paths {
		allowed[p] = true
	}
	return RequestFunc(func(r *http.Request) (*Response, bool, error) {
		if !allowed[r.URL.Path] {
			return nil, false, nil
		}
		return anonymousResponse(), true, nil
	})
}

// HealthPaths returns the paths on which a server whose anonymous
// authentication is neither turned on nor off answers requests without
// credentials as the anonymous user, with the paths under them
// (NewAnonymousUnder; docs/kubernetes-behaviour.md, A.5): the health
// checks and the version, which kube's bootstrap policy lets
// system:unauthenticated read (system:public-info-viewer).
func HealthPaths() []string {
	return []string{"/healthz", "/livez", "/readyz", "/version"}
}

// NewAnonymousUnder is NewAnonymous limited to requests whose URL path is
// one of paths or lies under one ("/readyz" and "/readyz/etcd" for
// "/readyz", but not "/readyzz"); on other paths a request without
// credentials is not authenticated. No paths means every path.
func NewAnonymousUnder(paths []string) Request {
	if len(paths) == 0 {
		return NewAnonymous()
	}
	trees := make([]string, len(paths))
	for i, p := range paths {
		trees[i] = strings.TrimSuffix(p, "/")
	}
	return RequestFunc(func(r *http.Request) (*Response, bool, error) {
		if r.URL.RawPath != "" || !under(r.URL.Path, trees) {
			return nil, false, nil
		}
		return anonymousResponse(), true, nil
	})
}

// under reports whether path is one of trees or below one. A path that
// is not in its plain form (dot segments, doubled slashes; an escaped
// slash or dot is refused by the caller from the raw path) is under
// none: an upstream that cleans paths before it routes would otherwise
// serve "/readyz/../api" as "/api".
func under(path string, trees []string) bool {
	if c := pathpkg.Clean(path); c != path && c+"/" != path {
		return false
	}
	for _, t := range trees {
		if rest, ok := strings.CutPrefix(path, t); ok && (rest == "" || rest[0] == '/') {
			return true
		}
	}
	return false
}

// anonymousResponse returns a fresh response for the anonymous user, the
// caller's to change, made in one allocation.
func anonymousResponse() *Response {
	a := &struct {
		resp   Response
		groups [1]string
	}{groups: [1]string{AllUnauthenticated}}
	a.resp = Response{User: User{Name: Anonymous, Groups: a.groups[:]}, Authenticator: AnonymousName}
	return &a.resp
}
