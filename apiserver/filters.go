package apiserver

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

// Log attribute keys.
const (
	logRequestID = "request_id"
	logUser      = "user"
	logMethod    = "method"
	logPath      = "path"
	logStatus    = "status"
	logDuration  = "duration"
)

// statusWriter records the status code and keeps the Flusher and Hijacker
// of the ResponseWriter it wraps reachable.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := w.ResponseWriter.(http.Hijacker); ok {
		return h.Hijack()
	}
	return nil, nil, errors.New("response writer does not support hijacking")
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// withRequestLog gives each request an Audit-ID, sets Cache-Control as
// kube-apiserver does, and logs the request at debug level when it ends.
func (s *Server) withRequestLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("Audit-ID")
		if id == "" {
			id = uuid.NewString()
		}
		w.Header().Set("Audit-ID", id)
		w.Header().Set("Cache-Control", "no-cache, private")
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if s.log.Enabled(r.Context(), -4) {
			u, _ := authn.UserFrom(r.Context())
			s.log.Debug("request", logRequestID, id, logMethod, r.Method, logPath, r.URL.Path,
				logUser, u.Name, logStatus, sw.code, logDuration, time.Since(start))
		}
	})
}

// withRecovery turns a handler panic into a 500 Status.
func (s *Server) withRecovery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("handler panic", logMethod, r.Method, logPath, r.URL.Path, "panic", v)
				s.writeErr(w, r, fmt.Errorf("handler panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// withRequestInfo derives the request's attributes from its path.
func (s *Server) withRequestInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri, err := authz.NewRequestInfo(r)
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(authz.WithRequestInfo(r.Context(), ri)))
	})
}

// withAuthentication answers 401 unless the authenticator accepts the
// request, and once it has removes the credential and every identity
// header, so that nothing after it sees what the client sent (A.4).
func (s *Server) withAuthentication(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if resp, ok := loopbackFrom(r.Context()); ok {
			authn.ClearIdentityHeaders(r.Header, s.cfg.IdentityHeaders...)
			next.ServeHTTP(w, r.WithContext(authn.WithResponse(r.Context(), resp)))
			return
		}
		resp, ok, err := s.cfg.Authenticator.AuthenticateRequest(r)
		if err != nil || !ok {
			if err != nil {
				s.log.Debug("authentication failed", logPath, r.URL.Path, "err", err)
			}
			s.writeErr(w, r, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		authn.ClearIdentityHeaders(r.Header, s.cfg.IdentityHeaders...)
		next.ServeHTTP(w, r.WithContext(authn.WithResponse(r.Context(), resp)))
	})
}

// withImpersonation authorizes Impersonate-* headers and makes the request
// run as the impersonated user.
func (s *Server) withImpersonation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		im, ok, err := authz.ParseImpersonation(r.Header)
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		resp, _ := authn.ResponseFrom(r.Context())
		if !s.cfg.Impersonation {
			s.writeErr(w, r, apierrors.NewForbidden(schema.GroupResource{Resource: "users"}, im.User, errors.New("impersonation is not enabled on this server")))
			return
		}
		user, err := authz.Impersonate(r.Context(), s.cfg.Authorizer, resp.User, im)
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		authz.DeleteImpersonationHeaders(r.Header)
		ctx := authn.WithResponse(r.Context(), &authn.Response{User: user, Authenticator: resp.Authenticator})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// withAuthorization asks the authorizer about the request: 403 unless
// allowed, 500 when it fails without allowing.
func (s *Server) withAuthorization(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri, _ := authz.RequestInfoFrom(r.Context())
		u, _ := authn.UserFrom(r.Context())
		attrs := ri.Attributes(u)
		decision, reason, err := s.cfg.Authorizer.Authorize(r.Context(), attrs)
		if decision == authz.Allow {
			next.ServeHTTP(w, r)
			return
		}
		if err != nil {
			s.log.Error("authorization failed", logPath, r.URL.Path, "err", err)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "Internal Server Error: %q: %v", r.RequestURI, err)
			return
		}
		s.writeErr(w, r, authz.Forbidden(attrs, reason))
	})
}
