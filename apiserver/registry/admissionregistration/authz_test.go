package admissionregistration_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

// A policy or binding that names parameters is written only by a user
// allowed to get them, as kube's strategies check once the object is
// valid: a policy's paramKind, every object of it; a binding's paramRef,
// the objects it names of its policy's paramKind, or of every resource
// when the policy is missing. system:masters is not checked, nor an
// update of a policy that keeps its paramKind; an update of a binding
// with a paramRef is checked whatever it changes, as in kube (D.12).
func TestWriterMustReadTheParameters_D12(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked []string
	canRead := map[string]bool{"configmaps": true}
	authorizer := authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		if a.Verb != "get" || a.APIGroup == "admissionregistration.k8s.io" {
			return authz.Allow, "", nil
		}
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, fmt.Sprintf("%s %s %s/%s/%s %s/%s", a.User.Name, a.Verb, a.APIGroup, a.APIVersion, a.Resource, a.Namespace, a.Name))
		if canRead[a.Resource] {
			return authz.Allow, "", nil
		}
		return authz.NoOpinion, "", nil
	})
	srv := apiservertest.Start(t, apiservertest.WithUsers(map[string]authn.User{
		"pol": {Name: "pol", Groups: []string{authn.AllAuthenticated}}}, authorizer))
	pol := map[string]string{"Authorization": "Bearer pol"}
	policy := func(kind, param string) string {
		return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"p-` + strings.ToLower(param) + `"},"spec":{` +
			`"paramKind":{"apiVersion":"v1","kind":"` + param + `"},"matchConstraints":{"resourceRules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}]},`
	}
	vap := func(param string) string {
		return policy("ValidatingAdmissionPolicy", param) + `"validations":[{"expression":"true"}]}}`
	}
	mapol := func(param string) string {
		return policy("MutatingAdmissionPolicy", param) + `"reinvocationPolicy":"Never","mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{}"}}]}}`
	}
	const user = `user &{pol  [system:authenticated] map[]} `
	for _, tt := range []struct {
		resource, kind, body string
	}{
		{"validatingadmissionpolicies", "ValidatingAdmissionPolicy", vap("Secret")},
		{"mutatingadmissionpolicies", "MutatingAdmissionPolicy", mapol("Secret")},
	} {
		code, body := rt.Do(t, srv, http.MethodPost, group+tt.resource, tt.body, pol)
		rt.WantInvalid(t, code, body, tt.kind+".admissionregistration.k8s.io", "p-secret", rt.Cause(metav1.CauseTypeForbidden, "spec.paramKind",
			`Forbidden: `+user+`must have "get" permission on all objects of the referenced paramKind (kind=Secret, apiVersion=v1)`))
		if code, body := rt.Do(t, srv, http.MethodPost, group+tt.resource, tt.body, nil); code != http.StatusCreated {
			t.Fatalf("system:masters creates %s: %d %s", tt.resource, code, body)
		}
	}
	mu.Lock()
	if len(asked) == 0 || asked[0] != "pol get /v1/secrets */*" {
		t.Errorf("asked %+v, want a get of every secret", asked)
	}
	asked = nil
	mu.Unlock()
	for _, tt := range []struct{ resource, body string }{
		{"validatingadmissionpolicies", vap("ConfigMap")}, {"mutatingadmissionpolicies", mapol("ConfigMap")},
	} {
		if code, body := rt.Do(t, srv, http.MethodPost, group+tt.resource, tt.body, pol); code != http.StatusCreated {
			t.Fatalf("a reader of configmaps creates %s: %d %s", tt.resource, code, body)
		}
	}
	binding := func(kind, name, policy, ref string) string {
		actions := ""
		if kind == "ValidatingAdmissionPolicyBinding" {
			actions = `,"validationActions":["Deny"]`
		}
		return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"},"spec":{"policyName":"` + policy +
			`","paramRef":{"name":"` + ref + `","namespace":"kube-system","parameterNotFoundAction":"Deny"}` + actions + `}}`
	}
	refErr := rt.Cause(metav1.CauseTypeForbidden, "spec.paramRef", `Forbidden: `+user+`does not have "get" permission on the object referenced by paramRef`)
	for _, tt := range []struct{ resource, kind string }{
		{"validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding"}, {"mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding"},
	} {
		code, body := rt.Do(t, srv, http.MethodPost, group+tt.resource, binding(tt.kind, "b", "p-secret", "db"), pol)
		rt.WantInvalid(t, code, body, tt.kind+".admissionregistration.k8s.io", "b", refErr)
		code, body = rt.Do(t, srv, http.MethodPost, group+tt.resource, binding(tt.kind, "b", "missing", "db"), pol)
		rt.WantInvalid(t, code, body, tt.kind+".admissionregistration.k8s.io", "b", rt.Cause(metav1.CauseTypeForbidden, "spec.paramRef",
			`Forbidden: unable to get policy missing to determine minimum required permissions and `+user+`does not have "get" permission for all groups, versions and resources`))
		if code, body := rt.Do(t, srv, http.MethodPost, group+tt.resource, binding(tt.kind, "b", "p-configmap", "cm"), pol); code != http.StatusCreated {
			t.Fatalf("a reader of configmaps binds to them: %d %s", code, body)
		}
		patch := map[string]string{"Authorization": "Bearer pol", "Content-Type": "application/merge-patch+json"}
		code, body = rt.Do(t, srv, http.MethodPatch, group+tt.resource+"/b", `{"spec":{"policyName":"p-secret"}}`, patch)
		rt.WantInvalid(t, code, body, tt.kind+".admissionregistration.k8s.io", "b", refErr)
		if code, body := rt.Do(t, srv, http.MethodPatch, group+tt.resource+"/b", `{"metadata":{"labels":{"a":"b"}}}`, patch); code != http.StatusOK {
			t.Fatalf("an update that keeps the parameters: %d %s", code, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) < 4 || asked[2] != "pol get /v1/secrets kube-system/db" || asked[3] != "pol get */*/* kube-system/db" {
		t.Errorf("asked %+v, want a get of kube-system/db as a secret, then as anything", asked)
	}
}
