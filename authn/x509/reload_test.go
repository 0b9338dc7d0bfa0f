package x509_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/internal/filewatch"
	"github.com/kubegate/kubegate/internal/fsutil"
	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testwait"
)

func TestReloadUnderLoad(t *testing.T) {
	t.Parallel()
	ca1, ca2 := newCA(t, "ca-1"), newCA(t, "ca-2")
	u1 := issue(t, ca1, testpki.Options{CN: "one"})
	u2 := issue(t, ca2, testpki.Options{CN: "two"})
	dir := t.TempDir()
	path := filepath.Join(dir, "client-ca.crt")
	write := func(data []byte) {
		if err := fsutil.WriteFile(path, data, fsutil.ModePublic, true); err != nil { // replaced by rename
			t.Fatal(err)
		}
	}
	write(ca1.CertPEM)
	a, err := kx509.New(ca1.CertPEM, kx509.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := filewatch.Watch(ctx, path, 20*time.Millisecond, a.Load, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}

	// Clients of the CA present in every bundle must never see an error.
	var stable atomic.Pointer[testpki.Cert]
	stable.Store(u1)
	var failures, requests atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				requests.Add(1)
				c := stable.Load()
				// A failure counts unless the test moved on to another
				// client while this request was in flight.
				if _, ok, _ := a.AuthenticateRequest(tlsRequest(c)); !ok && stable.Load() == c {
					failures.Add(1)
				}
			}
		}()
	}
	waitFor := func(what string, c *testpki.Cert, want bool) {
		t.Helper()
		start := time.Now()
		testwait.For(t, 2*time.Second, what, func() (bool, string) {
			_, ok, _ := a.AuthenticateRequest(tlsRequest(c))
			return ok == want, "not in force"
		})
		t.Logf("%s after %v", what, time.Since(start).Round(time.Millisecond))
	}

	t.Run("A.1 a grown CA bundle is in force within 2s and no request fails", func(t *testing.T) {
		write(append(append([]byte{}, ca1.CertPEM...), ca2.CertPEM...))
		waitFor("ca-2 trusted", u2, true)
	})
	t.Run("A.1 an invalid CA bundle keeps the old one", func(t *testing.T) {
		write([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
		time.Sleep(100 * time.Millisecond) // several polls
		if _, ok, err := a.AuthenticateRequest(tlsRequest(u2)); !ok {
			t.Fatalf("after an invalid bundle: %v, want the previous bundle in force", err)
		}
	})
	t.Run("A.1 a CA removed from the bundle is distrusted within 2s", func(t *testing.T) {
		stable.Store(u2)
		write(ca2.CertPEM)
		waitFor("ca-1 distrusted", u1, false)
	})
	close(stop)
	wg.Wait()
	if n := failures.Load(); n != 0 {
		t.Errorf("%d of %d concurrent requests failed during reloads, want 0", n, requests.Load())
	}
	t.Logf("%d concurrent requests", requests.Load())
}
