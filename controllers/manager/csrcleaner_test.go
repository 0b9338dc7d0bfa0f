package manager_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testwait"
)

// passLog records the messages a controller logs, so that a test can wait
// for the end of a pass rather than for time to go by.
type passLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *passLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *passLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *passLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *passLog) WithGroup(string) slog.Handler      { return l }

func (l *passLog) has(msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.msgs, msg)
}

func (l *passLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.msgs, "; ")
}

// kube-controller-manager's CSR cleaner, run by the manager as
// "csrcleaner" against an API server holding many requests in every
// state: the stale ones (decided more than an hour ago, approved without
// a certificate for more than a day, issued with an expired certificate)
// are deleted, the fresh ones and the pending ones of less than a day are
// kept (docs/kubernetes-behaviour.md G.17).
func TestManagerRunsTheCSRCleaner_G17(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	csrs := s.Client.CertificatesV1().CertificateSigningRequests()
	// The cleaner's clock runs 23 hours ahead of the API server's, so
	// that every request, created now, is almost a day old to it.
	now := time.Now().Truncate(time.Second).Add(23 * time.Hour)
	ca := testpki.NewCA(t, "cleaner-test-ca")
	request := testpki.CSR(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "someone"}})
	issued := func(notAfter time.Time) []byte {
		return ca.Issue(t, testpki.Options{CN: "someone", NotBefore: now.Add(-48 * time.Hour), NotAfter: notAfter}).CertPEM
	}
	cond := func(typ certificatesv1.RequestConditionType, age time.Duration) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: typ, Status: corev1.ConditionTrue, Reason: "Test",
			LastUpdateTime: metav1.NewTime(now.Add(-age))}
	}
	approved := func(age time.Duration) certificatesv1.CertificateSigningRequestCondition {
		return cond(certificatesv1.CertificateApproved, age)
	}
	type state struct {
		prefix   string
		approval []certificatesv1.CertificateSigningRequestCondition
		status   []certificatesv1.CertificateSigningRequestCondition
		cert     []byte
		stale    bool
	}
	states := []state{
		{prefix: "pending", stale: false},
		{prefix: "approved-issued-fresh", approval: []certificatesv1.CertificateSigningRequestCondition{approved(50 * time.Minute)},
			cert: issued(now.Add(time.Hour))},
		{prefix: "approved-issued-old", approval: []certificatesv1.CertificateSigningRequestCondition{approved(61 * time.Minute)},
			cert: issued(now.Add(time.Hour)), stale: true},
		{prefix: "approved-issued-expired", approval: []certificatesv1.CertificateSigningRequestCondition{approved(time.Minute)},
			cert: issued(now.Add(-time.Minute)), stale: true},
		{prefix: "approved-unissued-fresh", approval: []certificatesv1.CertificateSigningRequestCondition{approved(23 * time.Hour)}},
		{prefix: "approved-unissued-old", approval: []certificatesv1.CertificateSigningRequestCondition{approved(25 * time.Hour)}, stale: true},
		{prefix: "denied-fresh", approval: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied, 59*time.Minute)}},
		{prefix: "denied-old", approval: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied, 2*time.Hour)}, stale: true},
		{prefix: "failed-old", approval: []certificatesv1.CertificateSigningRequestCondition{approved(10 * time.Minute)},
			status: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateFailed, 90*time.Minute)}, stale: true},
	}
	const each = 8
	var stale, fresh []string
	for _, st := range states {
		for i := range each {
			name := fmt.Sprintf("%s-%d", st.prefix, i)
			csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: certificatesv1.CertificateSigningRequestSpec{Request: request, SignerName: "example.com/test",
					Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if st.approval != nil {
				csr.Status.Conditions = st.approval
				if csr, err = csrs.UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
					t.Fatalf("approval of %s: %v", name, err)
				}
			}
			if st.cert != nil || st.status != nil {
				csr.Status.Conditions = append(csr.Status.Conditions, st.status...)
				csr.Status.Certificate = st.cert
				if _, err = csrs.UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
					t.Fatalf("status of %s: %v", name, err)
				}
			}
			if st.stale {
				stale = append(stale, name)
			} else {
				fresh = append(fresh, name)
			}
		}
	}

	log := &passLog{}
	apiservertest.Run(t, func(ctx context.Context) error {
		return manager.Run(ctx, manager.Options{Config: s.Config, Controllers: []string{"csrcleaner"},
			Now: func() time.Time { return now }, Logger: slog.New(log)})
	})
	testwait.For(t, 30*time.Second, "a pass of the CSR cleaner", func() (bool, string) {
		return log.has("cleaned certificate signing requests"), log.String()
	})
	list, err := csrs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, csr := range list.Items {
		left = append(left, csr.Name)
	}
	slices.Sort(left)
	slices.Sort(fresh)
	if !slices.Equal(left, fresh) {
		t.Errorf("after a pass the API server holds %d requests:\n%v\nwant the %d fresh ones:\n%v\n(of %d stale ones)",
			len(left), left, len(fresh), fresh, len(stale))
	}
}
