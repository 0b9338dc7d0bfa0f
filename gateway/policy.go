package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	x509authn "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/ca"
)

// The request policy. Every serving path (net/http with
// httputil.ReverseProxy, and the HTTP/1.1 fast path) asks it the same two
// questions of each request and only renders the answers:
//
//   - admit: which request is this (its ID), who sent it (revocation,
//     authentication, impersonation), and may it go on? The answer is a
//     reqState holding either the identity to forward or the refusal to
//     send back.
//   - outbound: exactly which header lines go upstream?
//
// and reports how the request ended to record, which feeds the metrics
// and the audit line. Security tests call admit and outbound directly,
// and run every serving path end to end.

// refusal is an answer the gateway gives instead of forwarding: a status
// code and a metav1.Status body.
type refusal struct {
	code int
	body []byte
}

// admit decides whether r goes on, and as whom. r may come from any
// serving path; admit reads its header, TLS state and remote address
// only. In ImpersonateIdentity mode it also authorizes the client's own
// Impersonate-* headers, so that the identity forwarded is the one the
// client may act as.
func (g *Gateway) admit(r *http.Request) *reqState {
	st := &reqState{start: time.Now(), id: g.newRequestID(), clientID: clientRequestID(first(r.Header, "X-Request-Id"))}
	var authorization string
	if g.feed != nil {
		authorization = first(r.Header, "Authorization") // authentication deletes it
	}
	resp, ok, err := g.authenticate(r, st.start)
	g.metrics.authnLatency.Observe(time.Since(st.start).Seconds())
	if !ok {
		if err != nil {
			st.err = err
			g.log.Info("request not authenticated", "requestID", st.id, "remote", r.RemoteAddr, "error", err)
		}
		st.refusal = &refusal{http.StatusUnauthorized, unauthorizedBody}
		if g.feed != nil {
			g.noteAdmission(r, authorization, st, err)
		}
		return st
	}
	st.resp, st.target = resp, &resp.User
	if g.audit != nil && resp.Authenticator == x509authn.Name && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		st.certSerial = ca.SerialHex(r.TLS.PeerCertificates[0])
	}
	if g.cfg.Identity == ImpersonateIdentity {
		g.impersonate(r, st)
	}
	if g.feed != nil {
		g.noteAdmission(r, authorization, st, nil)
	}
	return st
}

// impersonate authorizes the Impersonate-* headers of r, if any, for the
// authenticated user of st, as kube-apiserver's impersonation filter
// does (A.6), and makes the impersonated user st's target; or it refuses
// the request with kube-apiserver's 400 or 403.
func (g *Gateway) impersonate(r *http.Request, st *reqState) {
	im, ok, err := authz.ParseImpersonation(r.Header)
	switch {
	case err != nil:
		st.refuseWith(err, http.StatusBadRequest)
		return
	case !ok:
		return
	}
	az := g.cfg.Impersonation
	if az == nil {
		az = authz.AuthorizerFunc(func(_ context.Context, _ authz.Attributes) (authz.Decision, string, error) {
			return authz.NoOpinion, "impersonation is not enabled on this gateway", nil
		})
	}
	u, err := authz.Impersonate(r.Context(), az, st.resp.User, im)
	if err != nil {
		st.refuseWith(err, http.StatusForbidden)
		return
	}
	if err := forwardable(&u); err != nil {
		st.refuseWith(err, http.StatusBadRequest)
		return
	}
	st.target = &u
}

// refuseWith refuses the request with err's Status when it carries one,
// else with code and err's text.
func (st *reqState) refuseWith(err error, code int) {
	st.err = err
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		s := se.Status()
		st.refusal = &refusal{int(s.Code), statusBody(s.Code, s.Reason, s.Message)}
		st.reason = s.Message
		return
	}
	st.reason = err.Error()
	reason := metav1.StatusReasonBadRequest
	if code == http.StatusForbidden {
		reason = metav1.StatusReasonForbidden
	}
	st.refusal = &refusal{code, statusBody(int32(code), reason, err.Error())}
}

// hopByHop are the headers that describe one connection, not the
// request, and never go upstream as the client sent them (RFC 9110
// section 7.6.1), besides those the client names in Connection.
var hopByHop = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// outbound returns the header set that goes upstream for a client
// request with header in from remoteAddr, admitted as st: the client's
// headers without the hop-by-hop ones, the forwarding headers, Expect,
// Host, credentials and every identity header (scrubber), then
// X-Forwarded-For, X-Request-Id and the identity to forward, in the
// configured mode. A protocol upgrade keeps Connection: Upgrade and its
// Upgrade header, and a client that accepts trailers says so with
// TE: trailers, as httputil.ReverseProxy does. in is not modified.
func (g *Gateway) outbound(in http.Header, remoteAddr string, st *reqState) http.Header {
	out := make(http.Header, len(in)+4)
	for k, vs := range in {
		if !g.scrub.matches(k) {
			out[k] = vs
		}
	}
	for _, vs := range in["Connection"] {
		for tok := range strings.SplitSeq(vs, ",") {
			if tok = textproto.TrimString(tok); tok != "" {
				out.Del(tok)
			}
		}
	}
	for _, k := range hopByHop {
		delete(out, k)
	}
	for _, k := range []string{"Host", "Expect", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Request-Id"} {
		delete(out, k)
	}
	if httpguts.HeaderValuesContainsToken(in["Te"], "trailers") {
		out["Te"] = []string{"trailers"}
	}
	if up := upgradeType(in); up != "" {
		out["Connection"] = []string{"Upgrade"}
		out["Upgrade"] = []string{up}
	}
	// The client's address, which kube-apiserver records as the source
	// IP in its audit log. X-Forwarded-Host and -Proto are not sent: the
	// upstream has no use for them.
	vals := []string{st.id, ""}
	out["X-Request-Id"] = vals[0:1:1]
	if ip, _, err := net.SplitHostPort(remoteAddr); err == nil {
		vals[1] = ip
		out["X-Forwarded-For"] = vals[1:2:2]
	}
	switch g.cfg.Identity {
	case ImpersonateIdentity:
		authz.DeleteImpersonationHeaders(out)
		setImpersonation(out, st.target)
	default:
		// The client's own Impersonate-* headers pass through: the
		// upstream authorizes them for the user named here.
		setRemoteIdentity(out, st.target)
	}
	return out
}

// upgradeType returns the protocol a request asks to switch to, or "".
func upgradeType(h http.Header) string {
	if !httpguts.HeaderValuesContainsToken(h["Connection"], "Upgrade") {
		return ""
	}
	return h.Get("Upgrade")
}
