package etcd

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/store"
	"github.com/kubegate/kubegate/store/etcd/etcdtest"
	"github.com/kubegate/kubegate/store/storetest"
)

// server is one etcd started in-process for the whole package, listening
// on loopback for plain clients and for mTLS clients.
type server struct {
	etcd     *etcdtest.Server
	dir      string
	plainURL string
	tlsURL   string
	caFile   string
	certFile string // client certificate signed by the etcd CA
	keyFile  string
	ca       *testpki.Cert
}

var shared struct {
	once sync.Once
	srv  *server
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.srv != nil {
		shared.srv.etcd.Close()
		os.RemoveAll(shared.srv.dir)
	}
	os.Exit(code)
}

// etcdServer starts the package's etcd on first use.
func etcdServer(t testing.TB) *server {
	t.Helper()
	shared.once.Do(func() { shared.srv, shared.err = startEtcd(t) })
	if shared.err != nil {
		t.Fatalf("start etcd: %v", shared.err)
	}
	return shared.srv
}

func startEtcd(t testing.TB) (*server, error) {
	dir, err := os.MkdirTemp("", "kubegate-etcd-")
	if err != nil {
		return nil, err
	}
	ca := testpki.NewCA(t, "etcd-ca")
	serving := ca.Issue(t, testpki.Options{
		CN:       "etcd-server",
		DNSNames: []string{"localhost"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1)},
		EKUs:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
	client := ca.Issue(t, testpki.Options{CN: "kube-apiserver-etcd-client"})
	srv := &server{dir: dir, ca: ca, caFile: filepath.Join(dir, "ca.crt")}
	if err := os.WriteFile(srv.caFile, ca.CertPEM, 0o644); err != nil {
		return nil, err
	}
	servingCert, servingKey := serving.WriteFiles(t, dir, "server")
	srv.certFile, srv.keyFile = client.WriteFiles(t, dir, "client")

	e, err := etcdtest.Start(dir, &transport.TLSInfo{CertFile: servingCert, KeyFile: servingKey, TrustedCAFile: srv.caFile})
	if err != nil {
		return nil, err
	}
	srv.etcd = e
	srv.plainURL, srv.tlsURL = e.PlainURL, e.TLSURL
	return srv, nil
}

var prefixes atomic.Int64

// newStore returns a store on the shared etcd under a prefix of its own.
func newStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	srv := etcdServer(t)
	if cfg.Endpoints == nil {
		cfg.Endpoints = []string{srv.plainURL}
	}
	if cfg.Prefix == "" {
		cfg.Prefix = fmt.Sprintf("/test%d/", prefixes.Add(1))
	}
	if cfg.CompactInterval == 0 {
		cfg.CompactInterval = -1
	}
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t, Config{}) })
}

func TestTLS(t *testing.T) {
	srv := etcdServer(t)
	other := testpki.NewCA(t, "other-ca")
	dir := t.TempDir()
	strangerCert, strangerKey := other.Issue(t, testpki.Options{CN: "stranger"}).WriteFiles(t, dir, "stranger")
	otherCA, _ := other.WriteFiles(t, dir, "other-ca")

	t.Run("client certificate from the etcd CA", func(t *testing.T) {
		s := newStore(t, Config{Endpoints: []string{srv.tlsURL}, CAFile: srv.caFile, CertFile: srv.certFile, KeyFile: srv.keyFile})
		rev, err := s.Create(t.Context(), "/tls/a", []byte("over mTLS"))
		if err != nil {
			t.Fatalf("Create over mTLS: %v", err)
		}
		kv, err := s.Get(t.Context(), "/tls/a")
		if err != nil || string(kv.Value) != "over mTLS" || kv.ModRevision != rev {
			t.Errorf("Get = %+v, %v; want the value written at %d", kv, err, rev)
		}
	})

	failures := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no client certificate", Config{CAFile: srv.caFile}, ""},
		{"client certificate from another CA", Config{CAFile: srv.caFile, CertFile: strangerCert, KeyFile: strangerKey}, ""},
		{"server not trusted", Config{CAFile: otherCA, CertFile: srv.certFile, KeyFile: srv.keyFile}, ""},
		{"certificate without key", Config{CAFile: srv.caFile, CertFile: srv.certFile}, "give both or neither"},
		{"missing CA file", Config{CAFile: filepath.Join(dir, "missing.crt")}, "read etcd CA file"},
		{"CA file without PEM", Config{CAFile: srv.keyFile + ".nothing"}, "read etcd CA file"},
	}
	if err := os.WriteFile(srv.keyFile+".nothing", []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Endpoints = []string{srv.tlsURL}
			tc.cfg.DialTimeout = 2 * time.Second
			tc.cfg.CompactInterval = -1
			s, err := New(context.Background(), tc.cfg)
			if err == nil {
				s.Close()
				t.Fatalf("New succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// TestCompactor: on each tick the store compacts to the revision it saw at
// the previous tick.
func TestCompactor(t *testing.T) {
	s := newStore(t, Config{})
	ctx := t.Context()
	first, err := s.Create(ctx, "/compactor/a", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	tick := make(chan time.Time)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.compactor(tick)
	}()
	tick <- time.Time{} // records the current revision
	second, err := s.Update(ctx, "/compactor/a", []byte("2"), first)
	if err != nil {
		t.Fatal(err)
	}
	tick <- time.Time{} // compacts to the recorded revision
	tick <- time.Time{} // the second tick's compaction has finished
	if _, err := s.List(ctx, "/compactor/", store.ListOptions{Revision: first - 1}); !errors.Is(err, store.ErrCompacted) {
		t.Errorf("List at %d after compaction: err = %v, want ErrCompacted", first-1, err)
	}
	if _, err := s.List(ctx, "/compactor/", store.ListOptions{Revision: second}); err != nil {
		t.Errorf("List at %d: %v; the last interval must be kept", second, err)
	}
	s.Close()
	<-done
}

// TestTwoStoresOneEtcd: two stores on the same etcd and prefix, as two API
// servers would be, see each other's writes through watch and get.
func TestTwoStoresOneEtcd(t *testing.T) {
	a := newStore(t, Config{Prefix: "/shared/"})
	b := newStore(t, Config{Prefix: "/shared/"})
	ctx := t.Context()
	w, err := b.Watch(ctx, "/pods/", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	rev, err := a.Create(ctx, "/pods/default/app", []byte("from a"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != store.Added || ev.Revision != rev || ev.KV.Key != "/pods/default/app" {
			t.Errorf("b saw %v at %d for %q, want ADDED at %d for /pods/default/app", ev.Type, ev.Revision, ev.KV.Key, rev)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("b saw no event within 20s")
	}
	if _, err := b.Update(ctx, "/pods/default/app", []byte("from b"), rev); err != nil {
		t.Fatalf("b updates a's object at a's revision: %v", err)
	}
	if _, err := a.Update(ctx, "/pods/default/app", []byte("stale"), rev); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a updates with the stale revision: err = %v, want ErrConflict", err)
	}
}
