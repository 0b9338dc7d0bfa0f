package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/internal/testpki"
)

func TestUpstreamEndpointsAreForwarded(t *testing.T) {
	forEachProtocol(t, testUpstreamEndpointsAreForwarded)
}

// testUpstreamEndpointsAreForwarded checks that the API server's own
// health and metrics paths reach the upstream with the caller's identity,
// and are not answered by the gateway.
func testUpstreamEndpointsAreForwarded(t *testing.T, proto string) {
	e := newEnv(t, envOptions{proto: proto, metricsAuthz: allowUsers("alice")})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	for _, p := range []string{"/metrics", "/healthz", "/livez", "/readyz", "/readyz/ping"} {
		before := e.up.count()
		resp, body := e.do(t, e.client(alice), "GET", p, nil)
		if resp.StatusCode != http.StatusOK || e.up.count() != before+1 {
			t.Fatalf("GET %s: status %d, upstream requests %d→%d; want 200 from the upstream (body %s)", p, resp.StatusCode, before, e.up.count(), body)
		}
		if last := e.up.last(t); last.path != p || last.header.Get("X-Remote-User") != "alice" {
			t.Errorf("GET %s: upstream saw %s as %q, want %s as alice", p, last.path, last.header.Get("X-Remote-User"), p)
		}
		resp, body = e.do(t, e.client(nil), "GET", p, nil)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("anonymous GET %s: %d %s, want 401 as for any forwarded request", p, resp.StatusCode, body)
		}
	}
}

func TestGatewayMetricsNeedAuthorization(t *testing.T) {
	forEachProtocol(t, testGatewayMetricsNeedAuthorization)
}

func testGatewayMetricsNeedAuthorization(t *testing.T, proto string) {
	e := newEnv(t, envOptions{proto: proto, metricsAuthz: allowUsers("alice")})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	bob := e.clientCA.Issue(t, testpki.Options{CN: "bob"})
	before := e.up.count()

	resp, body := e.do(t, e.client(nil), "GET", "/kubegate/metrics", nil)
	wantUnauthorized(t, resp, body)
	resp, body = e.do(t, e.client(bob), "GET", "/kubegate/metrics", nil)
	if resp.StatusCode != http.StatusForbidden || !bytes.Contains(body, []byte(`cannot get path \"/metrics\"`)) {
		t.Errorf("bob: %d %s, want 403 naming the path", resp.StatusCode, body)
	}
	resp, body = e.do(t, e.client(alice), "GET", "/kubegate/metrics", nil)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("kubegate_gateway_requests_total")) {
		t.Errorf("alice: %d, want 200 with the gateway's metrics; body:\n%.300s", resp.StatusCode, body)
	}
	if e.up.count() != before {
		t.Errorf("the upstream got %d requests for /kubegate/metrics, want none", e.up.count()-before)
	}

	// Without an authorizer nobody may read them.
	e = newEnv(t, envOptions{proto: proto})
	alice = e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	resp, body = e.do(t, e.client(alice), "GET", "/kubegate/metrics", nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("no authorizer: %d %s, want 403", resp.StatusCode, body)
	}
}

// TestSubjectAccessReviewerNonResource checks the review sent for a
// non-resource path and that it names the gateway in request-header
// mode.
func TestSubjectAccessReviewerNonResource(t *testing.T) {
	var got authorizationv1.SubjectAccessReview
	var asUser string
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		asUser = r.Header.Get("X-Remote-User")
		if r.Method != http.MethodPost || r.URL.Path != "/apis/authorization.k8s.io/v1/subjectaccessreviews" {
			t.Errorf("request %s %s, want a POST of a SubjectAccessReview", r.Method, r.URL.Path)
		}
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		out := got
		out.Status.Allowed = got.Spec.User == "alice"
		b, _ := json.Marshal(out)
		return &http.Response{StatusCode: http.StatusCreated, Body: io.NopCloser(bytes.NewReader(b)), Header: http.Header{}}, nil
	})
	up, _ := url.Parse("https://upstream.example")
	for _, tt := range []struct {
		identity UpstreamIdentity
		user     string
		want     bool
		wantAs   string
	}{
		{RequestHeaderIdentity, "alice", true, LookupUser},
		{RequestHeaderIdentity, "bob", false, LookupUser},
		{ImpersonateIdentity, "alice", true, ""},
	} {
		s := newReviewer(t, up, rt, tt.identity)
		u := &authn.User{Name: tt.user, Groups: []string{"devs"}}
		d, _, err := s.Authorize(context.Background(), authz.Attributes{User: *u, Verb: "get", Path: "/metrics"})
		if allowed := d == authz.Allow; err != nil || allowed != tt.want {
			t.Errorf("%s %s: allowed %v, %v; want %v", tt.identity, tt.user, allowed, err, tt.want)
		}
		if a := got.Spec.NonResourceAttributes; a == nil || a.Verb != "get" || a.Path != "/metrics" || got.Spec.ResourceAttributes != nil ||
			got.Spec.User != tt.user || len(got.Spec.Groups) != 1 {
			t.Errorf("%s %s: review spec %+v, want get /metrics for the user", tt.identity, tt.user, got.Spec)
		}
		if asUser != tt.wantAs {
			t.Errorf("%s: X-Remote-User %q, want %q", tt.identity, asUser, tt.wantAs)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestReadinessProbeCarriesTheGatewayIdentity(t *testing.T) {
	forEachProtocol(t, testReadinessProbeCarriesTheGatewayIdentity)
}

// testReadinessProbeCarriesTheGatewayIdentity runs the gateway's
// readiness probe against an upstream that, as kube-apiserver without
// anonymous access, refuses /readyz to a request without an identity.
func testReadinessProbeCarriesTheGatewayIdentity(t *testing.T, proto string) {
	for _, tt := range []struct {
		identity UpstreamIdentity
		wantUser string
	}{
		{RequestHeaderIdentity, LookupUser},
		{ImpersonateIdentity, ""},
	} {
		t.Run(string(tt.identity), func(t *testing.T) {
			e := newEnv(t, envOptions{proto: proto, identity: tt.identity})
			e.up.handler = func(w http.ResponseWriter, r *http.Request) {
				// The impersonate-mode credential is the client certificate
				// the test upstream requires in either mode.
				if tt.identity == RequestHeaderIdentity && r.Header.Get("X-Remote-User") == "" {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				_, _ = io.WriteString(w, "ok")
			}
			resp, body := e.do(t, e.client(nil), "GET", "/kubegate/readyz", nil)
			if resp.StatusCode != http.StatusOK || string(body) != "ok" {
				t.Fatalf("/kubegate/readyz: %d %q, want 200 ok", resp.StatusCode, body)
			}
			last := e.up.last(t)
			if last.path != "/readyz" || last.header.Get("X-Remote-User") != tt.wantUser || last.header.Get("Impersonate-User") != "" {
				t.Errorf("probe reached the upstream as %s X-Remote-User=%q Impersonate-User=%q, want /readyz as %q",
					last.path, last.header.Get("X-Remote-User"), last.header.Get("Impersonate-User"), tt.wantUser)
			}
		})
	}
}
