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

func TestClusterTrustBundleAttest_H8(t *testing.T) {
	az := authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		if a.User.Name == "attester" && a.Verb == "attest" && a.Resource == "signers" && a.Name == "example.com/*" {
			return authz.Allow, "", nil
		}
		return authz.NoOpinion, "", nil
	})
	p := ClusterTrustBundleAttest().(*attestCheck)
	p.SetAuthorizer(az)
	gvr := certificatesv1.SchemeGroupVersion.WithResource("clustertrustbundles")
	bundle := func(signer string, labels map[string]string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: labels},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: "pem"}}
	}
	old := bundle("example.com/s", nil)
	withOwner := old.DeepCopy()
	withOwner.Finalizers = []string{"f"}
	for _, tc := range []struct {
		name, user string
		op         apiserver.Operation
		obj        *certificatesv1.ClusterTrustBundle
		ok         bool
	}{
		{"attester creates", "attester", apiserver.Create, old, true},
		{"other creates", "nobody", apiserver.Create, old, false},
		{"no signer", "nobody", apiserver.Create, bundle("", nil), true},
		{"other changes labels", "nobody", apiserver.Update, bundle("example.com/s", map[string]string{"a": "b"}), false},
		{"other adds a finalizer", "nobody", apiserver.Update, withOwner, true},
	} {
		a := &apiserver.AdmissionAttributes{Operation: tc.op, Resource: gvr, Name: "b", User: authn.User{Name: tc.user}, Object: tc.obj}
		if tc.op == apiserver.Update {
			a.OldObject = old
		}
		err := p.Validate(context.Background(), a)
		if tc.ok != (err == nil) {
			t.Errorf("%s: err = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user not permitted to attest for signerName "example.com/s"`)) {
			t.Errorf("%s: err = %v, want kube's 403", tc.name, err)
		}
	}
}
