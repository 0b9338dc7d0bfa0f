package admission

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authz"
)

// ClusterTrustBundleAttest refuses a ClusterTrustBundle of a signer, on
// a create or an update that changes more than its owner references and
// finalizers, by a user who may not "attest" for that signer (H.8).
func ClusterTrustBundleAttest() apiserver.Admission { return &attestCheck{} }

type attestCheck struct{ authz authz.Authorizer }

var (
	_ apiserver.AdmissionValidator = (*attestCheck)(nil)
	_ apiserver.WantsAuthorizer    = (*attestCheck)(nil)
)

// SetAuthorizer implements apiserver.WantsAuthorizer.
func (p *attestCheck) SetAuthorizer(a authz.Authorizer) { p.authz = a }

// Admit changes nothing: the plugin only validates.
func (p *attestCheck) Admit(context.Context, *apiserver.AdmissionAttributes) error { return nil }

func (p *attestCheck) Validate(ctx context.Context, a *apiserver.AdmissionAttributes) error {
	if a.Resource.GroupResource() != certificatesv1.SchemeGroupVersion.WithResource("clustertrustbundles").GroupResource() ||
		a.Operation != apiserver.Create && a.Operation != apiserver.Update {
		return nil
	}
	b, ok := a.Object.(*certificatesv1.ClusterTrustBundle)
	if !ok {
		return forbidden(a, fmt.Errorf("expected type ClusterTrustBundle, got: %T", a.OldObject))
	}
	if b.Spec.SignerName == "" || a.Operation == apiserver.Update && a.OldObject != nil && apiserver.OnlyGCFieldsChange(b, a.OldObject) {
		return nil
	}
	if !AuthorizedForSigner(ctx, p.authz, a.User, "attest", b.Spec.SignerName) {
		return forbidden(a, fmt.Errorf("user not permitted to attest for signerName %q", b.Spec.SignerName))
	}
	return nil
}
