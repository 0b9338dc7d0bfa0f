// Package csrpem reads a CertificateSigningRequest's spec.request as
// kube-apiserver does, for the API server, its admission plugins, the
// signer and the approver (docs/kubernetes-behaviour.md H.1).
package csrpem

import (
	"crypto/x509"
	"errors"

	"github.com/kubegate/kubegate/internal/pemutil"
)

// Parse decodes the first PEM block of data, which must be a CERTIFICATE
// REQUEST; its error for anything else is kube-apiserver's. It does not
// check the request's signature.
func Parse(data []byte) (*x509.CertificateRequest, error) {
	block := pemutil.First(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}
