package authz

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/kubegate/kubegate/authn"
)

func fixed(d Decision, reason string, err error) Authorizer {
	return AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) { return d, reason, err })
}

func TestUnion(t *testing.T) {
	t.Parallel()
	boom := errors.New("webhook unreachable")
	tests := []struct {
		name       string
		chain      []Authorizer
		want       Decision
		wantReason string
		wantErr    bool
	}{
		{"C.2 empty union has no opinion", nil, NoOpinion, "", false},
		{"C.2 first allow wins", []Authorizer{fixed(NoOpinion, "a", nil), fixed(Allow, "b", nil), fixed(Deny, "c", nil)}, Allow, "b", false},
		{"C.2 deny ends the chain", []Authorizer{fixed(Deny, "no", nil), fixed(Allow, "yes", nil)}, Deny, "no", false},
		{"C.2 reasons of no opinion joined by newline", []Authorizer{fixed(NoOpinion, "a", nil), fixed(NoOpinion, "", nil), fixed(NoOpinion, "b", nil)}, NoOpinion, "a\nb", false},
		{"C.2 errors kept when nobody decides", []Authorizer{fixed(NoOpinion, "", boom)}, NoOpinion, "", true},
		{"C.2 allow after an error still allows", []Authorizer{fixed(NoOpinion, "", boom), fixed(Allow, "", nil)}, Allow, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, reason, err := Union(tt.chain...).Authorize(context.Background(), Attributes{})
			if d != tt.want || reason != tt.wantReason || (err != nil) != tt.wantErr {
				t.Errorf("Authorize() = %v, %q, %v; want %v, %q, error %v", d, reason, err, tt.want, tt.wantReason, tt.wantErr)
			}
		})
	}
}

func TestPrivilegedGroups(t *testing.T) {
	t.Parallel()
	az := PrivilegedGroups(SystemMasters)
	tests := []struct {
		name string
		user authn.User
		want Decision
	}{
		{"C.2 system:masters allowed everything", testUser("root", SystemMasters), Allow},
		{"C.2 others have no opinion", testUser("bob", "dev"), NoOpinion},
		{"C.2 user named system:masters is not the group", authn.User{Name: SystemMasters}, NoOpinion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, _, err := az.Authorize(context.Background(), Attributes{User: tt.user, Verb: "delete", ResourceRequest: true, Resource: "nodes"})
			if d != tt.want || err != nil {
				t.Errorf("Authorize() = %v, %v; want %v, nil", d, err, tt.want)
			}
		})
	}
}

func TestDecisionString(t *testing.T) {
	t.Parallel()
	for d, want := range map[Decision]string{Allow: "allow", Deny: "deny", NoOpinion: "no opinion"} {
		if got := d.String(); got != want {
			t.Errorf("Decision(%d).String() = %q, want %q", int(d), got, want)
		}
	}
}

func TestForbidden(t *testing.T) {
	t.Parallel()
	bob := authn.User{Name: "bob"}
	tests := []struct {
		name     string
		attrs    Attributes
		reason   string
		wantMsg  string
		wantJSON string
	}{
		{
			name:    "C.5 named pod in a namespace",
			attrs:   Attributes{User: bob, Verb: "get", ResourceRequest: true, Namespace: "default", Resource: "pods", Name: "app"},
			wantMsg: `pods "app" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "default"`,
		},
		{
			name:     "C.5 list pods body is the reference body",
			attrs:    Attributes{User: bob, Verb: "list", ResourceRequest: true, Namespace: "default", Resource: "pods"},
			wantMsg:  `pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default"`,
			wantJSON: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden: User \"bob\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"","reason":"Forbidden","details":{"kind":"pods"},"code":403}`,
		},
		{
			name:     "C.5 cluster scope with group and subresource",
			attrs:    Attributes{User: bob, Verb: "create", ResourceRequest: true, APIGroup: "rbac.authorization.k8s.io", Resource: "clusterroles", Subresource: "x", Name: "r"},
			wantMsg:  `clusterroles.rbac.authorization.k8s.io "r" is forbidden: User "bob" cannot create resource "clusterroles/x" in API group "rbac.authorization.k8s.io" at the cluster scope`,
			wantJSON: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"clusterroles.rbac.authorization.k8s.io \"r\" is forbidden: User \"bob\" cannot create resource \"clusterroles/x\" in API group \"rbac.authorization.k8s.io\" at the cluster scope","reason":"Forbidden","details":{"name":"r","group":"rbac.authorization.k8s.io","kind":"clusterroles"},"code":403}`,
		},
		{
			name:     "C.5 non-resource path has empty details",
			attrs:    Attributes{User: authn.User{Name: "system:anonymous"}, Verb: "get", Path: "/api"},
			wantMsg:  `forbidden: User "system:anonymous" cannot get path "/api"`,
			wantJSON: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"system:anonymous\" cannot get path \"/api\"","reason":"Forbidden","details":{},"code":403}`,
		},
		{
			name:    "C.5 reason appended",
			attrs:   Attributes{User: bob, Verb: "get", ResourceRequest: true, Namespace: "ns", Resource: "pods", Name: "p"},
			reason:  `RBAC: role.rbac.authorization.k8s.io "x" not found`,
			wantMsg: `pods "p" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "ns": RBAC: role.rbac.authorization.k8s.io "x" not found`,
		},
		{
			name:    "C.5 html escaped in the generated sentence only",
			attrs:   Attributes{User: authn.User{Name: "<b>&"}, Verb: "get", Path: "/x<y>"},
			reason:  "a<b",
			wantMsg: `forbidden: User "&lt;b&gt;&amp;" cannot get path "/x&lt;y&gt;": a<b`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Forbidden(tt.attrs, tt.reason)
			if got := err.ErrStatus.Message; got != tt.wantMsg {
				t.Errorf("message\n got %s\nwant %s", got, tt.wantMsg)
			}
			if err.ErrStatus.Code != 403 || err.ErrStatus.Reason != "Forbidden" {
				t.Errorf("code, reason = %d, %q; want 403, Forbidden", err.ErrStatus.Code, err.ErrStatus.Reason)
			}
			if tt.wantJSON != "" {
				b, jerr := json.Marshal(err.ErrStatus)
				if jerr != nil {
					t.Fatal(jerr)
				}
				if string(b) != tt.wantJSON {
					t.Errorf("body\n got %s\nwant %s", b, tt.wantJSON)
				}
			}
		})
	}
}
