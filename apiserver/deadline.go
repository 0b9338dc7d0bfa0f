package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	genericfilters "k8s.io/apiserver/pkg/server/filters"

	"github.com/kubegate/kubegate/authz"
)

// longRunning reports whether a request has no deadline, as kube-apiserver
// decides it: watches and proxies, and the attach, exec, log, portforward
// and proxy subresources (J.4).
func longRunning(ri *authz.RequestInfo) bool {
	switch ri.Verb {
	case "watch", "proxy":
		return true
	}
	if !ri.IsResourceRequest {
		return false
	}
	switch ri.Subresource {
	case "attach", "exec", "log", "portforward", "proxy":
		return true
	}
	return false
}

// deadlineGrace is how long a handler may run past its request's deadline,
// so that the timeout filter, not the handler's own error at the same
// instant, answers the request; the handler's writes after the deadline are
// dropped.
const deadlineGrace = time.Second

// writeTimeout bounds a create, update, patch or delete on its own, as
// kube-apiserver's write handlers do; one that runs out is answered by the
// handler, with storeErr's 504 (J.4).
const writeTimeout = 34 * time.Second

func writeVerb(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete":
		return true
	}
	return false
}

// withGrace gives next the request's deadline plus deadlineGrace. A
// request its client abandons is cancelled at once.
func withGrace(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		deadline, ok := ctx.Deadline()
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		graced, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline.Add(deadlineGrace))
		defer cancel()
		if ri, _ := authz.RequestInfoFrom(ctx); ri != nil && writeVerb(ri.Verb) {
			var cancelWrite context.CancelFunc
			graced, cancelWrite = context.WithTimeout(graced, writeTimeout)
			defer cancelWrite()
		}
		stop := context.AfterFunc(ctx, func() {
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				cancel()
			}
		})
		defer stop()
		next.ServeHTTP(w, r.WithContext(graced))
	})
}

// errRequestTimeout is kube-apiserver's answer to a request past its
// deadline.
var errRequestTimeout = apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0)

// withRequestDeadline gives each request that is not long-running a
// deadline: the request timeout, or the client's ?timeout= when shorter. A
// request still running at its deadline is answered with kube's 504 by
// k8s.io/apiserver's own timeout filter, and its handler's later writes
// are dropped; a ?timeout= that is not a duration is kube's 400 (J.4).
func (s *Server) withRequestDeadline(next http.Handler) http.Handler {
	limit := s.cfg.RequestTimeout
	if limit == 0 {
		limit = DefaultRequestTimeout
	}
	if limit < 0 {
		return next
	}
	timed := genericfilters.WithTimeout(withGrace(next), func(r *http.Request) (*http.Request, bool, func(), *apierrors.StatusError) {
		return r, false, func() {}, errRequestTimeout
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri, _ := authz.RequestInfoFrom(r.Context())
		if ri == nil || longRunning(ri) {
			next.ServeHTTP(w, r)
			return
		}
		d := limit
		if v := r.URL.Query().Get("timeout"); v != "" {
			t, err := time.ParseDuration(v)
			if err != nil {
				s.writeErr(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid timeout specified in the request URL - %v", err)))
				return
			}
			if t > 0 && t < d {
				d = t
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		timed.ServeHTTP(w, r.WithContext(ctx))
	})
}
