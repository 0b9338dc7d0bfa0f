package aggregator

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"strings"

	"k8s.io/client-go/transport"

	"github.com/kubegate/kubegate/authn"
)

// redirectRefused is kube-aggregator's answer, a 502, when the remote
// server answers with a redirect (kube-apiserver's
// --aggregator-reject-forwarding-redirect, on by default).
const redirectRefused = "the backend attempted to redirect this request, which is not permitted"

// refuseRedirect puts the 502 in place of a redirect of the remote
// server: a client that followed it would send its request, and maybe
// its credential, wherever that server chose.
func refuseRedirect(resp *http.Response) error {
	if resp.StatusCode < 300 || resp.StatusCode > 399 || resp.Header.Get("Location") == "" {
		return nil
	}
	resp.Body.Close()
	*resp = http.Response{StatusCode: http.StatusBadGateway, Header: http.Header{},
		Body: io.NopCloser(strings.NewReader(redirectRefused)), ContentLength: int64(len(redirectRefused)),
		Request: resp.Request, Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor}
	return nil
}

// unavailable is kube-aggregator's answer when an APIService is not
// Available or its service has no ready endpoint: a plain-text 503.
const unavailable = "service unavailable"

// proxyHandler proxies the requests of one remote APIService, as
// kube-aggregator's proxy handler does.
type proxyHandler struct {
	remote   *remoteService
	resolver ServiceResolver
	log      *slog.Logger
}

func (p *proxyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rs := p.remote
	if !rs.available {
		http.Error(w, unavailable, http.StatusServiceUnavailable)
		return
	}
	if rs.rtErr != nil {
		http.Error(w, rs.rtErr.Error(), http.StatusInternalServerError)
		return
	}
	user, ok := authn.UserFrom(r.Context())
	if !ok {
		http.Error(w, "missing user", http.StatusInternalServerError)
		return
	}
	svc := rs.api.Spec.Service
	loc, err := p.resolver.ResolveEndpoint(svc.Namespace, svc.Name, *svc.Port)
	if err != nil {
		p.log.Debug("aggregator: no endpoint", "namespace", svc.Namespace, "service", svc.Name, "err", err)
		http.Error(w, unavailable, http.StatusServiceUnavailable)
		return
	}
	// The API server has removed the client's credential and identity
	// headers; the user it authenticated goes in X-Remote-*, over the
	// front-proxy client certificate. Go's ReverseProxy streams watches
	// as they come and carries upgrades (exec, attach, port-forward).
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "https", loc.Host
			pr.Out.Host = loc.Host
			transport.SetAuthProxyHeaders(pr.Out, user.Name, user.UID, user.Groups, user.Extra)
		},
		Transport:      rs.rt,
		FlushInterval:  -1,
		ModifyResponse: refuseRedirect,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.log.Debug("aggregator: proxy failed", "namespace", svc.Namespace, "service", svc.Name, "err", err)
			http.Error(w, unavailable, http.StatusServiceUnavailable)
		},
	}
	rp.ServeHTTP(w, r)
}
