// Package certificates is the certificates.k8s.io API group:
// CertificateSigningRequests (certificates.k8s.io/v1), with
// kube-apiserver's strategy and validation (H.1): the requester's
// identity goes into the spec on create, whatever the body says; the spec
// never changes afterwards; the approval subresource writes the Approved
// and Denied conditions, the status subresource the certificate and the
// other conditions. Who may approve or sign for a signer is checked by the
// certificate admission plugins (apiserver/admission).
package certificates

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/internal/csrpem"
)

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{{GVR: apiserver.CertificateSigningRequestsGVR, Kind: "CertificateSigningRequest", Singular: "certificatesigningrequest",
		ShortNames: []string{"csr"}, ValidateName: anyName,
		Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource(), "approval": apiserver.ApprovalSubresource()},
		Fields:       csrFields, PrepareCreate: prepareCSRCreate, Prepare: prepareCSR, PrepareSubresource: prepareCSRSubresource,
		Validate: validateCSRObject, ValidateStatus: validateCSRStatus, ValidateApproval: validateCSRApproval,
		ResetStatus: resetCSRStatus, ResetApproval: resetCSRApproval, Table: csrTable,
		// What each write resets is nobody's in managedFields.
		Untracked: map[string]*fieldpath.Set{
			"":         fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("status")),
			"status":   fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("status", "conditions")),
			"approval": fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("status", "certificate")),
		}}, clusterTrustBundles(), podCertificateRequests()}
}

// anyName accepts every name, as kube-apiserver's rule for CSR names
// does; whether the name can be a path segment is checked after the
// kind's rules (H.1).
func anyName(string, bool) []string { return nil }

func csrFields(obj runtime.Object, set fields.Set) {
	set["spec.signerName"] = obj.(*certificatesv1.CertificateSigningRequest).Spec.SignerName
}

// prepareCSRCreate makes the requester's identity the request's, and
// clears the status (H.1).
func prepareCSRCreate(obj runtime.Object, user authn.User) {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	csr.Spec.Username, csr.Spec.UID = user.Name, user.UID
	csr.Spec.Groups = slices.Clone(user.Groups)
	csr.Spec.Extra = nil
	if len(user.Extra) > 0 {
		csr.Spec.Extra = map[string]certificatesv1.ExtraValue{}
		for k, v := range user.Extra {
			csr.Spec.Extra[k] = slices.Clone(v)
		}
	}
	csr.Status = certificatesv1.CertificateSigningRequestStatus{}
}

// prepareCSR keeps the stored spec on every update: what a body says
// about it is dropped without an error, as kube-apiserver drops it.
func prepareCSR(obj, old runtime.Object) {
	if old == nil {
		return
	}
	obj.(*certificatesv1.CertificateSigningRequest).Spec = old.(*certificatesv1.CertificateSigningRequest).Spec
}

func resetCSRStatus(obj, old runtime.Object) {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	csr.Status = certificatesv1.CertificateSigningRequestStatus{}
	if old != nil {
		csr.Status = old.(*certificatesv1.CertificateSigningRequest).Status
	}
}

// resetCSRApproval copies the conditions of from into obj: all that the
// approval subresource writes.
func resetCSRApproval(obj, from runtime.Object) {
	obj.(*certificatesv1.CertificateSigningRequest).Status.Conditions = from.(*certificatesv1.CertificateSigningRequest).Status.Conditions
}

// prepareCSRSubresource finishes an update of the status or approval
// subresource: a status update cannot change the Approved and Denied
// conditions it keeps (in their number), and every condition without
// timestamps gets now, its last transition the old one's when the
// condition is unchanged (H.1).
func prepareCSRSubresource(sub string, obj, old runtime.Object, now time.Time) {
	csr, oldCSR := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	if sub == "status" {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			oldIdx, newIdx := conditionIndices(oldCSR, t), conditionIndices(csr, t)
			if len(oldIdx) != len(newIdx) {
				continue
			}
			for i, o := range oldIdx {
				csr.Status.Conditions[newIdx[i]] = oldCSR.Status.Conditions[o]
			}
		}
	}
	stamp := metav1.NewTime(now.Truncate(time.Second))
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = stamp
		}
		if !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = stamp
		for _, o := range oldCSR.Status.Conditions {
			if o.Type == c.Type && o.Status == c.Status && !o.LastTransitionTime.IsZero() {
				c.LastTransitionTime = o.LastTransitionTime
				break
			}
		}
	}
}

func conditionIndices(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []int {
	var idx []int
	for i, c := range csr.Status.Conditions {
		if c.Type == t {
			idx = append(idx, i)
		}
	}
	return idx
}

// csrOptions are the relaxations of CSR validation: what the subresource
// being written may set, and what an old object already holds.
type csrOptions struct {
	settingApproval    bool // the approval subresource
	settingCertificate bool // the status subresource
	// The rest tolerate stored data that newer rules refuse; a request
	// both approved and denied is tolerated by approvedOrDenied instead.
	legacySigner, duplicateConditions, emptyConditionType,
	arbitraryCertificate, unknownUsages, duplicateUsages bool
}

func csrValidationOptions(csr, old *certificatesv1.CertificateSigningRequest) csrOptions {
	if old == nil {
		return csrOptions{}
	}
	o := csrOptions{legacySigner: old.Spec.SignerName == certificatesv1beta1.LegacyUnknownSignerName}
	seen := map[certificatesv1.RequestConditionType]bool{}
	for _, c := range old.Status.Conditions {
		o.duplicateConditions = o.duplicateConditions || seen[c.Type]
		o.emptyConditionType = o.emptyConditionType || c.Type == ""
		seen[c.Type] = true
	}
	o.arbitraryCertificate = bytes.Equal(csr.Status.Certificate, old.Status.Certificate) || checkCertificatePEM(old.Status.Certificate) != nil
	usages := map[certificatesv1.KeyUsage]bool{}
	for _, u := range old.Spec.Usages {
		o.unknownUsages = o.unknownUsages || !validUsages[u]
		o.duplicateUsages = o.duplicateUsages || usages[u]
		usages[u] = true
	}
	return o
}

func validateCSRObject(obj, old runtime.Object) field.ErrorList {
	return validateCSRWith(obj, old, func(*csrOptions) {})
}

func validateCSRStatus(obj, old runtime.Object) field.ErrorList {
	return validateCSRWith(obj, old, func(o *csrOptions) { o.settingCertificate = true })
}

func validateCSRApproval(obj, old runtime.Object) field.ErrorList {
	return validateCSRWith(obj, old, func(o *csrOptions) { o.settingApproval = true })
}

func validateCSRWith(obj, old runtime.Object, set func(*csrOptions)) field.ErrorList {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	var oldCSR *certificatesv1.CertificateSigningRequest
	if old != nil {
		oldCSR = old.(*certificatesv1.CertificateSigningRequest)
	}
	opts := csrValidationOptions(csr, oldCSR)
	set(&opts)
	errs := validateCSRSpec(csr, opts)
	errs = append(errs, validateCSRConditions(csr, opts)...)
	if !opts.arbitraryCertificate {
		if err := checkCertificatePEM(csr.Status.Certificate); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
		}
	}
	if oldCSR != nil {
		errs = append(errs, validateCSRChanges(csr, oldCSR, opts)...)
	}
	// Kubernetes enforces the exclusion of Approved and Denied with its
	// declarative rules, whose errors come last.
	errs = append(errs, approvedOrDenied(csr, oldCSR)...)
	return errs
}

// validUsages are the key usages a request may ask for.
var validUsages = map[certificatesv1.KeyUsage]bool{}

func init() {
	for _, u := range []certificatesv1.KeyUsage{certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature, certificatesv1.UsageContentCommitment,
		certificatesv1.UsageKeyEncipherment, certificatesv1.UsageKeyAgreement, certificatesv1.UsageDataEncipherment, certificatesv1.UsageCertSign,
		certificatesv1.UsageCRLSign, certificatesv1.UsageEncipherOnly, certificatesv1.UsageDecipherOnly, certificatesv1.UsageAny,
		certificatesv1.UsageServerAuth, certificatesv1.UsageClientAuth, certificatesv1.UsageCodeSigning, certificatesv1.UsageEmailProtection,
		certificatesv1.UsageSMIME, certificatesv1.UsageIPsecEndSystem, certificatesv1.UsageIPsecTunnel, certificatesv1.UsageIPsecUser,
		certificatesv1.UsageTimestamping, certificatesv1.UsageOCSPSigning, certificatesv1.UsageMicrosoftSGC, certificatesv1.UsageNetscapeSGC} {
		validUsages[u] = true
	}
}

func sortedUsages() []string {
	var out []string
	for u := range validUsages {
		out = append(out, string(u))
	}
	slices.Sort(out)
	return out
}

// minExpirationSeconds is the shortest lifetime a request may ask for.
const minExpirationSeconds = 600

func validateCSRSpec(csr *certificatesv1.CertificateSigningRequest, opts csrOptions) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if err := checkCSRSignature(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), csr.Spec.Request, err.Error()))
	}
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), ""))
	}
	if !opts.unknownUsages {
		for i, u := range csr.Spec.Usages {
			if !validUsages[u] {
				errs = append(errs, field.NotSupported(spec.Child("usages").Index(i), u, sortedUsages()))
			}
		}
	}
	if !opts.duplicateUsages {
		seen := map[certificatesv1.KeyUsage]bool{}
		for i, u := range csr.Spec.Usages {
			if seen[u] {
				errs = append(errs, field.Duplicate(spec.Child("usages").Index(i), u))
			}
			seen[u] = true
		}
	}
	if !opts.legacySigner && csr.Spec.SignerName == certificatesv1beta1.LegacyUnknownSignerName {
		errs = append(errs, field.Invalid(spec.Child("signerName"), csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, validateSignerName(spec.Child("signerName"), csr.Spec.SignerName)...)
	}
	if s := csr.Spec.ExpirationSeconds; s != nil && *s < minExpirationSeconds {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *s, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	return errs
}

func checkCSRSignature(data []byte) error {
	req, err := csrpem.Parse(data)
	if err != nil {
		return err
	}
	return req.CheckSignature()
}

// checkCertificatePEM accepts nothing, or PEM CERTIFICATE blocks without
// headers, each holding certificates that parse.
func checkCertificatePEM(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		blocks++
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// validateSignerName: DOMAIN/PATH, a domain of at least two DNS labels and
// a path of dot-separated DNS subdomains, within kube's lengths.
func validateSignerName(path *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	segments := strings.Split(name, "/")
	if len(segments) != 2 {
		return field.ErrorList{field.Invalid(path, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	const maxDomain = validation.DNS1123SubdomainMaxLength
	if len(segments[0]) > maxDomain {
		errs = append(errs, field.TooLong(path, "", maxDomain))
	}
	domainLabels := strings.Split(segments[0], ".")
	for _, l := range domainLabels {
		msgs := validation.IsDNS1123Label(l)
		for _, m := range msgs {
			errs = append(errs, field.Invalid(path, segments[0], fmt.Sprintf("validating label %q: %s", l, m)))
		}
		if len(msgs) > 0 {
			break
		}
	}
	if len(domainLabels) < 2 {
		errs = append(errs, field.Invalid(path, segments[0], "should be a domain with at least two segments separated by dots"))
	}
	for _, l := range strings.Split(segments[1], ".") {
		msgs := validation.IsDNS1123Subdomain(l)
		for _, m := range msgs {
			errs = append(errs, field.Invalid(path, segments[1], fmt.Sprintf("validating label %q: %s", l, m)))
		}
		if len(msgs) > 0 {
			break
		}
	}
	if maxName := maxDomain + validation.DNS1123SubdomainMaxLength + validation.DNS1123LabelMaxLength + 2; len(name) > maxName {
		errs = append(errs, field.TooLong(path, "", maxName))
	}
	return errs
}

// finalConditions are the condition types whose status can only be True
// and that no update removes.
var finalConditions = []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed}

func validateCSRConditions(csr *certificatesv1.CertificateSigningRequest, opts csrOptions) field.ErrorList {
	path := field.NewPath("status", "conditions")
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	for i, c := range csr.Status.Conditions {
		if !opts.emptyConditionType && c.Type == "" {
			errs = append(errs, field.Required(path.Index(i).Child("type"), ""))
		}
		allowed := []string{string(corev1.ConditionFalse), string(corev1.ConditionTrue), string(corev1.ConditionUnknown)}
		if slices.Contains(finalConditions, c.Type) {
			allowed = []string{string(corev1.ConditionTrue)}
		}
		switch {
		case c.Status == "":
			errs = append(errs, field.Required(path.Index(i).Child("status"), ""))
		case !slices.Contains(allowed, string(c.Status)):
			errs = append(errs, field.NotSupported(path.Index(i).Child("status"), c.Status, allowed))
		}
		if !opts.duplicateConditions {
			if seen[c.Type] {
				errs = append(errs, field.Duplicate(path.Index(i).Child("type"), c.Type))
			}
			seen[c.Type] = true
		}
	}
	return errs
}

// approvedOrDeniedUnion names the two conditions of which a request may
// hold one at most.
var approvedOrDeniedUnion = validate.NewUnionMembership(validate.NewUnionMember(`conditions[{"type": "Approved"}]`),
	validate.NewUnionMember(`conditions[{"type": "Denied"}]`))

// approvedOrDenied refuses a request both approved and denied, unless an
// update leaves its conditions as they were.
func approvedOrDenied(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	op := operation.Operation{Type: operation.Create}
	var oldConds []certificatesv1.CertificateSigningRequestCondition
	if old != nil {
		op.Type = operation.Update
		oldConds = old.Status.Conditions
		if apiequality.Semantic.DeepEqual(csr.Status.Conditions, oldConds) {
			return nil
		}
	}
	has := func(t certificatesv1.RequestConditionType) func([]certificatesv1.CertificateSigningRequestCondition) bool {
		return func(cs []certificatesv1.CertificateSigningRequestCondition) bool {
			return slices.ContainsFunc(cs, func(c certificatesv1.CertificateSigningRequestCondition) bool { return c.Type == t })
		}
	}
	return validate.ZeroOrOneOfUnion(context.Background(), op, field.NewPath("status", "conditions"), csr.Status.Conditions, oldConds,
		approvedOrDeniedUnion, has(certificatesv1.CertificateApproved), has(certificatesv1.CertificateDenied))
}

// validateCSRChanges: no update removes an Approved, Denied or Failed
// condition; only the approval subresource adds or changes Approved and
// Denied; only the status subresource sets the certificate, once.
func validateCSRChanges(csr, old *certificatesv1.CertificateSigningRequest, opts csrOptions) field.ErrorList {
	path := field.NewPath("status", "conditions")
	var errs field.ErrorList
	for _, t := range finalConditions {
		if len(findCSRConditions(csr, t)) < len(findCSRConditions(old, t)) {
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !opts.settingApproval {
		for _, t := range finalConditions[:2] {
			oldConds, newConds := findCSRConditions(old, t), findCSRConditions(csr, t)
			switch {
			case len(newConds) < len(oldConds):
			case len(newConds) > len(oldConds):
				errs = append(errs, field.Forbidden(path, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !apiequality.Semantic.DeepEqual(oldConds, newConds):
				errs = append(errs, field.Forbidden(path, fmt.Sprintf("updates may not modify a condition of type %q\n%v", t, diff.Diff(oldConds, newConds))))
			}
		}
	}
	if !bytes.Equal(csr.Status.Certificate, old.Status.Certificate) {
		cert := field.NewPath("status", "certificate")
		if !opts.settingCertificate {
			errs = append(errs, field.Forbidden(cert, "updates may not set certificate content"))
		} else if len(old.Status.Certificate) > 0 {
			errs = append(errs, field.Forbidden(cert, "updates may not modify existing certificate content"))
		}
	}
	return errs
}

func findCSRConditions(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}

// csrTable has the columns of kubectl get csr, described (as kube
// describes them) by certificates.k8s.io/v1beta1's field docs.
var csrTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn, apiserver.AgeColumn,
		{Name: "SignerName", Type: "string", Description: certificatesv1beta1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]},
		{Name: "Requestor", Type: "string", Description: certificatesv1beta1.CertificateSigningRequestSpec{}.SwaggerDoc()["request"]},
		{Name: "RequestedDuration", Type: "string", Description: certificatesv1beta1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]},
		{Name: "Condition", Type: "string", Description: certificatesv1beta1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]},
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		csr := obj.(*certificatesv1.CertificateSigningRequest)
		signer := "<none>"
		if csr.Spec.SignerName != "" {
			signer = csr.Spec.SignerName
		}
		requested := "<none>"
		if s := csr.Spec.ExpirationSeconds; s != nil {
			requested = duration.HumanDuration(time.Duration(*s) * time.Second)
		}
		return []any{csr.Name, apiserver.Age(csr.CreationTimestamp, now), signer, csr.Spec.Username, requested, CSRCondition(csr)}
	},
}

// CSRCondition is the CONDITION column of kubectl get csr: Denied,
// Approved or Pending, then ",Failed" and ",Issued" when they hold.
func CSRCondition(csr *certificatesv1.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	s := "Pending"
	switch {
	case denied:
		s = "Denied"
	case approved:
		s = "Approved"
	}
	if failed {
		s += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		s += ",Issued"
	}
	return s
}
