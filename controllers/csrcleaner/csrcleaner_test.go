package csrcleaner

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegate/kubegate/internal/testpki"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

type csrOpt func(*certificatesv1.CertificateSigningRequest)

func condition(typ certificatesv1.RequestConditionType, updated time.Duration) csrOpt {
	return func(c *certificatesv1.CertificateSigningRequest) {
		c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: typ, Status: corev1.ConditionTrue, LastUpdateTime: ago(updated), LastTransitionTime: ago(updated)})
	}
}

func created(age time.Duration) csrOpt {
	return func(c *certificatesv1.CertificateSigningRequest) { c.CreationTimestamp = ago(age) }
}

func certificate(pem []byte) csrOpt {
	return func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = pem }
}

func csr(name string, opts ...csrOpt) *certificatesv1.CertificateSigningRequest {
	c := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
		CreationTimestamp: ago(time.Minute)}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Each of kube's rules, on both sides of its boundary: an hour after an
// issued request's approval, a denial or a failure (strictly more than an
// hour), a day after a pending request's creation or an unissued
// approval, and once the certificate's notAfter has gone by. A zero
// timestamp is never old (docs/kubernetes-behaviour.md G.17).
func TestStaleFollowsKubesRules_G17(t *testing.T) {
	ca := testpki.NewCA(t, "cleaner-ca")
	valid := ca.Issue(t, testpki.Options{CN: "n", NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}).CertPEM
	expiresNow := ca.Issue(t, testpki.Options{CN: "n", NotBefore: now.Add(-time.Hour), NotAfter: now}).CertPEM
	expired := ca.Issue(t, testpki.Options{CN: "n", NotBefore: now.Add(-time.Hour), NotAfter: now.Add(-time.Second)}).CertPEM
	const sec = time.Second
	tests := []struct {
		name  string
		csr   *certificatesv1.CertificateSigningRequest
		stale bool
	}{
		{"pending, created a day ago", csr("p", created(PendingAge)), false},
		{"pending, created a day and a second ago", csr("p", created(PendingAge+sec)), true},
		{"pending, no creation time", csr("p", func(c *certificatesv1.CertificateSigningRequest) { c.CreationTimestamp = metav1.Time{} }), false},
		{"issued, approved an hour ago", csr("i", condition(certificatesv1.CertificateApproved, DecidedAge), certificate(valid)), false},
		{"issued, approved an hour and a second ago", csr("i", condition(certificatesv1.CertificateApproved, DecidedAge+sec), certificate(valid)), true},
		{"issued, approval without update time", csr("i", condition(certificatesv1.CertificateApproved, 0), certificate(valid),
			func(c *certificatesv1.CertificateSigningRequest) {
				c.Status.Conditions[0].LastUpdateTime = metav1.Time{}
			}), false},
		{"issued long after creation, approved just now", csr("i", created(30*24*time.Hour), condition(certificatesv1.CertificateApproved, sec), certificate(valid)), false},
		{"denied an hour ago", csr("d", condition(certificatesv1.CertificateDenied, DecidedAge)), false},
		{"denied an hour and a second ago", csr("d", condition(certificatesv1.CertificateDenied, DecidedAge+sec)), true},
		{"failed an hour ago", csr("f", condition(certificatesv1.CertificateApproved, sec), condition(certificatesv1.CertificateFailed, DecidedAge)), false},
		{"failed an hour and a second ago", csr("f", condition(certificatesv1.CertificateApproved, sec), condition(certificatesv1.CertificateFailed, DecidedAge+sec)), true},
		{"approved, not issued, for a day", csr("a", condition(certificatesv1.CertificateApproved, PendingAge)), false},
		{"approved, not issued, for a day and a second", csr("a", condition(certificatesv1.CertificateApproved, PendingAge+sec)), true},
		{"approved, not issued, for two hours", csr("a", condition(certificatesv1.CertificateApproved, 2*time.Hour)), false},
		{"issued, certificate expires at this instant", csr("e", condition(certificatesv1.CertificateApproved, sec), certificate(expiresNow)), false},
		{"issued, certificate expired a second ago", csr("e", condition(certificatesv1.CertificateApproved, sec), certificate(expired)), true},
		{"certificate expired but never approved", csr("e", condition(certificatesv1.CertificateDenied, sec), certificate(expired)), false},
		{"issued, certificate not PEM", csr("e", condition(certificatesv1.CertificateApproved, sec), certificate([]byte("junk"))), false},
		{"issued, PEM that is no certificate", csr("e", condition(certificatesv1.CertificateApproved, sec),
			certificate([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))), false},
		{"an unknown condition only, created two days ago", csr("u", created(2*PendingAge), condition("Other", 2*PendingAge)), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			why := Stale(tc.csr, now)
			if got := why != ""; got != tc.stale {
				t.Errorf("Stale = %q; want stale %v", why, tc.stale)
			}
		})
	}
}

// A pass deletes the stale requests of the cache with their UID as a
// precondition, and nothing else; the period and ages are kube's.
func TestCleanDeletesOnlyStaleRequests_G17(t *testing.T) {
	if Period != time.Hour || DecidedAge != time.Hour || PendingAge != 24*time.Hour {
		t.Errorf("period %v, ages %v and %v; want kube's 1h, 1h and 24h", Period, DecidedAge, PendingAge)
	}
	objs := []*certificatesv1.CertificateSigningRequest{
		csr("old-denied", condition(certificatesv1.CertificateDenied, 2*time.Hour)),
		csr("fresh-pending"),
		csr("old-pending", created(2*PendingAge)),
		csr("fresh-denied", condition(certificatesv1.CertificateDenied, time.Minute)),
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	client := fake.NewClientset()
	for _, o := range objs {
		if err := indexer.Add(o); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CertificatesV1().CertificateSigningRequests().Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	client.ClearActions()
	c := &Cleaner{client: client, log: slog.New(slog.DiscardHandler), now: func() time.Time { return now },
		csrs: certificateslisters.NewCertificateSigningRequestLister(indexer), period: Period}
	c.Clean(context.Background())
	var deleted []string
	for _, a := range client.Actions() {
		d, ok := a.(interface {
			GetName() string
			GetDeleteOptions() metav1.DeleteOptions
		})
		if !ok || a.GetVerb() != "delete" {
			t.Errorf("unexpected action %s %s", a.GetVerb(), a.GetResource().Resource)
			continue
		}
		if p := d.GetDeleteOptions().Preconditions; p == nil || p.UID == nil || *p.UID != types.UID("uid-"+d.GetName()) {
			t.Errorf("delete of %s: preconditions %v, want its UID", d.GetName(), p)
		}
		deleted = append(deleted, d.GetName())
	}
	if want := []string{"old-denied", "old-pending"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v (in name order)", deleted, want)
	}
}
