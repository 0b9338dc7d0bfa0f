package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authz"
)

// The gateway's clientset sends one request for each lookup and review, as the
// hand-written requests before it did: an upstream answering 429 with a
// Retry-After (kube-apiserver's priority and fairness) refuses the
// client's request at once instead of holding it while client-go waits
// and asks again (A.3, A.6).
func TestUpstreamClientRefusesAt429WithoutRetrying_A3(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`))
	}))
	defer srv.Close()
	up, _ := url.Parse(srv.URL)

	g := newGetter(t, up, srv.Client().Transport, RequestHeaderIdentity, time.Hour)
	_, err := g.GetServiceAccount(context.Background(), "default", "builder")
	if err == nil || !strings.Contains(err.Error(), "upstream answered 429") {
		t.Errorf("lookup: %v, want the 429", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("lookup: %d requests, want 1", n)
	}

	requests.Store(0)
	s := newReviewer(t, up, srv.Client().Transport, RequestHeaderIdentity)
	d, _, err := s.Authorize(context.Background(), authz.Attributes{User: authn.User{Name: "alice"}, Verb: "get", Path: "/metrics"})
	if d != authz.NoOpinion || err == nil || !strings.Contains(err.Error(), "upstream answered 429") {
		t.Errorf("review: %v %v, want no opinion and the 429", d, err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("review: %d requests, want 1", n)
	}
}

// A redirect from the upstream is an answer, not a place to send the
// gateway's credential (A.3).
func TestUpstreamClientFollowsNoRedirect_A3(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		elsewhere.Add(1)
		_, _ = w.Write([]byte(`{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"uid":"forged"}}`))
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	up, _ := url.Parse(srv.URL)
	g := newGetter(t, up, http.DefaultTransport, RequestHeaderIdentity, time.Hour)
	sa, err := g.GetServiceAccount(context.Background(), "default", "builder")
	if err == nil || sa.UID != "" || !strings.Contains(err.Error(), "upstream answered 307") {
		t.Errorf("redirected lookup: %+v, %v; want the 307 as an error", sa, err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests, want none", n)
	}
}

// The clientset has no client-side rate limit: lookups and reviews are
// made for client requests, and queueing them behind client-go's default
// of 5 a second would hold those (A.3).
func TestUpstreamClientHasNoRateLimit_A3(t *testing.T) {
	up, _ := url.Parse("https://upstream.example")
	c := newUpstreamClient(t, up, http.DefaultTransport, RequestHeaderIdentity)
	for name, rc := range map[string]rest.Interface{
		"core/v1":          c.CoreV1().RESTClient(),
		"authorization/v1": c.AuthorizationV1().RESTClient(),
	} {
		if l := rc.GetRateLimiter(); l != nil {
			t.Errorf("%s: rate limiter %T, want none", name, l)
		}
	}
}

// A name or namespace that cannot be a path segment names no object: the
// lookup is "not found" without a request, and cannot reach another path
// (".." would name the namespace itself) (A.3).
func TestUpstreamGetterNamesThatAreNoObject_A3(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default","uid":"namespace-uid"}}`))
	}))
	defer srv.Close()
	up, _ := url.Parse(srv.URL)
	g := newGetter(t, up, srv.Client().Transport, RequestHeaderIdentity, time.Hour)
	ctx := context.Background()
	for _, tt := range []struct{ ns, name string }{
		{"default", ".."}, {"default", "."}, {"default", "a/b"}, {"default", "a%2Fb"}, {"default", ""},
		{"..", "builder"}, {"", "builder"}, {"a/b", "builder"},
	} {
		sa, err := g.GetServiceAccount(ctx, tt.ns, tt.name)
		if !errors.Is(err, serviceaccount.ErrNotFound) || sa.UID != "" {
			t.Errorf("service account %q/%q: %+v, %v; want not found", tt.ns, tt.name, sa, err)
		}
		s, err := g.GetSecret(ctx, tt.ns, tt.name)
		if !errors.Is(err, serviceaccount.ErrNotFound) || s.UID != "" {
			t.Errorf("secret %q/%q: %+v, %v; want not found", tt.ns, tt.name, s.Object, err)
		}
	}
	for _, name := range []string{"..", "", "a/b"} {
		if n, err := g.GetNode(ctx, name); !errors.Is(err, serviceaccount.ErrNotFound) || n.UID != "" {
			t.Errorf("node %q: %+v, %v; want not found", name, n, err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the upstream got %d requests, want none", n)
	}
}

// answeringUpstream answers every request with code, contentType (none
// when empty) and body, and remembers the last request's URL and
// Authorization header.
func answeringUpstream(t *testing.T, code int, contentType, body string) (*url.URL, http.RoundTripper, *atomic.Value) {
	t.Helper()
	var last atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		last.Store(r.URL.String() + " " + r.Header.Get("Authorization"))
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u, srv.Client().Transport, &last
}

// upstreamText is what an upstream's failure says; no error may repeat
// it.
const upstreamText = "TEXT-OF-THE-UPSTREAM"

// A lookup is judged on the answer's HTTP status, not on the code of a
// Status body, which the upstream may leave out or set to anything, nor
// on a Content-Type that does not parse: a 404 is "not found", a 200 the
// object, anything else a failure naming the status only; a 200 that
// does not decode into the object says so without the body's text
// (A.3).
func TestUpstreamGetterJudgesTheHTTPStatus_A3(t *testing.T) {
	t.Parallel()
	status := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"` + upstreamText + `"}`
	sa := `{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"uid":"sa-uid"}}`
	for _, tc := range []struct {
		name        string
		code        int
		contentType string
		body        string
		want        string // "" means the service account; "not found" means ErrNotFound
	}{
		{"404 whose Status has no code", 404, "application/json", status, "not found"},
		{"404 whose Status says 500", 404, "application/json", strings.Replace(status, `"status"`, `"code":500,"status"`, 1), "not found"},
		{"404 with a malformed Content-Type", 404, "application/json; =bad", `{}`, "not found"},
		{"500 whose Status has no code", 500, "application/json", status, "upstream answered 500"},
		{"403 whose Status has no code", 403, "application/json", status, "upstream answered 403"},
		{"500 whose Status says 404", 500, "application/json", strings.Replace(status, `"status"`, `"code":404,"status"`, 1), "upstream answered 500"},
		{"200 whose body is a Failure Status", 200, "application/json", status, "upstream answered 200 with a body that does not decode"},
		{"200 of text", 200, "text/plain", sa, "upstream answered 200 with a body that does not decode"},
		{"202", 202, "application/json", sa, "upstream answered 202"},
		{"203", 203, "application/json", sa, "upstream answered 203"},
		{"200", 200, "application/json", sa, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up, rt, _ := answeringUpstream(t, tc.code, tc.contentType, tc.body)
			g := newGetter(t, up, rt, RequestHeaderIdentity, time.Hour)
			o, err := g.GetServiceAccount(context.Background(), "default", "builder")
			switch {
			case tc.want == "" && (err != nil || o.UID != "sa-uid"):
				t.Errorf("got %+v, %v; want the service account", o, err)
			case tc.want == "not found" && !errors.Is(err, serviceaccount.ErrNotFound):
				t.Errorf("got %v, want ErrNotFound", err)
			case tc.want != "" && tc.want != "not found" && (err == nil || errors.Is(err, serviceaccount.ErrNotFound) || !strings.HasSuffix(err.Error(), ": "+tc.want)):
				t.Errorf("got %v, want an error ending %q", err, tc.want)
			}
			if tc.want != "" && o.UID != "" {
				t.Errorf("failed lookup returned UID %q", o.UID)
			}
		})
	}
}

// A review is judged on the answer's HTTP status: only a 201 or 200 is
// the review's answer, and a failure names the status only (A.6).
func TestSubjectAccessReviewerJudgesTheHTTPStatus_A6(t *testing.T) {
	t.Parallel()
	status := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"` + upstreamText + `"}`
	allowed := `{"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","status":{"allowed":true}}`
	for _, tc := range []struct {
		name string
		code int
		body string
		want string // "" means allowed
	}{
		{"201", 201, allowed, ""},
		{"200", 200, allowed, ""},
		{"202", 202, allowed, "upstream answered 202"},
		{"203", 203, allowed, "upstream answered 203"},
		{"206", 206, allowed, "upstream answered 206"},
		{"201 whose body is a Failure Status", 201, status, "upstream answered 201 with a body that does not decode"},
		{"200 whose body is a Failure Status", 200, status, "upstream answered 200 with a body that does not decode"},
		{"403 whose Status has no code", 403, status, "upstream answered 403"},
		{"500 whose Status says 201", 500, strings.Replace(status, `"status"`, `"code":201,"status"`, 1), "upstream answered 500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up, rt, _ := answeringUpstream(t, tc.code, "application/json", tc.body)
			s := newReviewer(t, up, rt, RequestHeaderIdentity)
			d, _, err := s.Authorize(context.Background(), authz.Attributes{User: authn.User{Name: "alice"}, Verb: "get", Path: "/metrics"})
			switch {
			case tc.want == "" && (d != authz.Allow || err != nil):
				t.Errorf("got %v, %v; want allow", d, err)
			case tc.want != "" && (d != authz.NoOpinion || err == nil || err.Error() != "subject access review: "+tc.want):
				t.Errorf("got %v, %v; want no opinion and %q", d, err, "subject access review: "+tc.want)
			}
		})
	}
}

// A lookup reads at most 4 MiB of an answer and a review 1 MiB, whether
// the upstream says the length first or not; a longer answer is a
// failure, not an object (A.3, A.6).
func TestUpstreamAnswersAreCapped_A3(t *testing.T) {
	t.Parallel()
	// sized returns a JSON object of exactly n bytes: prefix, a padding
	// string, and suffix.
	sized := func(prefix, suffix string, n int) string {
		return prefix + strings.Repeat("x", n-len(prefix)-len(suffix)) + suffix
	}
	saPrefix, saSuffix := `{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"uid":"sa-uid","annotations":{"a":"`, `"}}}`
	sarPrefix, sarSuffix := `{"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","status":{"allowed":true,"reason":"`, `"}}`
	for _, chunked := range []bool{false, true} {
		for _, tc := range []struct {
			name string
			size int
			want string // "" means read
		}{
			{"lookup of 4 MiB", 4 << 20, ""},
			{"lookup of 4 MiB and a byte", 4<<20 + 1, "upstream answered 200 with more than 4 MiB"},
			{"review of 1 MiB", 1 << 20, ""},
			{"review of 1 MiB and a byte", 1<<20 + 1, "upstream answered 201 with more than 1 MiB"},
		} {
			name := fmt.Sprintf("%s, chunked %v", tc.name, chunked)
			lookup := strings.HasPrefix(tc.name, "lookup")
			body, code := sized(saPrefix, saSuffix, tc.size), http.StatusOK
			if !lookup {
				body, code = sized(sarPrefix, sarSuffix, tc.size), http.StatusCreated
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if !chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				w.WriteHeader(code)
				w.(http.Flusher).Flush()
				_, _ = io.WriteString(w, body)
			}))
			up, _ := url.Parse(srv.URL)
			var err error
			if lookup {
				var o serviceaccount.Object
				o, err = newGetter(t, up, srv.Client().Transport, RequestHeaderIdentity, time.Hour).GetServiceAccount(context.Background(), "default", "builder")
				if err == nil && o.UID != "sa-uid" {
					t.Errorf("%s: UID %q, want sa-uid", name, o.UID)
				}
			} else {
				var d authz.Decision
				d, _, err = newReviewer(t, up, srv.Client().Transport, RequestHeaderIdentity).Authorize(context.Background(),
					authz.Attributes{User: authn.User{Name: "alice"}, Verb: "get", Path: "/metrics"})
				if (err == nil) != (d == authz.Allow) {
					t.Errorf("%s: decision %v with error %v", name, d, err)
				}
			}
			srv.Close()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s: %v, want it read", name, err)
			case tc.want != "" && (err == nil || !strings.HasSuffix(err.Error(), ": "+tc.want)):
				t.Errorf("%s: %v, want an error ending %q", name, err, tc.want)
			}
		}
	}
}

// An upstream URL's path is the prefix of every path the clientset asks
// for (A.3).
func TestUpstreamClientKeepsThePathPrefix_A3(t *testing.T) {
	t.Parallel()
	up, rt, last := answeringUpstream(t, 404, "application/json", `{"kind":"Status","apiVersion":"v1","status":"Failure","code":404}`)
	for _, suffix := range []string{"/prefix", "/prefix/"} {
		u, _ := url.Parse(up.String() + suffix)
		g := newGetter(t, u, rt, RequestHeaderIdentity, time.Hour)
		if _, err := g.GetServiceAccount(context.Background(), "default", "builder"); !errors.Is(err, serviceaccount.ErrNotFound) {
			t.Errorf("%s: %v, want not found", suffix, err)
		}
		if got, _ := last.Load().(string); !strings.HasPrefix(got, "/prefix/api/v1/namespaces/default/serviceaccounts/builder ") {
			t.Errorf("%s: asked %q", suffix, got)
		}
	}
}

// An answer of another kind, or with the UID under another spelling, or
// of another Content-Type, gives no UID: the token it was read for is
// refused (A.3).
func TestUpstreamGetterReadsOnlyTheObject_A3(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ contentType, body string }{
		{"application/json", `{"kind":"Secret","apiVersion":"v1","metadata":{"uid":"sa-uid"}}`},
		{"application/json", `{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"UID":"sa-uid"}}`},
		{"text/plain", `{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"uid":"sa-uid"}}`},
	} {
		up, rt, _ := answeringUpstream(t, 200, tc.contentType, tc.body)
		g := newGetter(t, up, rt, RequestHeaderIdentity, time.Hour)
		if o, err := g.GetServiceAccount(context.Background(), "default", "builder"); o.UID != "" {
			t.Errorf("%s %s: UID %q (%v), want none", tc.contentType, tc.body, o.UID, err)
		}
	}
}

// An upstream URL with a user name, a password or a query is refused, by
// the options (one line naming --upstream, without the password) and by
// NewUpstreamClient: Go's HTTP client would send the user as Basic
// authentication on the gateway's own requests, and client-go drops the
// query. A plain URL, with or without a path, is taken (A.3).
func TestUpstreamURLWithUserOrQueryIsRefused_A3(t *testing.T) {
	t.Parallel()
	up, rt, last := answeringUpstream(t, 404, "application/json", `{"kind":"Status","apiVersion":"v1","status":"Failure","code":404}`)
	host := up.Host
	for _, tc := range []struct {
		upstream string
		want     string // "" for none
	}{
		{"http://user:pw@" + host, `--upstream "http://user:xxxxx@` + host + `" has a user name or password: leave them out, the gateway speaks with its client certificate`},
		{"http://user@" + host, `--upstream "http://user@` + host + `" has a user name or password: leave them out, the gateway speaks with its client certificate`},
		{"http://" + host + "/?x=y", `--upstream "http://` + host + `/?x=y" has a query: leave it out, the gateway's own requests could not carry it`},
		{"http://" + host + "/?", `--upstream "http://` + host + `/?" has a query: leave it out, the gateway's own requests could not carry it`},
		{"http://" + host, ""},
		{"http://" + host + "/", ""},
	} {
		o := Defaults()
		o.TLSCertFile, o.TLSKeyFile, o.ClientCAFile, o.Upstream = "c", "k", "ca", tc.upstream
		err := o.Validate()
		if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && got != tc.want {
			t.Errorf("Validate with --upstream %s: %v, want %q", tc.upstream, err, tc.want)
		}
		if strings.Contains(fmt.Sprint(err), "pw") {
			t.Errorf("Validate with --upstream %s: %v names the password", tc.upstream, err)
		}

		u, _ := url.Parse(tc.upstream)
		c, err := NewUpstreamClient(u, rt, RequestHeaderIdentity)
		if tc.want != "" {
			if err == nil || !strings.HasSuffix(tc.want, strings.TrimPrefix(err.Error(), "upstream ")) || strings.Contains(err.Error(), "pw") {
				t.Errorf("NewUpstreamClient(%s): %v, want the refusal without the password", tc.upstream, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("NewUpstreamClient(%s): %v", tc.upstream, err)
		}
		g := &UpstreamGetter{Client: c, TTL: time.Hour}
		if _, err := g.GetServiceAccount(context.Background(), "default", "builder"); !errors.Is(err, serviceaccount.ErrNotFound) {
			t.Errorf("lookup through %s: %v, want not found", tc.upstream, err)
		}
		if got, _ := last.Load().(string); got != "/api/v1/namespaces/default/serviceaccounts/builder " {
			t.Errorf("lookup through %s asked %q, want the service account without Authorization", tc.upstream, got)
		}
	}
}
