package apiserver

import (
	"context"
	"net/http"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// reviewCreator answers any review with allowed.
type reviewCreator struct{ namespaced bool }

func (reviewCreator) New() runtime.Object { return &authorizationv1.SubjectAccessReview{} }
func (c reviewCreator) Namespaced() bool  { return c.namespaced }
func (reviewCreator) Kind() string        { return "SubjectAccessReview" }
func (reviewCreator) Create(_ context.Context, r *CreateRequest) (runtime.Object, error) {
	out := r.Object.(*authorizationv1.SubjectAccessReview)
	out.Status.Allowed = true
	return out, nil
}

// A cluster-scoped creator is not served under a namespace, where its
// authorization would be a namespace's, nor a namespaced one at the
// cluster scope: both paths are 404, as in kube-apiserver.
func TestCreatorScopeIsItsPath(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) {
		c.Creators = map[string]Creator{
			"authorization.k8s.io/v1/subjectaccessreviews":      reviewCreator{},
			"authorization.k8s.io/v1/localsubjectaccessreviews": reviewCreator{namespaced: true},
		}
	})
	body := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"pods"}}}`
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/apis/authorization.k8s.io/v1/subjectaccessreviews", http.StatusCreated},
		{"/apis/authorization.k8s.io/v1/namespaces/team/subjectaccessreviews", http.StatusNotFound},
		{"/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews", http.StatusCreated},
		{"/apis/authorization.k8s.io/v1/localsubjectaccessreviews", http.StatusNotFound},
	} {
		resp, err := ts.http.Client().Post(ts.http.URL+tc.path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("POST %s: %d, want %d", tc.path, resp.StatusCode, tc.code)
		}
	}
}
