package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

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
// default of 5 a second would queue. The lookups and reviews read only
// answers of a bounded size, and are judged on their HTTP status
// (upstreamAnswer).
func NewUpstreamClient(upstream *url.URL, rt http.RoundTripper, identity UpstreamIdentity) (kubernetes.Interface, error) {
	if err := checkUpstreamURL(upstream); err != nil {
		return nil, fmt.Errorf("upstream %q %w", upstream.Redacted(), err)
	}
	cfg := &rest.Config{Host: upstream.String(), QPS: -1}
	hc := &http.Client{
		Transport:     lookupTransport{rt: rt, identity: identity, userAgent: rest.DefaultKubernetesUserAgent()},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return kubernetes.NewForConfigAndClient(cfg, hc)
}

// checkUpstreamURL refuses what an upstream URL may not carry: a user
// name or password, which Go's HTTP client would send as Basic
// authentication on the gateway's own requests (the gateway speaks with
// its client certificate), and a query, which client-go drops. The URL
// of a server in a kubeconfig carries neither.
func checkUpstreamURL(u *url.URL) error {
	switch {
	case u.User != nil:
		return errors.New("has a user name or password: leave them out, the gateway speaks with its client certificate")
	case u.RawQuery != "" || u.ForceQuery:
		return errors.New("has a query: leave it out, the gateway's own requests could not carry it")
	}
	return nil
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
	resp, err := t.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if a, ok := r.Context().Value(answerKey{}).(*upstreamAnswer); ok {
		a.code = resp.StatusCode
		left := a.limit + 1
		if resp.ContentLength > a.limit {
			left = 0
		}
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: left}
	}
	return resp, nil
}

// upstreamAnswer is what the transport saw of the answer to one lookup
// or review, made with a context from withAnswer. The gateway judges the
// answer on its HTTP status, code, which client-go's Result does not
// keep: it names the code of a Status body instead, which the upstream
// may leave out or set to anything, and no status at all when the
// Content-Type does not parse. Its errors name that status only, never
// client-go's error text, which quotes what the upstream sent.
type upstreamAnswer struct {
	// limit is the size of body read; reading more fails with
	// errAnswerTooLarge.
	limit int64
	// code is the HTTP status; 0 until an answer arrives.
	code int
}

type answerKey struct{}

// withAnswer returns ctx for a request whose answer a records.
func withAnswer(ctx context.Context, a *upstreamAnswer) context.Context {
	return context.WithValue(ctx, answerKey{}, a)
}

// errAnswerTooLarge is the read error of a body larger than its answer's
// limit.
var errAnswerTooLarge = errors.New("upstream answer too large")

// failure returns the error of an answer whose status is not one the
// request wants, or of no answer (err, from client-go).
func (a *upstreamAnswer) failure(err error) error {
	switch {
	case a.code != 0:
		return fmt.Errorf("upstream answered %d", a.code)
	case err != nil:
		// No answer: the request or the connection failed.
		return err
	}
	return errors.New("no answer recorded: the clientset is not NewUpstreamClient's")
}

// undecodable returns the error of an answer of a wanted status whose
// body did not decode into the object (err, from client-go).
func (a *upstreamAnswer) undecodable(err error) error {
	if errors.Is(err, errAnswerTooLarge) {
		return fmt.Errorf("upstream answered %d with more than %d MiB", a.code, a.limit>>20)
	}
	return fmt.Errorf("upstream answered %d with a body that does not decode", a.code)
}

// cappedBody fails a read past its last left-1 bytes.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errAnswerTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left <= 0 {
		return n, errAnswerTooLarge
	}
	return n, err
}
