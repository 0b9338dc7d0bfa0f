package authz

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/authn"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

type check struct{ group, resource, sub, ns, name string }

func TestImpersonation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		h          http.Header
		wantChecks []check
		wantUser   authn.User
	}{
		{
			name:       "A.6 user alone",
			h:          header("Impersonate-User", "jane"),
			wantChecks: []check{{"", "users", "", "", "jane"}},
			wantUser:   authn.User{Name: "jane", Groups: []string{"system:authenticated"}},
		},
		{
			name: "A.6 user groups extra and uid each checked",
			h: header("Impersonate-User", "jane", "Impersonate-Group", "dev", "Impersonate-Group", "ops",
				"Impersonate-Extra-Scopes", "view", "Impersonate-Extra-Scopes", "edit",
				"Impersonate-Extra-Acme.com%2fproject", "p1", "Impersonate-Uid", "u-1"),
			wantChecks: []check{
				{"", "users", "", "", "jane"},
				{"", "groups", "", "", "dev"},
				{"", "groups", "", "", "ops"},
				{"authentication.k8s.io", "userextras", "acme.com/project", "", "p1"},
				{"authentication.k8s.io", "userextras", "scopes", "", "view"},
				{"authentication.k8s.io", "userextras", "scopes", "", "edit"},
				{"authentication.k8s.io", "uids", "", "", "u-1"},
			},
			wantUser: authn.User{Name: "jane", UID: "u-1", Groups: []string{"dev", "ops", "system:authenticated"},
				Extra: map[string][]string{"scopes": {"view", "edit"}, "acme.com/project": {"p1"}}},
		},
		{
			name:       "A.6 service account gets its groups",
			h:          header("Impersonate-User", "system:serviceaccount:team:builder"),
			wantChecks: []check{{"", "serviceaccounts", "", "team", "builder"}},
			wantUser: authn.User{Name: "system:serviceaccount:team:builder",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"}},
		},
		{
			name:       "A.6 service account with groups given keeps only those",
			h:          header("Impersonate-User", "system:serviceaccount:team:builder", "Impersonate-Group", "x"),
			wantChecks: []check{{"", "serviceaccounts", "", "team", "builder"}, {"", "groups", "", "", "x"}},
			wantUser:   authn.User{Name: "system:serviceaccount:team:builder", Groups: []string{"x", "system:authenticated"}},
		},
		{
			name:       "A.6 invalid service account name is a user",
			h:          header("Impersonate-User", "system:serviceaccount:Team:b:c"),
			wantChecks: []check{{"", "users", "", "", "system:serviceaccount:Team:b:c"}},
			wantUser:   authn.User{Name: "system:serviceaccount:Team:b:c", Groups: []string{"system:authenticated"}},
		},
		{
			name:       "A.6 anonymous gets system:unauthenticated",
			h:          header("Impersonate-User", "system:anonymous"),
			wantChecks: []check{{"", "users", "", "", "system:anonymous"}},
			wantUser:   authn.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}},
		},
		{
			name:       "A.6 system:unauthenticated given suppresses system:authenticated",
			h:          header("Impersonate-User", "jane", "Impersonate-Group", "system:unauthenticated"),
			wantChecks: []check{{"", "users", "", "", "jane"}, {"", "groups", "", "", "system:unauthenticated"}},
			wantUser:   authn.User{Name: "jane", Groups: []string{"system:unauthenticated"}},
		},
		{
			name:       "A.6 system:authenticated given is not repeated",
			h:          header("Impersonate-User", "jane", "Impersonate-Group", "system:authenticated"),
			wantChecks: []check{{"", "users", "", "", "jane"}, {"", "groups", "", "", "system:authenticated"}},
			wantUser:   authn.User{Name: "jane", Groups: []string{"system:authenticated"}},
		},
	}
	requester := testUser("admin")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			im, ok, err := ParseImpersonation(tt.h)
			if err != nil || !ok {
				t.Fatalf("ParseImpersonation() = _, %v, %v; want true, nil", ok, err)
			}
			var got []check
			for _, a := range im.Checks(requester) {
				if a.Verb != "impersonate" || !a.ResourceRequest || !reflect.DeepEqual(a.User, requester) {
					t.Errorf("check %+v: want verb impersonate, a resource request, by the requester", a)
				}
				got = append(got, check{a.APIGroup, a.Resource, a.Subresource, a.Namespace, a.Name})
			}
			if !reflect.DeepEqual(got, tt.wantChecks) {
				t.Errorf("Checks()\n got %+v\nwant %+v", got, tt.wantChecks)
			}
			allowAll := fixed(Allow, "", nil)
			u, err := Impersonate(context.Background(), allowAll, requester, im)
			if err != nil {
				t.Fatalf("Impersonate() error = %v", err)
			}
			if !reflect.DeepEqual(u, tt.wantUser) {
				t.Errorf("Impersonate() user\n got %+v\nwant %+v", u, tt.wantUser)
			}
		})
	}
}

func TestParseImpersonationErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		h      http.Header
		wantOK bool
		want   string // substring of the 400 message; "" for no error
	}{
		{"A.6 no headers", header("Authorization", "Bearer x"), false, ""},
		{"A.6 empty user alone is nothing", header("Impersonate-User", ""), false, ""},
		{"A.6 group without user is 400", header("Impersonate-Group", "admins"), false, `requested [group "admins"] without impersonating a user`},
		{"A.6 uid without user is 400", header("Impersonate-Uid", "1"), false, `requested [uid "1"] without impersonating a user`},
		{"A.6 extra without user is 400", header("Impersonate-Extra-Foo", "bar"), false, `requested [extra "foo"="bar"] without impersonating a user`},
		{"A.6 lower-case header names accepted", http.Header{"impersonate-extra-scopes": {"x"}, "Impersonate-User": {"u"}}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			im, ok, err := ParseImpersonation(tt.h)
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if tt.want == "" {
				if err != nil {
					t.Errorf("error = %v, want nil", err)
				}
				if ok && im.Extra["scopes"][0] != "x" {
					t.Errorf("Extra = %v, want scopes=[x]", im.Extra)
				}
				return
			}
			if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want a 400 containing %q", err, tt.want)
			}
		})
	}
}

func TestImpersonateForbidden(t *testing.T) {
	t.Parallel()
	// Allows impersonating users and groups, not extras.
	az := AuthorizerFunc(func(_ context.Context, a Attributes) (Decision, string, error) {
		if a.Verb == "impersonate" && (a.Resource == "users" || a.Resource == "groups") {
			return Allow, "", nil
		}
		return NoOpinion, "no rule", nil
	})
	h := header("Impersonate-User", "jane", "Impersonate-Group", "dev", "Impersonate-Extra-Scopes", "view")
	im, _, err := ParseImpersonation(h)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Impersonate(context.Background(), az, testUser("bob"), im)
	want := `userextras.authentication.k8s.io "view" is forbidden: User "bob" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope: no rule`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("Impersonate() error\n got %v\nwant %s", err, want)
	}

	// An authorizer error forbids even with Allow.
	broken := fixed(Allow, "", context.DeadlineExceeded)
	if _, err := Impersonate(context.Background(), broken, testUser("bob"), im); !apierrors.IsForbidden(err) {
		t.Errorf("Impersonate() with authorizer error = %v, want 403", err)
	}
}

func TestDeleteImpersonationHeaders(t *testing.T) {
	t.Parallel()
	h := http.Header{"Impersonate-User": {"a"}, "impersonate-group": {"b"}, "Impersonate-Extra-X": {"c"}, "Impersonate-Uid": {"d"}, "Accept": {"e"}}
	DeleteImpersonationHeaders(h)
	if want := (http.Header{"Accept": {"e"}}); !reflect.DeepEqual(h, want) {
		t.Errorf("after DeleteImpersonationHeaders: %v, want %v", h, want)
	}
}

func FuzzParseImpersonation(f *testing.F) {
	f.Add("jane", "dev", "Scopes", "view", "u1")
	f.Add("system:serviceaccount:ns:sa", "", "a%2Fb", "x", "")
	f.Add("", "g", "", "", "")
	f.Add("system:serviceaccount::", "", "%zz", "", "")
	f.Fuzz(func(t *testing.T, user, group, extraKey, extraValue, uid string) {
		h := http.Header{}
		if user != "" {
			h.Set("Impersonate-User", user)
		}
		if group != "" {
			h.Add("Impersonate-Group", group)
		}
		if extraKey != "" {
			h["Impersonate-Extra-"+extraKey] = []string{extraValue}
		}
		if uid != "" {
			h.Set("Impersonate-Uid", uid)
		}
		im, ok, err := ParseImpersonation(h)
		if err != nil {
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("error %v is not a 400", err)
			}
			return
		}
		if !ok {
			return
		}
		checks := im.Checks(authn.User{Name: "r"})
		if len(checks) == 0 || checks[0].Resource != "users" && checks[0].Resource != "serviceaccounts" {
			t.Fatalf("first check %+v is not the user", checks)
		}
		u := im.Result()
		if u.Name != user || len(u.Groups) == 0 {
			t.Fatalf("Result() = %+v for user %q", u, user)
		}
	})
}
