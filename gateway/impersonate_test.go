package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

// The review of an impersonation check names the resource, the user with
// its UID, groups and extras, and its answer decides; an upstream that
// fails, or answers what is not a review, allows nothing (A.6).
func TestSubjectAccessReviewerResourceAndFailures_A6(t *testing.T) {
	t.Parallel()
	var got authorizationv1.SubjectAccessReview
	var answer func() (int, string)
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = authorizationv1.SubjectAccessReview{}
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("request body: %v", err)
		}
		code, body := answer()
		return &http.Response{StatusCode: code, Body: io.NopCloser(bytes.NewReader([]byte(body))), Header: http.Header{}, Request: r}, nil
	})
	up, _ := url.Parse("https://upstream.example")
	s := newReviewer(t, up, rt, ImpersonateIdentity)
	alice := authn.User{Name: "alice", UID: "alice-uid", Groups: []string{"devs", "system:authenticated"},
		Extra: map[string][]string{"scopes": {"a", "b"}}}
	a := authz.Attributes{User: alice, Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io",
		APIVersion: "v1", Resource: "userextras", Subresource: "scopes", Name: "a", Namespace: ""}
	review := func(allowed bool, reason string) string {
		b, _ := json.Marshal(authorizationv1.SubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Reason: reason}})
		return string(b)
	}

	answer = func() (int, string) { return http.StatusCreated, review(true, "rbac allows") }
	d, reason, err := s.Authorize(context.Background(), a)
	if d != authz.Allow || reason != "rbac allows" || err != nil {
		t.Errorf("allowed: %v %q %v, want allow with the upstream's reason", d, reason, err)
	}
	wantAttrs := &authorizationv1.ResourceAttributes{Verb: "impersonate", Group: "authentication.k8s.io", Version: "v1",
		Resource: "userextras", Subresource: "scopes", Name: "a"}
	if !reflect.DeepEqual(got.Spec.ResourceAttributes, wantAttrs) || got.Spec.NonResourceAttributes != nil {
		t.Errorf("review attributes %+v %+v, want %+v", got.Spec.ResourceAttributes, got.Spec.NonResourceAttributes, wantAttrs)
	}
	wantExtra := map[string]authorizationv1.ExtraValue{"scopes": {"a", "b"}}
	if got.Spec.User != "alice" || got.Spec.UID != "alice-uid" || !reflect.DeepEqual(got.Spec.Groups, alice.Groups) ||
		!reflect.DeepEqual(got.Spec.Extra, wantExtra) {
		t.Errorf("review subject %q %q %v %v, want alice with her UID, groups and extras", got.Spec.User, got.Spec.UID, got.Spec.Groups, got.Spec.Extra)
	}

	for _, tt := range []struct {
		name      string
		code      int
		body      string
		wantError string // "" means no error, and no opinion
	}{
		{"denied", http.StatusCreated, review(false, "no rule"), ""},
		{"forbidden", http.StatusForbidden, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`, "upstream answered 403"},
		{"server error", http.StatusInternalServerError, "upstream text that must not be repeated", "upstream answered 500"},
		{"not JSON", http.StatusCreated, "<html>", "subject access review"},
	} {
		answer = func() (int, string) { return tt.code, tt.body }
		d, _, err := s.Authorize(context.Background(), a)
		if d != authz.NoOpinion {
			t.Errorf("%s: decision %v, want no opinion", tt.name, d)
		}
		switch {
		case tt.wantError == "" && err != nil:
			t.Errorf("%s: %v, want no error", tt.name, err)
		case tt.wantError != "" && (err == nil || !strings.Contains(err.Error(), tt.wantError)):
			t.Errorf("%s: error %v, want one saying %q", tt.name, err, tt.wantError)
		case err != nil && strings.Contains(err.Error(), "must not be repeated"):
			t.Errorf("%s: error %q repeats the upstream's text", tt.name, err)
		}
	}
}
