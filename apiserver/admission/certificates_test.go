package admission

import (
	"context"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

func TestApprovalNeedsApproveOnTheSigner_H1(t *testing.T) {
	// allowed: user -> the signers names it may approve.
	allowed := map[string][]string{"exact": {"example.com/a"}, "domain": {"example.com/*"}}
	az := authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		if a.Verb != "approve" || a.Resource != "signers" || a.APIGroup != "certificates.k8s.io" || a.APIVersion != "*" {
			return authz.NoOpinion, "", nil
		}
		for _, n := range allowed[a.User.Name] {
			if n == a.Name {
				return authz.Allow, "", nil
			}
		}
		return authz.NoOpinion, "", nil
	})
	p := CertificateApproval().(*signerCheck)
	p.SetAuthorizer(az)
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "example.com/a"}}
	for _, tc := range []struct {
		user, sub string
		ok        bool
	}{{"exact", "approval", true}, {"domain", "approval", true}, {"nobody", "approval", false}, {"nobody", "", true}} {
		err := p.Validate(context.Background(), &apiserver.AdmissionAttributes{Operation: apiserver.Update, Resource: apiserver.CertificateSigningRequestsGVR,
			Subresource: tc.sub, Name: "x", User: authn.User{Name: tc.user}, Object: csr, OldObject: csr})
		if tc.ok != (err == nil) {
			t.Errorf("%s on %q: err = %v, want ok %v", tc.user, tc.sub, err, tc.ok)
		}
		if err != nil && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user not permitted to approve requests with signerName "example.com/a"`)) {
			t.Errorf("err = %v, want kube's 403", err)
		}
	}
}
