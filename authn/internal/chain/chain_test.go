package chain

import (
	"crypto/x509"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testpki"
)

func TestCacheBounded(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	other := testpki.NewCA(t, "other")
	var good, bad []*testpki.Cert
	for range 10 {
		good = append(good, ca.Issue(t, testpki.Options{CN: "u"}))
		bad = append(bad, other.Issue(t, testpki.Options{CN: "u"}))
	}
	t.Run("A.1 each verification cache holds at most CacheSize chains", func(t *testing.T) {
		v, err := New(ca.CertPEM, func(leaf *x509.Certificate, _ [][]*x509.Certificate) string { return leaf.Subject.CommonName }, Options{CacheSize: 3})
		if err != nil {
			t.Fatal(err)
		}
		for i := range good {
			if _, err := v.Verify([]*x509.Certificate{good[i].Cert}); err != nil {
				t.Fatalf("good %d: %v", i, err)
			}
			if _, err := v.Verify([]*x509.Certificate{bad[i].Cert}); err == nil {
				t.Fatalf("bad %d verified", i)
			}
		}
		b := v.b.Load()
		for name, n := range map[string]int{"verified by hash": b.ok.Len(), "failed by hash": b.fail.Len(), "by identity": b.memo.Len()} {
			if n > 3 {
				t.Errorf("%s cache holds %d entries, want at most 3", name, n)
			}
		}
	})
	t.Run("A.1 a chain with the same contents is found by hash", func(t *testing.T) {
		calls := 0
		v, err := New(ca.CertPEM, func(*x509.Certificate, [][]*x509.Certificate) int { calls++; return calls }, Options{})
		if err != nil {
			t.Fatal(err)
		}
		reparsed, err := x509.ParseCertificate(good[0].Cert.Raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []*x509.Certificate{good[0].Cert, reparsed, good[0].Cert} {
			if got, err := v.Verify([]*x509.Certificate{c}); err != nil || got != 1 {
				t.Fatalf("Verify = (%d, %v), want the first conversion (1)", got, err)
			}
		}
	})
	t.Run("A.1 an empty chain is an error", func(t *testing.T) {
		v, err := New(ca.CertPEM, func(*x509.Certificate, [][]*x509.Certificate) int { return 0 }, Options{CacheSize: -1, Now: func() time.Time { return time.Now() }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(nil); err == nil || !strings.Contains(err.Error(), "no client certificate") {
			t.Errorf("Verify(nil) err = %v, want no client certificate", err)
		}
	})
}

func FuzzParseCerts(f *testing.F) {
	ca := testpki.NewCA(f, "ca")
	f.Add(ca.CertPEM)
	f.Add(append(append([]byte{}, ca.KeyPEM...), ca.CertPEM...))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		certs, err := ParseCerts(data)
		if (err == nil) != (len(certs) > 0) {
			t.Fatalf("ParseCerts returned %d certs with error %v", len(certs), err)
		}
		v, err2 := New(data, func(*x509.Certificate, [][]*x509.Certificate) int { return 0 }, Options{})
		if (err == nil) != (err2 == nil) || (err2 == nil && v == nil) {
			t.Fatalf("New disagrees with ParseCerts: %v vs %v", err2, err)
		}
	})
}

func TestUnixNanos(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		t    time.Time
		want int64
	}{
		{name: "A.1 a time in range is its nanoseconds since 1970", t: time.Unix(1_700_000_000, 5), want: 1_700_000_000_000_000_005},
		{name: "A.1 a NotAfter of 9999-12-31 is the last time the caches hold", t: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), want: math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := unixNanos(tt.t); got != tt.want {
				t.Errorf("unixNanos(%v) = %d, want %d", tt.t, got, tt.want)
			}
		})
	}
}
