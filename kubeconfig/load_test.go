package kubeconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// writeNamed writes a kubeconfig whose only context is name.
func writeNamed(t *testing.T, path, name string) {
	t.Helper()
	cfg, err := Build(Options{Server: "https://" + name + ":6443", UserName: name, Token: name, ContextName: name})
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(path, cfg, true); err != nil {
		t.Fatal(err)
	}
}

// Not parallel: these tests set HOME and KUBECONFIG.
func TestLoadingPrecedence(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	homeFile := filepath.Join(home, ".kube", "config")
	explicit := filepath.Join(dir, "explicit.conf")
	envA := filepath.Join(dir, "a.conf")
	envB := filepath.Join(dir, "b.conf")
	missing := filepath.Join(dir, "missing.conf")
	writeNamed(t, homeFile, "home")
	writeNamed(t, explicit, "explicit")
	writeNamed(t, envA, "a")
	writeNamed(t, envB, "b")

	tests := []struct {
		name, explicit, env string
		wantCurrent         string // current context after loading
		wantContexts        string // every context loaded
		wantPath            string // DefaultPath
	}{
		{name: "explicit wins", explicit: explicit, env: envA, wantCurrent: "explicit", wantContexts: "explicit", wantPath: explicit},
		{name: "KUBECONFIG list merged, first wins", env: envA + string(os.PathListSeparator) + envB, wantCurrent: "a", wantContexts: "a,b", wantPath: envA},
		{name: "missing KUBECONFIG entries skipped", env: missing + string(os.PathListSeparator) + envB, wantCurrent: "b", wantContexts: "b", wantPath: envB},
		{name: "home when KUBECONFIG unset", wantCurrent: "home", wantContexts: "home", wantPath: homeFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv(clientcmd.RecommendedConfigPathEnvVar, tt.env)
			cfg, err := LoadDefault(tt.explicit)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.CurrentContext != tt.wantCurrent {
				t.Errorf("current context = %q, want %q", cfg.CurrentContext, tt.wantCurrent)
			}
			if got := strings.Join(sortedNames(cfg.Contexts), ","); got != tt.wantContexts {
				t.Errorf("contexts = %s, want %s", got, tt.wantContexts)
			}
			if got := DefaultPath(tt.explicit); got != tt.wantPath {
				t.Errorf("DefaultPath = %s, want %s", got, tt.wantPath)
			}
		})
	}
	t.Run("no KUBECONFIG file exists", func(t *testing.T) {
		t.Setenv("HOME", home)
		t.Setenv(clientcmd.RecommendedConfigPathEnvVar, missing+string(os.PathListSeparator)+filepath.Join(dir, "other.conf"))
		if got := DefaultPath(""); got != missing {
			t.Errorf("DefaultPath = %s, want the first entry %s", got, missing)
		}
	})
	t.Run("missing explicit file is an error", func(t *testing.T) {
		t.Setenv("HOME", home)
		t.Setenv(clientcmd.RecommendedConfigPathEnvVar, "")
		if _, err := LoadDefault(missing); err == nil {
			t.Error("LoadDefault of a missing --kubeconfig succeeded")
		}
	})
}
