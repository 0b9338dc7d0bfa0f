package authn_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/authn"
)

// fixed returns a Request that always answers (resp, ok, err) and counts
// its calls.
func fixed(resp *authn.Response, ok bool, err error, calls *int) authn.Request {
	return authn.RequestFunc(func(*http.Request) (*authn.Response, bool, error) {
		if calls != nil {
			*calls++
		}
		return resp, ok, err
	})
}

func user(name string, groups ...string) *authn.Response {
	return &authn.Response{User: authn.User{Name: name, Groups: groups}}
}

var (
	notMine = fixed(nil, false, nil, nil)
	errA    = errors.New("a failed")
	errB    = errors.New("b failed")
)

func TestUnion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		rs       []authn.Request
		wantUser string
		wantOK   bool
		wantErrs []error
	}{
		{name: "A.0 first success wins", rs: []authn.Request{notMine, fixed(user("alice"), true, nil, nil), fixed(user("bob"), true, nil, nil)}, wantUser: "alice", wantOK: true},
		{name: "A.0 an error does not stop the union", rs: []authn.Request{fixed(nil, false, errA, nil), fixed(user("bob"), true, nil, nil)}, wantUser: "bob", wantOK: true},
		{name: "A.0 errors are returned only when all fail", rs: []authn.Request{fixed(nil, false, errA, nil), notMine, fixed(nil, false, errB, nil)}, wantErrs: []error{errA, errB}},
		{name: "A.0 one error is returned as is", rs: []authn.Request{notMine, fixed(nil, false, errA, nil)}, wantErrs: []error{errA}},
		{name: "A.0 all not mine gives no error", rs: []authn.Request{notMine, notMine}},
		{name: "A.0 success with an error counts as an error", rs: []authn.Request{fixed(user("eve"), true, errA, nil), fixed(user("bob"), true, nil, nil)}, wantUser: "bob", wantOK: true},
		{name: "A.0 empty union is not mine", rs: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, ok, err := authn.Union(tt.rs...).AuthenticateRequest(httptest.NewRequest("GET", "/", nil))
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v (err %v)", ok, tt.wantOK, err)
			}
			if ok && resp.User.Name != tt.wantUser {
				t.Errorf("user = %q, want %q", resp.User.Name, tt.wantUser)
			}
			if len(tt.wantErrs) == 0 && err != nil {
				t.Errorf("err = %v, want nil", err)
			}
			for _, want := range tt.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("err = %v, want it to wrap %v", err, want)
				}
			}
		})
	}
}

func TestErrorsMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		errs authn.Errors
		want string
	}{
		{name: "A.0 several errors are listed", errs: authn.Errors{errA, errB}, want: "[a failed, b failed]"},
		{name: "A.0 repeated messages are listed once", errs: authn.Errors{errA, errors.New("a failed")}, want: "a failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.errs.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFailOnError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		first     authn.Request
		wantUser  string
		wantErr   error
		wantCalls int // calls to the authenticator after the first
	}{
		{name: "A.0 a bad credential is refused, not anonymous", first: fixed(nil, false, errA, nil), wantErr: errA},
		{name: "A.0 no credential falls through to anonymous", first: notMine, wantUser: authn.Anonymous, wantCalls: 1},
		{name: "A.0 a success stops the chain", first: fixed(user("alice"), true, nil, nil), wantUser: "alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			anon := authn.NewAnonymous()
			counted := authn.RequestFunc(func(r *http.Request) (*authn.Response, bool, error) {
				calls++
				return anon.AuthenticateRequest(r)
			})
			resp, ok, err := authn.FailOnError(tt.first, counted).AuthenticateRequest(httptest.NewRequest("GET", "/", nil))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantUser == "" && ok {
				t.Fatalf("authenticated as %q, want refused", resp.User.Name)
			}
			if tt.wantUser != "" && (!ok || resp.User.Name != tt.wantUser) {
				t.Fatalf("got (%v, %v), want user %q", resp, ok, tt.wantUser)
			}
			if calls != tt.wantCalls {
				t.Errorf("later authenticator called %d times, want %d", calls, tt.wantCalls)
			}
		})
	}
}

func TestAnonymous(t *testing.T) {
	t.Parallel()
	t.Run("A.5 anonymous is system:anonymous in system:unauthenticated", func(t *testing.T) {
		resp, ok, err := authn.NewAnonymous().AuthenticateRequest(httptest.NewRequest("GET", "/", nil))
		if !ok || err != nil {
			t.Fatalf("got (%v, %v), want success", ok, err)
		}
		want := authn.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}
		if resp.User.Name != want.Name || !slices.Equal(resp.User.Groups, want.Groups) || resp.Authenticator != "anonymous" {
			t.Errorf("got %+v, want user %+v from \"anonymous\"", resp, want)
		}
	})
}

func TestAuthenticatedGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		in         *authn.Response
		wantGroups []string
	}{
		{name: "A.5 system:authenticated is appended", in: user("alice", "dev"), wantGroups: []string{"dev", "system:authenticated"}},
		{name: "A.5 a user without groups gets system:authenticated", in: user("alice"), wantGroups: []string{"system:authenticated"}},
		{name: "A.5 system:anonymous is left alone", in: user("system:anonymous", "system:unauthenticated"), wantGroups: []string{"system:unauthenticated"}},
		{name: "A.5 system:anonymous without groups is left alone", in: user("system:anonymous"), wantGroups: nil},
		{name: "A.5 system:authenticated is not added twice", in: user("bob", "system:authenticated", "x"), wantGroups: []string{"system:authenticated", "x"}},
		{name: "A.5 system:unauthenticated blocks the addition", in: user("bob", "system:unauthenticated"), wantGroups: []string{"system:unauthenticated"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := slices.Clone(tt.in.User.Groups)
			// Spare capacity must not be written into: the input may be
			// shared with a cache.
			tt.in.User.Groups = append(make([]string, 0, len(before)+4), before...)
			resp, ok, err := authn.WithAuthenticatedGroup(fixed(tt.in, true, nil, nil)).AuthenticateRequest(httptest.NewRequest("GET", "/", nil))
			if !ok || err != nil {
				t.Fatalf("got (%v, %v), want success", ok, err)
			}
			if !slices.Equal(resp.User.Groups, tt.wantGroups) {
				t.Errorf("groups = %q, want %q", resp.User.Groups, tt.wantGroups)
			}
			if !slices.Equal(tt.in.User.Groups, before) || slices.Contains(tt.in.User.Groups[:cap(tt.in.User.Groups)][len(before):], "system:authenticated") {
				t.Errorf("input groups changed to %q, want %q untouched", tt.in.User.Groups, before)
			}
		})
	}
	t.Run("A.5 errors and not-mine pass through", func(t *testing.T) {
		t.Parallel()
		_, ok, err := authn.WithAuthenticatedGroup(fixed(nil, false, errA, nil)).AuthenticateRequest(httptest.NewRequest("GET", "/", nil))
		if ok || !errors.Is(err, errA) {
			t.Errorf("got (%v, %v), want (false, %v)", ok, err, errA)
		}
	})
}

func TestAddAuthenticated(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		user   string
		groups []string
		want   []string
	}{
		{name: "an ordinary user gains system:authenticated", user: "alice", groups: []string{"dev"}, want: []string{"dev", authn.AllAuthenticated}},
		{name: "a user without groups gains system:authenticated", user: "alice", want: []string{authn.AllAuthenticated}},
		{name: "system:anonymous gains nothing", user: authn.Anonymous, groups: []string{"dev"}, want: []string{"dev"}},
		{name: "system:anonymous without groups gains nothing", user: authn.Anonymous},
		{name: "system:authenticated is not added twice", user: "bob", groups: []string{authn.AllAuthenticated, "x"}, want: []string{authn.AllAuthenticated, "x"}},
		{name: "system:unauthenticated blocks the addition", user: "bob", groups: []string{"x", authn.AllUnauthenticated}, want: []string{"x", authn.AllUnauthenticated}},
		{name: "a name that only looks anonymous gains system:authenticated", user: "System:Anonymous", want: []string{authn.AllAuthenticated}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := authn.AddsAuthenticated(tt.user, tt.groups); got != !slices.Equal(tt.groups, tt.want) {
				t.Errorf("AddsAuthenticated(%q, %q) = %v, want %v", tt.user, tt.groups, got, !got)
			}
			if got := authn.AddAuthenticated(tt.user, slices.Clone(tt.groups)); !slices.Equal(got, tt.want) {
				t.Errorf("AddAuthenticated(%q, %q) = %q, want %q", tt.user, tt.groups, got, tt.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	bad := fixed(nil, false, errA, nil)
	good := fixed(user("alice", "dev"), true, nil, nil)
	tests := []struct {
		name       string
		c          authn.Config
		wantUser   string
		wantGroups []string
		wantErr    bool
	}{
		{name: "A.0 nothing configured and anonymous off refuses", c: authn.Config{}},
		{name: "A.0 nothing configured and anonymous on is anonymous", c: authn.Config{Anonymous: true}, wantUser: "system:anonymous", wantGroups: []string{"system:unauthenticated"}},
		{name: "A.0 bad credential with anonymous on is an error", c: authn.Config{X509: bad, Anonymous: true}, wantErr: true},
		{name: "A.0 not mine with anonymous on is anonymous", c: authn.Config{X509: notMine, Anonymous: true}, wantUser: "system:anonymous", wantGroups: []string{"system:unauthenticated"}},
		{name: "A.0 request-header error then x509 success authenticates", c: authn.Config{RequestHeader: bad, X509: good, Anonymous: true}, wantUser: "alice", wantGroups: []string{"dev", "system:authenticated"}},
		{name: "A.0 not mine with anonymous off is refused without error", c: authn.Config{X509: notMine}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, ok, err := authn.New(tt.c).AuthenticateRequest(httptest.NewRequest("GET", "/", nil))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantUser == "" {
				if ok {
					t.Fatalf("authenticated as %q, want refused", resp.User.Name)
				}
				return
			}
			if !ok || resp.User.Name != tt.wantUser || !slices.Equal(resp.User.Groups, tt.wantGroups) {
				t.Fatalf("got (%+v, %v), want %q in %q", resp, ok, tt.wantUser, tt.wantGroups)
			}
		})
	}
}

type names []string

func (ns names) IsIdentityHeader(name string) bool {
	for _, n := range ns {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

func TestStripCredentials(t *testing.T) {
	t.Parallel()
	identity := map[string]string{
		"Authorization":           "Bearer secret-token",
		"authorization":           "Bearer other-token", // as sent, not canonical
		"X-Remote-User":           "mallory",
		"X-Remote-Uid":            "0",
		"X-Remote-Group":          "system:masters",
		"X-Remote-Extra-Scopes":   "all",
		"x-remote-extra-Lower":    "x",
		"X-Proxy-User":            "mallory", // configured by the request-header authenticator
		"Sec-Websocket-Protocol":  "chat",
		"Impersonate-User":        "kept for the impersonation filter",
		"Accept":                  "application/json",
		"X-Remote-Userish-Header": "not an identity header",
	}
	kept := []string{"Sec-Websocket-Protocol", "Impersonate-User", "Accept", "X-Remote-Userish-Header"}
	tests := []struct {
		name      string
		c         authn.Config
		ids       []authn.IdentityHeaders // besides c.IdentityHeaders()
		wantStrip bool
	}{
		{name: "A.4 headers are removed after x509 success", c: authn.Config{X509: fixed(user("alice"), true, nil, nil), RequestHeader: struct {
			authn.Request
			authn.IdentityHeaders
		}{notMine, names{"X-Proxy-User"}}}, wantStrip: true},
		{name: "A.4 headers are removed after anonymous success", c: authn.Config{Anonymous: true, RequestHeader: struct {
			authn.Request
			authn.IdentityHeaders
		}{notMine, names{"X-Proxy-User"}}}, wantStrip: true},
		{name: "A.4 headers named by further IdentityHeaders are removed after success", c: authn.Config{X509: fixed(user("alice"), true, nil, nil)}, ids: []authn.IdentityHeaders{
			authn.IdentityHeadersFunc(func(name string) bool { return strings.EqualFold(name, "X-Proxy-User") }),
		}, wantStrip: true},
		{name: "A.4 headers stay when authentication fails", c: authn.Config{X509: fixed(nil, false, errA, nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", "/", nil)
			for k, v := range identity {
				r.Header[k] = []string{v} // as sent, some not canonical
			}
			r.Header.Add("X-Remote-Group", "second")
			_, ok, _ := authn.StripCredentials(authn.New(tt.c), append(tt.c.IdentityHeaders(), tt.ids...)...).AuthenticateRequest(r)
			if ok != tt.wantStrip {
				t.Fatalf("ok = %v, want %v", ok, tt.wantStrip)
			}
			for k := range identity {
				_, present := r.Header[k]
				want := !tt.wantStrip || slices.Contains(kept, k)
				if present != want {
					t.Errorf("header %q present = %v, want %v", k, present, want)
				}
			}
		})
	}
}

func TestNewLeavesHeadersToTheFilter(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer secret-token")
	r.Header.Set("X-Remote-User", "mallory")
	if _, ok, err := authn.New(authn.Config{X509: fixed(user("alice"), true, nil, nil)}).AuthenticateRequest(r); !ok {
		t.Fatalf("not authenticated: %v", err)
	}
	if r.Header.Get("Authorization") == "" || r.Header.Get("X-Remote-User") == "" {
		t.Errorf("A.4 New removed headers (%v); removing them is the HTTP filter's step", r.Header)
	}
}

func TestCheckAudiences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		auds   []string
		wantOK bool
	}{
		{name: "A.3 a response for an API audience passes", auds: []string{"other", "https://kubernetes.default.svc"}, wantOK: true},
		{name: "A.3 a response without audiences passes", auds: nil, wantOK: true},
		{name: "A.3 a response for other audiences only is refused", auds: []string{"other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := &authn.Response{User: authn.User{Name: "alice"}, Audiences: tt.auds}
			a := authn.New(authn.Config{X509: fixed(resp, true, nil, nil), APIAudiences: []string{"https://kubernetes.default.svc"}})
			_, ok, err := a.AuthenticateRequest(httptest.NewRequest("GET", "/", nil))
			if ok != tt.wantOK {
				t.Fatalf("ok = %v (err %v), want %v", ok, err, tt.wantOK)
			}
			if !ok && (err == nil || !strings.Contains(err.Error(), "audiences")) {
				t.Errorf("err = %v, want an audience error", err)
			}
		})
	}
}

func TestIsStandardIdentityHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		want bool
	}{
		{"Authorization", true},
		{"authorization", true},
		{"X-Remote-User", true},
		{"x-remote-user", true},
		{"X-Remote-Uid", true},
		{"X-REMOTE-UID", true},
		{"X-Remote-Group", true},
		{"X-Remote-Extra-", true},
		{"X-Remote-Extra-Scopes", true},
		{"x-remote-extra-scopes", true},
		{"X-Remote-Users", false},
		{"X-Remote-Use", false},
		{"X-Remote-Extra", false},
		{"Authorizations", false},
		{"Proxy-Authorization", false},
		{"Accept", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run("A.4 "+tt.name, func(t *testing.T) {
			t.Parallel()
			if got := authn.IsStandardIdentityHeader(tt.name); got != tt.want {
				t.Errorf("IsStandardIdentityHeader(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

// A.5: the anonymous user on paths and the paths under them, never on a
// path that merely starts with the same letters.
func TestAnonymousUnder_A5(t *testing.T) {
	t.Parallel()
	a := authn.NewAnonymousUnder(authn.HealthPaths())
	for path, want := range map[string]bool{
		"/healthz": true, "/healthz/poststarthook/x": true, "/livez": true, "/livez/ping": true,
		"/readyz": true, "/readyz/etcd": true, "/version": true, "/version/": true,
		"/": false, "/api": false, "/readyzz": false, "/versions": false, "/apis/readyz": false, "/metrics": false,
		// Paths not in their plain form are under no health path, as an
		// upstream that cleans them would serve something else.
		"/readyz/../api": false, "/readyz/./etcd": false, "//readyz": false, "/readyz//etcd": false,
		"/readyz/%2e%2e/api": false, "/readyz%2f..%2fapi": false, "/readyz%2fetcd": false, "/version/..": false,
	} {
		resp, ok, err := a.AuthenticateRequest(httptest.NewRequest("GET", path, nil))
		if err != nil || ok != want || (ok && resp.User.Name != authn.Anonymous) {
			t.Errorf("GET %s: got (%v, %v, %v), want authenticated %v", path, resp, ok, err, want)
		}
	}
	// Exact paths stay exact, as an authentication configuration's
	// conditions are.
	exact := authn.New(authn.Config{Anonymous: true, AnonymousPaths: []string{"/readyz"}, AnonymousTrees: authn.HealthPaths()})
	if _, ok, _ := exact.AuthenticateRequest(httptest.NewRequest("GET", "/readyz/etcd", nil)); ok {
		t.Error("GET /readyz/etcd with exact paths: anonymous, want not authenticated")
	}
}
