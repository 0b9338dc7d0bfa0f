// Package csrsigning is kube-controller-manager's CSR signer: it signs the
// approved CertificateSigningRequests of the kubernetes.io signers for
// API clients and kubelets with the cluster CA, writing the certificate
// to status.certificate, and marks a request that breaks its signer's
// rules Failed (docs/kubernetes-behaviour.md H.3).
//
// The identity it runs as needs: certificatesigningrequests get, list,
// watch; certificatesigningrequests/status update; sign on the signers
// it signs for (kube's system:controller:certificate-controller role).
package csrsigning

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/internal/csrpem"
)

// Name is the controller's name in kube-controller-manager's
// --controllers flag, and ServiceAccount the one it runs as: the
// service account kube's default policy binds to
// system:controller:certificate-controller.
const (
	Name           = "csrsigning"
	ServiceAccount = "certificate-controller"
)

// DefaultDuration is the longest lifetime of a signed certificate when
// the manager is given none: a year, kube-controller-manager's
// --cluster-signing-duration default.
const DefaultDuration = 365 * 24 * time.Hour

// The lifetime policy (H.3): NotBefore is back-dated by backdate; a
// lifetime of at least short also ends backdate early, so that the
// certificate lives as long as asked; expirationSeconds shorter than
// minDuration are raised to it.
const (
	backdate    = 5 * time.Minute
	short       = 8 * time.Hour
	minDuration = 10 * time.Minute
)

// Reasons of the Failed condition the signer writes.
const ReasonSignerValidationFailure = "SignerValidationFailure"

// workers is how many requests are signed at once.
const workers = 2

// Descriptor runs the signer in the controller manager. Without the CA
// files it signs nothing and says so, as kube-controller-manager does
// when it has no signing files.
var Descriptor = controllers.Descriptor{Name: Name, ServiceAccount: ServiceAccount,
	New: func(c *controllers.Context) (controllers.Controller, error) {
		if c.SigningCertFile == "" || c.SigningKeyFile == "" {
			c.Logger.Warn("no cluster signing CA files: certificate signing requests are not signed")
			return controllers.Func(func(ctx context.Context) error { <-ctx.Done(); return nil }), nil
		}
		return New(c)
	}}

// Signer signs approved CertificateSigningRequests.
type Signer struct {
	client   kubernetes.Interface
	log      *slog.Logger
	now      func() time.Time
	duration time.Duration
	ca       *caFiles
	csrs     certificateslisters.CertificateSigningRequestLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
}

// New builds the signer from c; c's signing files must name a CA
// certificate (or a bundle holding it) and its key.
func New(c *controllers.Context) (*Signer, error) {
	if c.SigningCertFile == "" || c.SigningKeyFile == "" {
		return nil, errors.New("the cluster signing certificate and key files are required")
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	files := &caFiles{certFile: c.SigningCertFile, keyFile: c.SigningKeyFile, now: now}
	if _, err := files.current(); err != nil {
		return nil, err
	}
	duration := c.SigningDuration
	if duration <= 0 {
		duration = DefaultDuration
	}
	inf := c.Informers.Certificates().V1().CertificateSigningRequests()
	s := &Signer{client: c.Client, log: c.Logger, now: now, duration: duration, ca: files,
		csrs: inf.Lister(), synced: inf.Informer().HasSynced, queue: controllers.NewQueue("certificate")}
	enqueue := func(obj any) { controllers.Enqueue(s.queue, obj) }
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// Run works until ctx is done.
func (s *Signer) Run(ctx context.Context) error {
	return controllers.RunWorkers(ctx, Name, s.queue, workers, s.log, s.sync, s.synced)
}

// sync signs the request name if it is approved, neither denied nor
// failed, not yet issued and for one of Signers.
func (s *Signer) sync(ctx context.Context, name string) error {
	csr, err := s.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(csr.Status.Certificate) > 0 || !Approved(csr) || HasTrueCondition(csr, certificatesv1.CertificateFailed) ||
		!slices.Contains(Signers, csr.Spec.SignerName) {
		return nil
	}
	req, err := csrpem.Parse(csr.Spec.Request)
	if err != nil {
		return fmt.Errorf("certificate signing request %s: %w", name, err)
	}
	if _, err := validate(csr.Spec.SignerName, req, csr.Spec.Usages); err != nil {
		return s.fail(ctx, csr, err)
	}
	authority, err := s.ca.current()
	if err != nil {
		return err
	}
	leaf, err := LeafFor(csr.Spec.Usages, Duration(s.duration, csr.Spec.ExpirationSeconds), s.now())
	if err != nil {
		return s.fail(ctx, csr, err)
	}
	issued, err := authority.SignCSRAs(req, leaf)
	if err != nil {
		return fmt.Errorf("sign certificate signing request %s: %w", name, err)
	}
	csr = csr.DeepCopy()
	csr.Status.Certificate = issued.CertPEM
	if _, err := s.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("write the certificate of %s: %w", name, err)
	}
	s.log.Info("signed a certificate signing request", "csr", name, "signer", csr.Spec.SignerName,
		"serial", issued.Cert.SerialNumber.Text(16), "notAfter", issued.Cert.NotAfter)
	return nil
}

// validate applies the rules of signerName (Check), then those every CSR
// kubegate signs passes (ca.CheckCSR: its subject's names, no CA:TRUE).
func validate(signerName string, req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) (recognized bool, err error) {
	if recognized, err = Check(signerName, req, usages); !recognized || err != nil {
		return recognized, err
	}
	return true, ca.CheckCSR(req)
}

// fail sets the Failed condition of csr, with reason
// SignerValidationFailure and err as the message.
func (s *Signer) fail(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, cause error) error {
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue,
		Reason: ReasonSignerValidationFailure, Message: cause.Error(), LastUpdateTime: metav1.NewTime(s.now()),
	})
	if _, err := s.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("mark %s failed: %w", csr.Name, err)
	}
	s.log.Info("a certificate signing request breaks its signer's rules", "csr", csr.Name,
		"signer", csr.Spec.SignerName, "reason", cause.Error())
	return nil
}

// Approved reports whether csr has an Approved condition and no Denied
// one.
func Approved(csr *certificatesv1.CertificateSigningRequest) bool {
	approved, denied := false, false
	for _, c := range csr.Status.Conditions {
		approved = approved || c.Type == certificatesv1.CertificateApproved
		denied = denied || c.Type == certificatesv1.CertificateDenied
	}
	return approved && !denied
}

// HasTrueCondition reports whether csr has a condition of type t whose
// status is True or unset.
func HasTrueCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && (c.Status == "" || c.Status == corev1.ConditionTrue) {
			return true
		}
	}
	return false
}

// Duration is the lifetime a request gets: max, unless its
// expirationSeconds asks for less, but never less than ten minutes.
func Duration(max time.Duration, expirationSeconds *int32) time.Duration {
	if expirationSeconds == nil {
		return max
	}
	d := time.Duration(*expirationSeconds) * time.Second
	switch {
	case d > max:
		return max
	case d < minDuration:
		return minDuration
	}
	return d
}

// LeafFor turns spec.usages and a lifetime into what the certificate
// gets: the key usages and extended key usages the usages name, NotBefore
// back-dated five minutes, and NotAfter now+lifetime, five minutes earlier
// when the lifetime is at least eight hours. A usage x509 has no
// counterpart for is an error.
func LeafFor(usages []certificatesv1.KeyUsage, lifetime time.Duration, now time.Time) (ca.Leaf, error) {
	leaf := ca.Leaf{NotBefore: now.Add(-backdate), NotAfter: now.Add(lifetime)}
	if lifetime >= short {
		leaf.NotAfter = now.Add(lifetime - backdate)
	}
	var unknown []string
	for _, u := range usages {
		if ku, ok := keyUsages[u]; ok {
			leaf.KeyUsage |= ku
		} else if eku, ok := extKeyUsages[u]; ok {
			if !slices.Contains(leaf.ExtKeyUsage, eku) {
				leaf.ExtKeyUsage = append(leaf.ExtKeyUsage, eku)
			}
		} else {
			unknown = append(unknown, string(u))
		}
	}
	if len(unknown) > 0 {
		return ca.Leaf{}, fmt.Errorf("unrecognized usage values: %q", unknown)
	}
	slices.Sort(leaf.ExtKeyUsage)
	return leaf, nil
}

var keyUsages = map[certificatesv1.KeyUsage]x509.KeyUsage{
	certificatesv1.UsageSigning:           x509.KeyUsageDigitalSignature,
	certificatesv1.UsageDigitalSignature:  x509.KeyUsageDigitalSignature,
	certificatesv1.UsageContentCommitment: x509.KeyUsageContentCommitment,
	certificatesv1.UsageKeyEncipherment:   x509.KeyUsageKeyEncipherment,
	certificatesv1.UsageKeyAgreement:      x509.KeyUsageKeyAgreement,
	certificatesv1.UsageDataEncipherment:  x509.KeyUsageDataEncipherment,
	certificatesv1.UsageCertSign:          x509.KeyUsageCertSign,
	certificatesv1.UsageCRLSign:           x509.KeyUsageCRLSign,
	certificatesv1.UsageEncipherOnly:      x509.KeyUsageEncipherOnly,
	certificatesv1.UsageDecipherOnly:      x509.KeyUsageDecipherOnly,
}

var extKeyUsages = map[certificatesv1.KeyUsage]x509.ExtKeyUsage{
	certificatesv1.UsageAny:             x509.ExtKeyUsageAny,
	certificatesv1.UsageServerAuth:      x509.ExtKeyUsageServerAuth,
	certificatesv1.UsageClientAuth:      x509.ExtKeyUsageClientAuth,
	certificatesv1.UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
	certificatesv1.UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageSMIME:           x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageIPsecEndSystem:  x509.ExtKeyUsageIPSECEndSystem,
	certificatesv1.UsageIPsecTunnel:     x509.ExtKeyUsageIPSECTunnel,
	certificatesv1.UsageIPsecUser:       x509.ExtKeyUsageIPSECUser,
	certificatesv1.UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
	certificatesv1.UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC:    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
	certificatesv1.UsageNetscapeSGC:     x509.ExtKeyUsageNetscapeServerGatedCrypto,
}

// caFiles is the signing CA, read again when its files change (a CA
// rotation replaces them; H.3).
type caFiles struct {
	certFile, keyFile string
	now               func() time.Time

	mu              sync.Mutex
	certPEM, keyPEM []byte
	authority       *ca.Authority
}

// current returns the CA the files hold now.
func (f *caFiles) current() (*ca.Authority, error) {
	certPEM, err := os.ReadFile(f.certFile)
	if err != nil {
		return nil, fmt.Errorf("cluster signing certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(f.keyFile)
	if err != nil {
		return nil, fmt.Errorf("cluster signing key: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.authority != nil && bytes.Equal(certPEM, f.certPEM) && bytes.Equal(keyPEM, f.keyPEM) {
		return f.authority, nil
	}
	a, err := ca.ParseAuthority("cluster signing CA", f.certFile, certPEM, f.keyFile, keyPEM)
	if err != nil {
		return nil, err
	}
	a.Now = f.now
	f.certPEM, f.keyPEM, f.authority = certPEM, keyPEM, a
	return a, nil
}
