package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/inspect"
)

func TestTokenCreate(t *testing.T) {
	t.Parallel()
	dir := initTreeWith(t)
	pub := filepath.Join(dir, "pki", "sa.pub")
	tests := []struct {
		name          string
		args          []string
		issuers       []string // the verifier's --service-account-issuer
		audiences     []string // the verifier's --api-audiences
		wantAudiences []string
		wantLifetime  time.Duration
	}{
		{name: "defaults", args: nil,
			issuers: []string{defaultSAIssuer}, wantAudiences: []string{defaultSAIssuer}, wantLifetime: time.Hour},
		{name: "audiences and duration", args: []string{"--audience", "vault", "--audience", "api", "--duration", "20m"},
			issuers: []string{defaultSAIssuer}, audiences: []string{"api"}, wantAudiences: []string{"vault", "api"}, wantLifetime: 20 * time.Minute},
		{name: "issuer", args: []string{"--issuer", "https://issuer.example", "--uid", "0000-1"},
			issuers: []string{"https://issuer.example"}, wantAudiences: []string{"https://issuer.example"}, wantLifetime: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"token", "create", "--dir", dir, "--namespace", "ci", "--service-account", "builder"}, tt.args...)
			code, out, errOut := runCLI(t, "", args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if strings.Count(out, "\n") != 1 || strings.Count(out, ".") != 2 {
				t.Fatalf("stdout = %q, want one JWT line", out)
			}
			token := strings.TrimSpace(out)

			// The service-account authenticator accepts it as the account.
			a, err := serviceaccount.NewFromFiles(serviceaccount.Options{Issuers: tt.issuers, Audiences: tt.audiences}, pub)
			if err != nil {
				t.Fatal(err)
			}
			resp, ok, err := a.AuthenticateToken(context.Background(), token)
			if err != nil || !ok {
				t.Fatalf("AuthenticateToken = %v, %v", ok, err)
			}
			if resp.User.Name != "system:serviceaccount:ci:builder" || !slices.Equal(resp.User.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"}) {
				t.Errorf("user = %+v", resp.User)
			}

			// Its claims are a bound token's, with the requested lifetime.
			r, err := inspect.Inspect([]byte(token), inspect.Options{})
			if err != nil {
				t.Fatal(err)
			}
			j := r.JWT
			if j.Type != inspect.TokenBound || !slices.Equal(j.Audiences, tt.wantAudiences) || j.Issuer != tt.issuers[0] {
				t.Errorf("token = %s, iss %s, aud %v; want bound, %s, %v", j.Type, j.Issuer, j.Audiences, tt.issuers[0], tt.wantAudiences)
			}
			if got := j.Expires.Sub(*j.IssuedAt); got != tt.wantLifetime {
				t.Errorf("lifetime = %v, want %v", got, tt.wantLifetime)
			}
			if j.Claims["jti"] == nil {
				t.Error("no jti claim")
			}
			if slices.Contains(tt.args, "--uid") && j.Identity.UID != "0000-1" {
				t.Errorf("UID = %q, want --uid", j.Identity.UID)
			}
		})
	}
}

func TestTokenCreateRefuses(t *testing.T) {
	t.Parallel()
	dir := initTreeWith(t)
	empty := t.TempDir()
	badKey := t.TempDir()
	if err := os.MkdirAll(filepath.Join(badKey, "pki"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(badKey, "pki", "sa.key"), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "no service account", args: []string{"--dir", dir}, want: "--service-account is required"},
		{name: "no dir", args: []string{"--service-account", "b"}, want: "--dir is required"},
		{name: "bad namespace", args: []string{"--dir", dir, "--service-account", "b", "--namespace", "Not_A_Label"}, want: `--namespace "Not_A_Label"`},
		{name: "too short", args: []string{"--dir", dir, "--service-account", "b", "--duration", "1m"}, want: "--duration 1m0s: spec.expirationSeconds"},
		{name: "empty audience", args: []string{"--dir", dir, "--service-account", "b", "--audience", ""}, want: "--audience: an audience is empty"},
		{name: "no key", args: []string{"--dir", empty, "--service-account", "b"}, want: "read service-account signing key"},
		{name: "corrupt key", args: []string{"--dir", badKey, "--service-account", "b"}, want: "sa.key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI(t, "", append([]string{"token", "create"}, tt.args...)...)
			checkOneLineFailure(t, code, out, errOut, tt.want)
		})
	}
}
