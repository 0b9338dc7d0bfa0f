package admission

import (
	"context"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/internal/csrpem"
)

// The certificate plugins of kube-apiserver (H.1). Approving a
// CertificateSigningRequest takes "approve" on the signer, signing it
// "sign", both as RBAC sees them: the verb on the resource "signers" of
// certificates.k8s.io named after the signerName, or after its domain and
// "/*".

// CertificateApproval refuses an update of the approval subresource by a
// user who may not approve for the request's signer.
func CertificateApproval() apiserver.Admission {
	return &signerCheck{verb: "approve", applies: func(a *apiserver.AdmissionAttributes) bool {
		return a.Operation == apiserver.Update && a.Subresource == "approval"
	}}
}

// CertificateSigning refuses an update of the status subresource that
// changes the certificate or the conditions by a user who may not sign for
// the request's signer.
func CertificateSigning() apiserver.Admission {
	return &signerCheck{verb: "sign", applies: func(a *apiserver.AdmissionAttributes) bool {
		if a.Operation != apiserver.Update || a.Subresource != "status" {
			return false
		}
		csr, ok1 := a.Object.(*certificatesv1.CertificateSigningRequest)
		old, ok2 := a.OldObject.(*certificatesv1.CertificateSigningRequest)
		return !ok1 || !ok2 || string(csr.Status.Certificate) != string(old.Status.Certificate) ||
			!apiequality.Semantic.DeepEqual(csr.Status.Conditions, old.Status.Conditions)
	}}
}

// signerCheck is the approval and signing plugins: verb on the signer of
// the stored request, checked when applies says so.
type signerCheck struct {
	verb    string
	applies func(a *apiserver.AdmissionAttributes) bool
	authz   authz.Authorizer
}

var (
	_ apiserver.AdmissionValidator = (*signerCheck)(nil)
	_ apiserver.WantsAuthorizer    = (*signerCheck)(nil)
)

// SetAuthorizer implements apiserver.WantsAuthorizer.
func (p *signerCheck) SetAuthorizer(a authz.Authorizer) { p.authz = a }

// Admit changes nothing: the plugin only validates.
func (p *signerCheck) Admit(context.Context, *apiserver.AdmissionAttributes) error { return nil }

func (p *signerCheck) Validate(ctx context.Context, a *apiserver.AdmissionAttributes) error {
	if a.Resource.GroupResource() != apiserver.CertificateSigningRequestsGVR.GroupResource() || !p.applies(a) {
		return nil
	}
	old, ok := a.OldObject.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return forbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.OldObject))
	}
	signer := old.Spec.SignerName
	if !AuthorizedForSigner(ctx, p.authz, a.User, p.verb, signer) {
		return forbidden(a, fmt.Errorf("user not permitted to %s requests with signerName %q", p.verb, signer))
	}
	return nil
}

// AuthorizedForSigner reports whether user may do verb ("approve",
// "sign") for signerName: on the signer itself, or on every signer of its
// domain ("DOMAIN/*"). An authorizer's error counts as no.
func AuthorizedForSigner(ctx context.Context, az authz.Authorizer, user authn.User, verb, signerName string) bool {
	if az == nil {
		return false
	}
	domain, _, _ := strings.Cut(signerName, "/")
	for _, name := range []string{signerName, domain + "/*"} {
		d, _, err := az.Authorize(ctx, authz.Attributes{User: user, Verb: verb, APIGroup: certificatesv1.GroupName, APIVersion: "*",
			Resource: "signers", Name: name, ResourceRequest: true})
		if err == nil && d == authz.Allow {
			return true
		}
	}
	return false
}

// CertificateSubjectRestriction refuses a new request to the
// kubernetes.io/kube-apiserver-client signer for a certificate in the
// system:masters group.
func CertificateSubjectRestriction() apiserver.Admission { return subjectRestriction{} }

type subjectRestriction struct{}

var _ apiserver.AdmissionValidator = subjectRestriction{}

func (subjectRestriction) Admit(context.Context, *apiserver.AdmissionAttributes) error { return nil }

func (subjectRestriction) Validate(_ context.Context, a *apiserver.AdmissionAttributes) error {
	if a.Operation != apiserver.Create || a.Subresource != "" || a.Resource.GroupResource() != apiserver.CertificateSigningRequestsGVR.GroupResource() {
		return nil
	}
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return forbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.Object))
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return nil
	}
	req, err := csrpem.Parse(csr.Spec.Request)
	if err != nil {
		return forbidden(a, fmt.Errorf("failed to parse CSR: %v", err))
	}
	for _, g := range req.Subject.Organization {
		if g == "system:masters" {
			return forbidden(a, fmt.Errorf("use of %s signer with system:masters group is not allowed", certificatesv1.KubeAPIServerClientSignerName))
		}
	}
	return nil
}
