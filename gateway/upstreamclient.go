package gateway

import (
	"errors"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/authn"
)

// NewUpstreamClient returns the clientset of the gateway's own requests
// to its upstream: the service-account lookups (UpstreamGetter), the
// SubjectAccessReviews (SubjectAccessReviewer) and the watch of
// bootstrap token Secrets (NewBootstrapSecrets). Build it once, on rt,
// the transport that carries client requests upstream, so that it has
// the same TLS configuration and client certificate. It speaks as the
// gateway: in RequestHeaderIdentity mode (and zero) every request
// carries X-Remote-User: LookupUser over the front-proxy certificate; in
// ImpersonateIdentity mode none does, and the transport's own credential
// speaks. It follows no redirects, so that the gateway's credential goes
// nowhere but to the upstream, and has no client-side rate limit: the
// lookups and reviews are made for client requests, which client-go's
// default of 5 a second would queue.
func NewUpstreamClient(upstream *url.URL, rt http.RoundTripper, identity UpstreamIdentity) (kubernetes.Interface, error) {
	cfg := &rest.Config{Host: upstream.String(), QPS: -1}
	hc := &http.Client{
		Transport:     lookupTransport{rt: rt, identity: identity, userAgent: rest.DefaultKubernetesUserAgent()},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return kubernetes.NewForConfigAndClient(cfg, hc)
}

// lookupTransport sends the gateway's own requests to the upstream under
// its lookup identity: X-Remote-User over the front-proxy certificate, or
// the transport's own credential in impersonate mode. It also names the
// client, as client-go's own wrapper would, in the same copy of the
// request.
type lookupTransport struct {
	rt        http.RoundTripper
	identity  UpstreamIdentity
	userAgent string
}

func (t lookupTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", t.userAgent)
	}
	if t.identity != ImpersonateIdentity {
		r.Header.Set(authn.RemoteUserHeader, LookupUser)
	}
	return t.rt.RoundTrip(r)
}

// upstreamStatus returns the HTTP status of an answer client-go turned
// into err, or 0 when err is not an answer (a failed connection, a body
// that does not decode). The gateway's errors name the status only:
// client-go's error text can quote what the upstream sent.
func upstreamStatus(err error) int {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return int(se.Status().Code)
	}
	return 0
}
