package fileconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/internal/fsutil"
	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testwait"
)

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := fsutil.WriteFile(path, data, fsutil.ModeKey, true); err != nil { // replaced by rename
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	clientCA, frontCA := testpki.NewCA(t, "kubernetes"), testpki.NewCA(t, "front-proxy-ca")
	saKey := testpki.NewCA(t, "sa").Key
	pub, _ := x509.MarshalPKIXPublicKey(saKey.Public())
	files := map[string][]byte{
		"ca.crt":             clientCA.CertPEM,
		"front-proxy-ca.crt": frontCA.CertPEM,
		"tokens.csv":         []byte("tok-1,alice,uid-1\n"),
		"sa.pub":             pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
	}
	for name, data := range files {
		write(t, filepath.Join(dir, name), data)
	}
	o := Options{Flags: Flags{
		ClientCAFile: filepath.Join(dir, "ca.crt"), TokenAuthFile: filepath.Join(dir, "tokens.csv"),
		SAKeyFiles: []string{filepath.Join(dir, "sa.pub")}, SAIssuers: []string{"https://issuer"},
		RequestHeaderCAFile: filepath.Join(dir, "front-proxy-ca.crt"), RequestHeaderUsernameHeaders: []string{"X-Remote-User"},
	}, ReloadInterval: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ac, err := Load(ctx, o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if ac.X509 == nil || ac.RequestHeader == nil || len(ac.StaticTokens) != 1 || len(ac.Tokens) != 1 ||
		strings.Join(ac.APIAudiences, ",") != "https://issuer" {
		t.Fatalf("config = %+v; want every authenticator and the issuer as audience", ac)
	}
	a := authn.New(ac)
	bearer := func(tok string) bool {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		_, ok, _ := a.AuthenticateRequest(r)
		return ok
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{clientCA.Issue(t, testpki.Options{CN: "bob"}).Cert}}
	if resp, ok, err := a.AuthenticateRequest(r); !ok || resp.User.Name != "bob" {
		t.Fatalf("client cert: %v %v %v", resp, ok, err)
	}
	if !bearer("tok-1") {
		t.Fatal("token from the file refused")
	}
	// The token file reloads.
	write(t, o.TokenAuthFile, []byte("tok-2,carol,uid-2\n"))
	testwait.For(t, 2*time.Second, "token file change in force", func() (bool, string) {
		return !bearer("tok-1") && bearer("tok-2"), "the old tokens"
	})
}

func TestLoadNamesTheFlag(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	write(t, garbage, []byte("not pem"))
	for _, tt := range []struct {
		name string
		o    Options
		want string
	}{
		{"missing client CA", Options{Flags: Flags{ClientCAFile: filepath.Join(dir, "nope")}}, "--client-ca-file"},
		{"garbage client CA", Options{Flags: Flags{ClientCAFile: garbage}}, "--client-ca-file"},
		{"garbage front-proxy CA", Options{Flags: Flags{RequestHeaderCAFile: garbage, RequestHeaderUsernameHeaders: []string{"X-Remote-User"}}}, "--requestheader-client-ca-file"},
		{"missing token file", Options{Flags: Flags{TokenAuthFile: filepath.Join(dir, "nope")}}, "--token-auth-file"},
		{"garbage SA key", Options{Flags: Flags{SAKeyFiles: []string{garbage}, SAIssuers: []string{"i"}}}, "--service-account-key-file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(context.Background(), tt.o, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %s", err, tt.want)
			}
		})
	}
}
