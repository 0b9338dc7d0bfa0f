package fileconfig

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/bootstrap"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/internal/testpki"
)

// --enable-bootstrap-token-auth puts the bootstrap token authenticator
// right after the service-account one (A.0, A.10).
func TestLoadBootstrapTokens_A10(t *testing.T) {
	dir := t.TempDir()
	pub, _ := x509.MarshalPKIXPublicKey(testpki.NewCA(t, "sa").Key.Public())
	write(t, filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	spec := bootstrap.TokenSpec{ID: "abcdef", Secret: "0123456789abcdef", Usages: []string{"authentication"}}
	getter := bootstrap.GetterFunc(func(_ context.Context, ns, name string) (bootstrap.Secret, error) {
		if ns != "kube-system" || name != "bootstrap-token-abcdef" {
			return bootstrap.Secret{}, bootstrap.ErrNotFound
		}
		return bootstrap.Secret{Namespace: ns, Name: name, Type: bootstrap.SecretType, Data: spec.Data()}, nil
	})
	o := Options{Flags: Flags{SAKeyFiles: []string{filepath.Join(dir, "sa.pub")}, SAIssuers: []string{"https://issuer"},
		EnableBootstrapTokenAuth: true}, BootstrapGetter: getter}
	ac, err := Load(context.Background(), o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if len(ac.Tokens) != 2 {
		t.Fatalf("%d token authenticators, want the service-account and the bootstrap ones", len(ac.Tokens))
	}
	if _, ok := ac.Tokens[0].(*serviceaccount.Authenticator); !ok {
		t.Errorf("first token authenticator is %T, want the service-account one", ac.Tokens[0])
	}
	if _, ok := ac.Tokens[1].(*bootstrap.Authenticator); !ok {
		t.Errorf("second token authenticator is %T, want the bootstrap one", ac.Tokens[1])
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer abcdef.0123456789abcdef")
	resp, ok, err := authn.New(ac).AuthenticateRequest(r)
	if !ok || err != nil || resp.User.Name != "system:bootstrap:abcdef" || resp.Authenticator != "bootstrap" ||
		!slices.Equal(resp.User.Groups, []string{"system:bootstrappers", "system:authenticated"}) {
		t.Fatalf("got %+v, %v, %v", resp, ok, err)
	}

	// Off by default.
	o.EnableBootstrapTokenAuth = false
	if ac, err = Load(context.Background(), o, slog.New(slog.DiscardHandler)); err != nil || len(ac.Tokens) != 1 {
		t.Errorf("without the flag: %d token authenticators, %v; want only the service-account one", len(ac.Tokens), err)
	}

	// The flag needs a way to read Secrets.
	o = Options{Flags: Flags{EnableBootstrapTokenAuth: true}}
	if _, err := Load(context.Background(), o, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "--enable-bootstrap-token-auth") {
		t.Errorf("no getter: err = %v, want one naming --enable-bootstrap-token-auth", err)
	}
}
