package fileconfig

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/authn"
)

// webhookKubeconfig serves TokenReviews that know the token "wh-token"
// as jane, and returns a webhook configuration file naming the service.
func webhookKubeconfig(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			APIVersion string `json:"apiVersion"`
			Spec       struct{ Token string }
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		status := map[string]any{"authenticated": false}
		if req.Spec.Token == "wh-token" {
			status = map[string]any{"authenticated": true, "user": map[string]any{"username": "jane", "groups": []string{"devs"}}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": req.APIVersion, "kind": "TokenReview", "status": status})
	}))
	t.Cleanup(s.Close)
	path := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	write(t, path, []byte(`apiVersion: v1
kind: Config
clusters:
- name: review
  cluster:
    server: `+s.URL+`/authenticate
users:
- name: kubegate
  user: {}
contexts:
- name: webhook
  context: {cluster: review, user: kubegate}
current-context: webhook
`))
	return path
}

func TestLoadPutsTheWebhookLastAmongTokens_A9(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "tokens.csv"), []byte("tok-1,alice,uid-1\n"))
	f := DefaultFlags()
	f.TokenAuthFile = filepath.Join(dir, "tokens.csv")
	f.WebhookConfigFile = webhookKubeconfig(t)
	for _, version := range []string{"v1", "v1beta1"} {
		t.Run(version, func(t *testing.T) {
			f.WebhookVersion = version
			ac, err := Load(t.Context(), Options{Flags: f}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			if len(ac.StaticTokens) != 1 || len(ac.Tokens) != 1 {
				t.Fatalf("%d static tokens, %d tokens; want 1 and the webhook", len(ac.StaticTokens), len(ac.Tokens))
			}
			resp, ok, err := ac.Tokens[len(ac.Tokens)-1].AuthenticateToken(context.Background(), "wh-token")
			if !ok || err != nil || resp.Authenticator != "webhook" || resp.User.Name != "jane" {
				t.Fatalf("the last token authenticator: (%+v, %v, %v), want the webhook's jane", resp, ok, err)
			}
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("Authorization", "Bearer wh-token")
			resp, ok, err = authn.New(ac).AuthenticateRequest(r)
			if !ok || err != nil || resp.User.Name != "jane" || strings.Join(resp.User.Groups, ",") != "devs,system:authenticated" {
				t.Fatalf("the chain: (%+v, %v, %v), want jane in devs and system:authenticated", resp, ok, err)
			}
		})
	}
}

func TestLoadWebhookErrorsNameTheFlag_A9(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	write(t, garbage, []byte("clusters: [not yaml"))
	good := webhookKubeconfig(t)
	for _, tt := range []struct {
		name string
		f    Flags
		want string
	}{
		{"missing file", Flags{WebhookConfigFile: filepath.Join(dir, "nope")}, "--authentication-token-webhook-config-file " + filepath.Join(dir, "nope") + ": "},
		{"garbage file", Flags{WebhookConfigFile: garbage}, "--authentication-token-webhook-config-file " + garbage + ": "},
		{"bad version", Flags{WebhookConfigFile: good, WebhookVersion: "v1alpha1"},
			`--authentication-token-webhook-version: unsupported authentication webhook version "v1alpha1", supported versions are "v1", "v1beta1"`},
		{"bad version without a file", Flags{WebhookVersion: "V1"}, `--authentication-token-webhook-version: unsupported authentication webhook version "V1"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(t.Context(), Options{Flags: tt.f}, slog.New(slog.DiscardHandler))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line starting %q", err, tt.want)
			}
		})
	}
}

func TestWebhookFlagsDefaultsAndConfigured_A9(t *testing.T) {
	f := DefaultFlags()
	if f.WebhookVersion != "v1beta1" || f.WebhookCacheTTL.String() != "2m0s" || f.WebhookConfigFile != "" {
		t.Fatalf("defaults: version %q, cache TTL %s, file %q; want kube-apiserver's v1beta1, 2m0s and none", f.WebhookVersion, f.WebhookCacheTTL, f.WebhookConfigFile)
	}
	if f.Configured() {
		t.Fatal("the defaults turn an authenticator on")
	}
	f.WebhookConfigFile = "webhook.kubeconfig"
	if !f.Configured() {
		t.Fatal("a webhook configuration file does not count as an authenticator")
	}
}
