package csrsigning

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Signers are the signer names kubegate signs for, in the order
// docs/kubernetes-behaviour.md H.3 lists them. kubernetes.io/legacy-unknown
// is not one of them: its requests are never signed.
var Signers = []string{
	certificatesv1.KubeAPIServerClientSignerName,
	certificatesv1.KubeAPIServerClientKubeletSignerName,
	certificatesv1.KubeletServingSignerName,
}

// The errors of the signers' rules, worded as Kubernetes words them: they
// become the message of a CSR's Failed condition (H.3).
var (
	errOrganizationNotNodes = errors.New("subject organization is not system:nodes")
	//lint:ignore ST1005 the message is Kubernetes' own, which clients may match
	errCommonNameNotNode = errors.New("subject common name does not begin with system:node:")
	errNeedDNSOrIP       = errors.New("DNS or IP subjectAltName is required")
	errDNSSAN            = errors.New("DNS subjectAltNames are not allowed")
	//lint:ignore ST1005 the message is Kubernetes' own, which clients may match
	errEmailSAN = errors.New("Email subjectAltNames are not allowed")
	errIPSAN    = errors.New("IP subjectAltNames are not allowed")
	errURISAN   = errors.New("URI subjectAltNames are not allowed")
)

// The usages a kubelet's certificates must have, exactly: one of the two
// sets of each (key encipherment only matters to RSA keys).
var (
	kubeletClientUsages       = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth)
	kubeletClientUsagesNoRSA  = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)
	kubeletServingUsages      = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth)
	kubeletServingUsagesNoRSA = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth)
)

// Check applies the rules of signerName to a parsed request and its
// spec.usages (H.3). recognized is false for a signer kubegate does not
// sign for (legacy-unknown among them): such a request is left alone. A
// recognized request that breaks a rule returns the rule's error.
func Check(signerName string, req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) (recognized bool, err error) {
	switch signerName {
	case certificatesv1.KubeAPIServerClientSignerName:
		return true, checkAPIServerClientUsages(usages)
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		return true, CheckKubeletClient(req, usages)
	case certificatesv1.KubeletServingSignerName:
		return true, checkKubeletServing(req, usages)
	}
	return false, nil
}

// checkAPIServerClientUsages: client auth is required; digital signature
// and key encipherment are allowed; nothing else is.
func checkAPIServerClientUsages(usages []certificatesv1.KeyUsage) error {
	client := false
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		case certificatesv1.UsageClientAuth:
			client = true
		default:
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !client {
		return fmt.Errorf("missing required usage for client certificate: %s", certificatesv1.UsageClientAuth)
	}
	return nil
}

// CheckKubeletClient is the rule of kubernetes.io/kube-apiserver-client-kubelet,
// which the approver also applies (H.4): O exactly [system:nodes], no SAN
// of any kind, a CN that begins with system:node:, and the kubelet client
// usages exactly.
func CheckKubeletClient(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return errOrganizationNotNodes
	}
	switch {
	case len(req.DNSNames) > 0:
		return errDNSSAN
	case len(req.EmailAddresses) > 0:
		return errEmailSAN
	case len(req.IPAddresses) > 0:
		return errIPSAN
	case len(req.URIs) > 0:
		return errURISAN
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") {
		return errCommonNameNotNode
	}
	if set := sets.New(usages...); !set.Equal(kubeletClientUsages) && !set.Equal(kubeletClientUsagesNoRSA) {
		return fmt.Errorf("usages did not match %v", sortedUsages(kubeletClientUsages))
	}
	return nil
}

// checkKubeletServing is the rule of kubernetes.io/kubelet-serving: O
// exactly [system:nodes], at least one DNS or IP SAN and no email or URI
// SAN, the kubelet serving usages exactly, and a CN that begins with
// system:node:.
func checkKubeletServing(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return errOrganizationNotNodes
	}
	switch {
	case len(req.DNSNames) == 0 && len(req.IPAddresses) == 0:
		return errNeedDNSOrIP
	case len(req.EmailAddresses) > 0:
		return errEmailSAN
	case len(req.URIs) > 0:
		return errURISAN
	}
	if set := sets.New(usages...); !set.Equal(kubeletServingUsages) && !set.Equal(kubeletServingUsagesNoRSA) {
		return fmt.Errorf("usages did not match %v", sortedUsages(kubeletServingUsages))
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") {
		return errCommonNameNotNode
	}
	return nil
}

// sortedUsages lists a set of usages in order, as the rules' messages
// print them.
func sortedUsages(s sets.Set[certificatesv1.KeyUsage]) []string {
	out := make([]string, 0, s.Len())
	for u := range s {
		out = append(out, string(u))
	}
	slices.Sort(out)
	return out
}
