package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubegate/kubegate/authn/bootstrap"
)

// fakeSecretsAPI answers the Secret creation of token create --bootstrap
// and keeps what it was sent.
type fakeSecretsAPI struct {
	mu      sync.Mutex
	path    string
	created corev1.Secret
}

func (f *fakeSecretsAPI) start(t *testing.T) (kubeconfig string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.path = r.Method + " " + r.URL.Path
		f.created = corev1.Secret{}
		if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &f.created); err != nil {
			t.Errorf("body %q: %v", body, err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(&f.created)
	}))
	t.Cleanup(srv.Close)
	kubeconfig = filepath.Join(t.TempDir(), "admin.conf")
	conf := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: admin-token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

func TestTokenCreateBootstrap_A10(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		args        []string
		wantData    map[string]string
		wantExpires time.Duration // 0: no expiration
	}{
		{name: "kubeadm defaults", wantExpires: 24 * time.Hour, wantData: map[string]string{
			"usage-bootstrap-signing": "true", "usage-bootstrap-authentication": "true",
			"auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token"}},
		{name: "never expires", args: []string{"--ttl", "0", "--groups", "system:bootstrappers:a,system:bootstrappers:b", "--description", "ci runners"},
			wantData: map[string]string{
				"usage-bootstrap-signing": "true", "usage-bootstrap-authentication": "true",
				"auth-extra-groups": "system:bootstrappers:a,system:bootstrappers:b", "description": "ci runners"}},
		{name: "signing only", args: []string{"--usages", "signing", "--groups", "", "--ttl", "90m"}, wantExpires: 90 * time.Minute,
			wantData: map[string]string{"usage-bootstrap-signing": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := &fakeSecretsAPI{}
			conf := api.start(t)
			before := time.Now().Truncate(time.Second)
			code, out, errOut := runCLI(t, "", append([]string{"token", "create", "--bootstrap", "--kubeconfig", conf}, tt.args...)...)
			after := time.Now()
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if errOut != "" {
				t.Errorf("stderr = %q, want nothing", errOut)
			}
			id, secret, ok := bootstrap.ParseToken(strings.TrimSuffix(out, "\n"))
			if !ok || strings.Count(out, "\n") != 1 {
				t.Fatalf("stdout = %q, want one token line", out)
			}
			api.mu.Lock()
			defer api.mu.Unlock()
			s := api.created
			if api.path != "POST /api/v1/namespaces/kube-system/secrets" || s.Name != "bootstrap-token-"+id || s.Type != "bootstrap.kubernetes.io/token" {
				t.Fatalf("%s: created %s/%s of type %s", api.path, s.Namespace, s.Name, s.Type)
			}
			want := map[string]string{"token-id": id, "token-secret": secret}
			for k, v := range tt.wantData {
				want[k] = v
			}
			exp, hasExp := s.Data["expiration"]
			delete(s.Data, "expiration")
			if len(s.Data) != len(want) {
				t.Errorf("data keys %d, want %d: %q", len(s.Data), len(want), s.Data)
			}
			for k, v := range want {
				if string(s.Data[k]) != v {
					t.Errorf("data[%s] = %q, want %q", k, s.Data[k], v)
				}
			}
			if tt.wantExpires == 0 {
				if hasExp {
					t.Errorf("expiration %q, want none", exp)
				}
				return
			}
			e, err := time.Parse(time.RFC3339, string(exp))
			if err != nil || e.Before(before.Add(tt.wantExpires)) || e.After(after.Add(tt.wantExpires)) {
				t.Errorf("expiration %q (%v), want now + %v", exp, err, tt.wantExpires)
			}
		})
	}
}

// Bad flags give one line naming the flag, and a non-zero exit.
func TestTokenCreateBootstrapBadFlags_A10(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "admin.conf")
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no kubeconfig", []string{"--bootstrap"}, "--kubeconfig is required"},
		{"negative ttl", []string{"--bootstrap", "--kubeconfig", conf, "--ttl", "-1h"}, "--ttl -1h0m0s: must not be negative"},
		{"bad ttl", []string{"--bootstrap", "--kubeconfig", conf, "--ttl", "soon"}, `"soon" for "--ttl"`},
		{"group outside system:bootstrappers", []string{"--bootstrap", "--kubeconfig", conf, "--groups", "system:masters"}, `--groups: bootstrap group "system:masters" is invalid`},
		{"group with a trailing dash", []string{"--bootstrap", "--kubeconfig", conf, "--groups", "system:bootstrappers:x-"}, `--groups: bootstrap group "system:bootstrappers:x-"`},
		{"groups without authentication", []string{"--bootstrap", "--kubeconfig", conf, "--usages", "signing"}, `--groups: token groups need --usages to include "authentication"`},
		{"unknown usage", []string{"--bootstrap", "--kubeconfig", conf, "--usages", "signing,login"}, `--usages: unknown usage "login"`},
		{"service-account flag", []string{"--bootstrap", "--kubeconfig", conf, "--service-account", "x"}, "--service-account: not used with --bootstrap"},
		{"dir flag", []string{"--bootstrap", "--kubeconfig", conf, "--dir", "x"}, "--dir: not used with --bootstrap"},
		{"ttl without --bootstrap", []string{"--dir", "x", "--service-account", "y", "--ttl", "1h"}, "--ttl: only used with --bootstrap"},
		{"groups without --bootstrap", []string{"--dir", "x", "--service-account", "y", "--groups", "system:bootstrappers:a"}, "--groups: only used with --bootstrap"},
		{"missing kubeconfig file", []string{"--bootstrap", "--kubeconfig", conf}, "--kubeconfig " + conf},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI(t, "", append([]string{"token", "create"}, tt.args...)...)
			if code == 0 || out != "" {
				t.Fatalf("exit %d, stdout %q; want failure and no output", code, out)
			}
			if strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr = %q, want one line with %q", errOut, tt.want)
			}
		})
	}
}
