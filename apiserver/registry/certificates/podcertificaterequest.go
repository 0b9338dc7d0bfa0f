package certificates

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// The bounds kube-apiserver puts on a pod certificate request (H.8).
const (
	maxKeyMaterialSize   = 10 * 1024
	minMaxExpiration     = 60 * 60
	maxMaxExpiration     = 91 * 24 * 60 * 60
	kubernetesMaxExpiry  = 24 * 60 * 60
	maxUIDLength         = 128
	pcrConditionsMessage = `There may be at most one condition with type "Issued", "Denied", or "Failed"`
)

// PodCertificateRequestsGVR are the requests kubelets make for their
// pods' certificates (H.8).
var PodCertificateRequestsGVR = certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests")

// podCertificateRequests: a request names its pod, service account and
// node, and a key; its spec never changes, an update must name the
// version it replaces, and the signer answers through the status.
func podCertificateRequests() *apiserver.Resource {
	return &apiserver.Resource{GVR: PodCertificateRequestsGVR, Kind: "PodCertificateRequest", Singular: "podcertificaterequest", Namespaced: true,
		ValidateName: apivalidation.NameIsDNSSubdomain, RequireResourceVersion: true, Defaults: defaultPodCertificateRequest,
		StoredAs:     certificatesv1beta1.SchemeGroupVersion.WithKind("PodCertificateRequest"),
		Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()},
		Validate:     validatePodCertificateRequest, ValidateStatus: validatePodCertificateRequestStatus,
		ResetStatus: resetPodCertificateRequestStatus, Table: podCertificateRequestTable}
}

// defaultPodCertificateRequest: a day's certificate unless the request
// says otherwise.
func defaultPodCertificateRequest(obj runtime.Object) {
	if spec := &obj.(*certificatesv1.PodCertificateRequest).Spec; spec.MaxExpirationSeconds == nil {
		day := int32(kubernetesMaxExpiry)
		spec.MaxExpirationSeconds = &day
	}
}

func resetPodCertificateRequestStatus(obj, old runtime.Object) {
	r := obj.(*certificatesv1.PodCertificateRequest)
	r.Status = certificatesv1.PodCertificateRequestStatus{}
	if old != nil {
		r.Status = *old.(*certificatesv1.PodCertificateRequest).Status.DeepCopy()
	}
}

func validatePodCertificateRequest(obj, old runtime.Object) field.ErrorList {
	r := obj.(*certificatesv1.PodCertificateRequest)
	if old != nil {
		if !apiequality.Semantic.DeepEqual(r.Spec, old.(*certificatesv1.PodCertificateRequest).Spec) {
			return field.ErrorList{field.Invalid(field.NewPath("spec"), internalSpec(&r.Spec), "field is immutable")}
		}
		return nil
	}
	spec := &r.Spec
	p := field.NewPath("spec")
	errs := validateSignerName(p.Child("signerName"), spec.SignerName)
	for _, n := range []struct {
		field, name, uid, uidField string
	}{{"podName", spec.PodName, string(spec.PodUID), "podUID"}, {"serviceAccountName", spec.ServiceAccountName, string(spec.ServiceAccountUID), "serviceAccountUID"},
		{"nodeName", string(spec.NodeName), string(spec.NodeUID), "nodeUID"}} {
		errs = append(errs, invalidName(p.Child(n.field), n.name, apivalidation.NameIsDNSSubdomain(n.name, false))...)
		if n.uid == "" {
			errs = append(errs, field.Invalid(p.Child(n.uidField), n.uid, "must not be empty"))
		}
		if len(n.uid) > maxUIDLength {
			errs = append(errs, field.TooLong(p.Child(n.uidField), n.uid, maxUIDLength))
		}
	}
	exp := spec.MaxExpirationSeconds
	if exp == nil {
		return append(errs, field.Required(p.Child("maxExpirationSeconds"), "must be set"))
	}
	limit := int32(maxMaxExpiration)
	if host, _, _ := strings.Cut(spec.SignerName, "/"); host == "kubernetes.io" || strings.HasSuffix(host, ".kubernetes.io") {
		limit = kubernetesMaxExpiry
	}
	if *exp < minMaxExpiration || *exp > limit {
		errs = append(errs, field.Invalid(p.Child("maxExpirationSeconds"), exp, fmt.Sprintf("must be in the range [%d, %d]", minMaxExpiration, limit)))
	}
	// v1 has no pkixPublicKey and proofOfPossession: the stub request is
	// the key.
	if len(spec.StubPKCS10Request) == 0 {
		return append(errs, field.Invalid(p, field.OmitValueType{}, "exactly one of (stubPKCS10Request) or (pkixPublicKey, proofOfPossession) must be set"))
	}
	return append(errs, validateStubRequest(p.Child("stubPKCS10Request"), spec.StubPKCS10Request)...)
}

const keyTypes = "unknown public key type; supported types are Ed25519, ECDSA, and RSA"

// validateStubRequest: a PKCS#10 request of a supported key, whose
// contents are otherwise not looked at.
func validateStubRequest(p *field.Path, der []byte) field.ErrorList {
	if len(der) > maxKeyMaterialSize {
		return field.ErrorList{field.TooLong(p, der, maxKeyMaterialSize)}
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return field.ErrorList{field.Invalid(p, field.OmitValueType{}, "must be a valid PKCS#10 CSR")}
	}
	switch pub := req.PublicKey.(type) {
	case ed25519.PublicKey:
	case *ecdsa.PublicKey:
		if c := pub.Curve; c != elliptic.P256() && c != elliptic.P384() && c != elliptic.P521() {
			return field.ErrorList{field.Invalid(p, "curve "+c.Params().Name, "elliptic public keys must use curve P256, P384, or P521")}
		}
	case *rsa.PublicKey:
		if bits := pub.Size() * 8; bits != 3072 && bits != 4096 {
			return field.ErrorList{field.Invalid(p, fmt.Sprintf("%d-bit modulus", bits), "RSA keys must have modulus size 3072 or 4096")}
		}
	default:
		return field.ErrorList{field.Invalid(p, field.OmitValueType{}, keyTypes)}
	}
	return nil
}

// pcrSpec is a spec as kube-apiserver shows it in a message: its
// internal form, which has the fields of v1beta1 too, by Go names.
type pcrSpec struct {
	SignerName, PodName              string
	PodUID                           types.UID
	ServiceAccountName               string
	ServiceAccountUID                types.UID
	NodeName                         types.NodeName
	NodeUID                          types.UID
	MaxExpirationSeconds             *int32
	PKIXPublicKey, ProofOfPossession []byte
	StubPKCS10Request                []byte
	UnverifiedUserAnnotations        map[string]string
}

func internalSpec(s *certificatesv1.PodCertificateRequestSpec) pcrSpec {
	return pcrSpec{SignerName: s.SignerName, PodName: s.PodName, PodUID: s.PodUID, ServiceAccountName: s.ServiceAccountName,
		ServiceAccountUID: s.ServiceAccountUID, NodeName: s.NodeName, NodeUID: s.NodeUID, MaxExpirationSeconds: s.MaxExpirationSeconds,
		StubPKCS10Request: s.StubPKCS10Request, UnverifiedUserAnnotations: s.UnverifiedUserAnnotations}
}

var pcrTerminal = []string{certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied,
	certificatesv1.PodCertificateRequestConditionTypeFailed}

// validatePodCertificateRequestStatus: at most one of the known
// conditions, true; nothing changes once there is one; a denial or a
// failure carries nothing but its condition.
func validatePodCertificateRequestStatus(obj, old runtime.Object) field.ErrorList {
	status, oldStatus := &obj.(*certificatesv1.PodCertificateRequest).Status, &old.(*certificatesv1.PodCertificateRequest).Status
	var errs field.ErrorList
	known := 0
	for i, c := range status.Conditions {
		// kube names the condition's index as a field: conditions.[i]
		cp := field.NewPath("status", "conditions", fmt.Sprintf("[%d]", i))
		if !isOneOf(c.Type, pcrTerminal) {
			errs = append(errs, field.NotSupported(cp.Child("type"), c.Type, pcrTerminal))
			continue
		}
		if known++; known > 1 {
			errs = append(errs, field.Invalid(cp.Child("type"), c.Type, pcrConditionsMessage))
		}
		if c.Status != metav1.ConditionTrue {
			errs = append(errs, field.NotSupported(cp.Child("status"), c.Status, []metav1.ConditionStatus{metav1.ConditionTrue}))
		}
	}
	errs = append(errs, metav1validation.ValidateConditions(status.Conditions, field.NewPath("status", "conditions"))...)
	if len(errs) > 0 {
		return errs
	}
	if terminal(oldStatus, pcrTerminal...) {
		if !apiequality.Semantic.DeepEqual(status, oldStatus) {
			return field.ErrorList{field.Invalid(field.NewPath("status"), field.OmitValueType{}, "immutable after PodCertificateRequest is issued, denied, or failed")}
		}
		return nil
	}
	if terminal(status, certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed) &&
		!apiequality.Semantic.DeepEqual(*status, certificatesv1.PodCertificateRequestStatus{Conditions: status.Conditions}) {
		return field.ErrorList{field.Invalid(field.NewPath("status"), field.OmitValueType{},
			"non-condition status fields must be empty when denying or failing the PodCertificateRequest")}
	}
	return nil
}

func isOneOf(s string, list []string) bool {
	for _, l := range list {
		if s == l {
			return true
		}
	}
	return false
}

// terminal reports whether status has a true condition of one of types.
func terminal(status *certificatesv1.PodCertificateRequestStatus, types ...string) bool {
	for _, c := range status.Conditions {
		if c.Status == metav1.ConditionTrue && isOneOf(c.Type, types) {
			return true
		}
	}
	return false
}

// podCertificateRequestTable is kube's: the pod, its service account and
// node, the signer, the state and the user annotations.
var podCertificateRequestTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "PodName", Type: "string", Description: certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["podName"]},
		{Name: "ServiceAccountName", Type: "string", Description: certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["serviceAccountName"]},
		{Name: "NodeName", Type: "string", Description: certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["nodeName"]},
		{Name: "SignerName", Type: "string", Description: certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["signerName"]},
		{Name: "State", Type: "string", Description: "Is the request Pending, Issued, Denied, or Failed?"},
		{Name: "UnverifiedUserAnnotations", Type: "string", Description: certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["unverifiedUserAnnotations"]},
	},
	Cells: func(obj runtime.Object, _ time.Time) []any {
		r := obj.(*certificatesv1.PodCertificateRequest)
		state := "Pending"
		for _, c := range r.Status.Conditions {
			if isOneOf(c.Type, pcrTerminal) {
				state = c.Type
			}
		}
		return []any{r.Name, r.Spec.PodName, r.Spec.ServiceAccountName, string(r.Spec.NodeName), r.Spec.SignerName, state,
			labels.FormatLabels(r.Spec.UnverifiedUserAnnotations)}
	},
}
