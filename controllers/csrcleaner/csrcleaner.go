// Package csrcleaner is kube-controller-manager's CSR cleaner: once an
// hour it deletes the CertificateSigningRequests that are of no more use,
// so that the requests nodes, bootstrap tokens and users keep making do
// not pile up in the store (docs/kubernetes-behaviour.md G.17).
//
// A request is deleted when, by the controller's clock:
//
//   - it was issued (status.certificate is set) and its Approved
//     condition was last updated more than an hour ago;
//   - its Denied or Failed condition was last updated more than an hour
//     ago;
//   - it has no condition at all (pending) and was created more than a
//     day ago;
//   - it is approved and issued, and the first certificate of
//     status.certificate expired (a certificate that does not parse
//     counts as not expired);
//   - it is approved, not issued, and its Approved condition was last
//     updated more than a day ago.
//
// "More than" is strict, and a zero timestamp is never old.
//
// The identity it runs as needs: certificatesigningrequests list, watch,
// delete (kube's system:controller:certificate-controller role).
package csrcleaner

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"log/slog"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/csrsigning"
	"github.com/kubegate/kubegate/internal/pemutil"
)

// Name is the controller's name in kube-controller-manager's
// --controllers flag; it runs as the same service account as the signer
// and the approver.
const Name = "csrcleaner"

// Period is how often the cleaner looks at every request, and the ages
// after which it deletes one, as kube's cleaner has them.
const (
	Period = time.Hour
	// DecidedAge is how long an issued, denied or failed request is kept
	// after its condition was last updated.
	DecidedAge = time.Hour
	// PendingAge is how long a request without conditions is kept after
	// it was created, and an approved one without a certificate after
	// its approval.
	PendingAge = 24 * time.Hour
)

// Descriptor runs the cleaner in the controller manager.
var Descriptor = controllers.Descriptor{Name: Name, ServiceAccount: csrsigning.ServiceAccount,
	New: func(c *controllers.Context) (controllers.Controller, error) { return New(c), nil }}

// Cleaner deletes stale certificate signing requests.
type Cleaner struct {
	client kubernetes.Interface
	log    *slog.Logger
	now    func() time.Time
	csrs   certificateslisters.CertificateSigningRequestLister
	synced cache.InformerSynced
	// period is Period; tests shorten it.
	period time.Duration
}

// New builds the cleaner from c.
func New(c *controllers.Context) *Cleaner {
	inf := c.Informers.Certificates().V1().CertificateSigningRequests()
	now := c.Now
	if now == nil {
		now = time.Now
	}
	return &Cleaner{client: c.Client, log: c.Logger, now: now, csrs: inf.Lister(), synced: inf.Informer().HasSynced, period: Period}
}

// Run cleans once the cache has filled and then every period, until ctx
// is done. kube's cleaner does not wait for its cache, so that its first
// pass may see none of the requests and the next comes an hour later;
// this one waits.
func (c *Cleaner) Run(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New(Name + ": the caches did not sync")
	}
	tick := time.NewTicker(c.period)
	defer tick.Stop()
	for {
		c.Clean(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Clean looks at every cached request once, in name order, and deletes
// those Stale says are, each with its UID as a precondition so that a
// request made again under the same name is not deleted for the old
// one. A failed delete is logged; the next pass tries again.
func (c *Cleaner) Clean(ctx context.Context) {
	all, err := c.csrs.List(labels.Everything())
	if err != nil {
		c.log.Error("list certificate signing requests", "err", err)
		return
	}
	slices.SortFunc(all, func(a, b *certificatesv1.CertificateSigningRequest) int { return cmp.Compare(a.Name, b.Name) })
	now := c.now()
	deleted := 0
	for _, csr := range all {
		why := Stale(csr, now)
		if why == "" {
			continue
		}
		uid := csr.UID
		err := c.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		switch {
		case err == nil:
			deleted++
			c.log.Info("deleted a certificate signing request", "csr", csr.Name, "because", why)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		default:
			c.log.Warn("delete a certificate signing request", "csr", csr.Name, "err", err)
		}
	}
	c.log.Debug("cleaned certificate signing requests", "seen", len(all), "deleted", deleted)
}

// Stale returns why csr is to be deleted at now, or "" when it is kept.
func Stale(csr *certificatesv1.CertificateSigningRequest, now time.Time) string {
	issued := len(csr.Status.Certificate) > 0
	if len(csr.Status.Conditions) == 0 {
		if olderThan(csr.CreationTimestamp, PendingAge, now) {
			return "pending for more than " + PendingAge.String()
		}
		return ""
	}
	approved := false
	for _, cond := range csr.Status.Conditions {
		switch cond.Type {
		case certificatesv1.CertificateApproved:
			approved = true
			if issued && olderThan(cond.LastUpdateTime, DecidedAge, now) {
				return "issued more than " + DecidedAge.String() + " ago"
			}
			if !issued && olderThan(cond.LastUpdateTime, PendingAge, now) {
				return "approved and not issued for more than " + PendingAge.String()
			}
		case certificatesv1.CertificateDenied:
			if olderThan(cond.LastUpdateTime, DecidedAge, now) {
				return "denied more than " + DecidedAge.String() + " ago"
			}
		case certificatesv1.CertificateFailed:
			if olderThan(cond.LastUpdateTime, DecidedAge, now) {
				return "failed more than " + DecidedAge.String() + " ago"
			}
		}
	}
	if approved && issued && expired(csr.Status.Certificate, now) {
		return "its certificate has expired"
	}
	return ""
}

// olderThan reports whether t is set and more than d before now.
func olderThan(t metav1.Time, d time.Duration, now time.Time) bool {
	return !t.IsZero() && now.Sub(t.Time) > d
}

// expired reports whether the first certificate of the PEM data has
// expired at now; data that does not hold one has not. Like
// kube-controller-manager's cleaner, it reads the first PEM block whatever
// its type, where client-go's cert.ParseCertsPEM would look for a
// CERTIFICATE block further on: status.certificate holds nothing else.
func expired(data []byte, now time.Time) bool {
	block := pemutil.First(data)
	if block == nil {
		return false
	}
	certs, err := x509.ParseCertificates(block.Bytes)
	if err != nil || len(certs) == 0 {
		return false
	}
	return now.After(certs[0].NotAfter)
}
