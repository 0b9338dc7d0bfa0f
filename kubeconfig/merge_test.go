package kubeconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// existingConfig is a kubeconfig as a user might have it: two clusters,
// users and contexts of their own, preferences, an extension, and one
// user that a merge will replace.
func existingConfig() *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	for _, n := range []string{"prod", "staging"} {
		c := clientcmdapi.NewCluster()
		c.Server = "https://" + n + ".example:6443"
		c.CertificateAuthority = "certs/" + n + "-ca.crt" // relative: must stay relative
		cfg.Clusters[n] = c
		u := clientcmdapi.NewAuthInfo()
		u.Exec = &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token", n}, APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode}
		cfg.AuthInfos[n+"-user"] = u
		ctx := clientcmdapi.NewContext()
		ctx.Cluster, ctx.AuthInfo, ctx.Namespace = n, n+"-user", "apps"
		cfg.Contexts[n] = ctx
	}
	old := clientcmdapi.NewAuthInfo()
	old.Token = "old-token"
	cfg.AuthInfos["nakam"] = old
	cfg.CurrentContext = "prod"
	cfg.Preferences.Extensions = map[string]runtime.Object{}
	cfg.Extensions["kubegate.test/keep"] = &runtime.Unknown{Raw: []byte(`{"keep":true}`), ContentType: "application/json"}
	return cfg
}

func writeExisting(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	if err := clientcmd.WriteToFile(*existingConfig(), path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMerge(t *testing.T) {
	t.Parallel()
	path := writeExisting(t)
	before, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	from, err := Build(Options{ClusterName: "kubegate", Server: "https://127.0.0.1:6443", CAPEM: []byte("ca"), UserName: "nakam", CertPEM: []byte("cert"), KeyPEM: []byte("key")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Merge(path, from)
	if err != nil {
		t.Fatal(err)
	}
	after, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("other entries unchanged", func(t *testing.T) {
		for _, n := range []string{"prod", "staging"} {
			if !reflect.DeepEqual(after.Clusters[n], before.Clusters[n]) {
				t.Errorf("cluster %s = %+v, want %+v", n, after.Clusters[n], before.Clusters[n])
			}
			if !reflect.DeepEqual(after.AuthInfos[n+"-user"], before.AuthInfos[n+"-user"]) {
				t.Errorf("user %s-user = %+v, want %+v", n, after.AuthInfos[n+"-user"], before.AuthInfos[n+"-user"])
			}
			if !reflect.DeepEqual(after.Contexts[n], before.Contexts[n]) {
				t.Errorf("context %s = %+v, want %+v", n, after.Contexts[n], before.Contexts[n])
			}
		}
		if !reflect.DeepEqual(after.Extensions, before.Extensions) || !reflect.DeepEqual(after.Preferences, before.Preferences) {
			t.Errorf("extensions/preferences changed: %+v %+v", after.Extensions, after.Preferences)
		}
		if after.CurrentContext != "prod" || res.CurrentContext != "prod" {
			t.Errorf("current context = %q (result %q), want prod kept", after.CurrentContext, res.CurrentContext)
		}
		if got, want := len(after.Clusters)+len(after.AuthInfos)+len(after.Contexts), 3+3+3; got != want {
			t.Errorf("%d entries after the merge, want %d", got, want)
		}
	})
	t.Run("new entries merged", func(t *testing.T) {
		u := after.AuthInfos["nakam"]
		if u == nil || string(u.ClientCertificateData) != "cert" || u.Token != "" {
			t.Errorf("user nakam = %+v, want the new certificate user replacing the token user", u)
		}
		c := after.Contexts["nakam@kubegate"]
		if c == nil || c.Cluster != "kubegate" || c.AuthInfo != "nakam" {
			t.Errorf("context nakam@kubegate = %+v", c)
		}
		if string(after.Clusters["kubegate"].CertificateAuthorityData) != "ca" {
			t.Errorf("cluster kubegate = %+v", after.Clusters["kubegate"])
		}
	})
	t.Run("result", func(t *testing.T) {
		if got := strings.Join(res.Replaced, ","); got != `user "nakam"` {
			t.Errorf("replaced = %s, want user \"nakam\"", got)
		}
		if got := strings.Join(res.Added, ","); got != `cluster "kubegate",context "nakam@kubegate"` {
			t.Errorf("added = %s", got)
		}
	})
	t.Run("mode and lock", func(t *testing.T) {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
		}
		if _, err := os.Stat(path + ".lock"); !os.IsNotExist(err) {
			t.Errorf("lock file left behind: %v", err)
		}
	})
}

func TestMergeCreates(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".kube", "config")
	from, err := Build(Options{Server: "https://a:6443", UserName: "u", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Merge(path, from)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.CurrentContext != "u@kubernetes" || len(res.Replaced) != 0 {
		t.Errorf("result = %+v, want a created file with current context u@kubernetes", res)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.CurrentContext != "u@kubernetes" || got.AuthInfos["u"].Token != "t" {
		t.Errorf("loaded %+v", got)
	}
}

func TestMergeRefuses(t *testing.T) {
	t.Parallel()
	from, err := Build(Options{Server: "https://a:6443", UserName: "u", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  string
	}{
		{name: "locked", setup: func(t *testing.T, path string) {
			if err := os.WriteFile(path+".lock", nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, want: "being changed by another program"},
		{name: "corrupt", setup: func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("clusters: [oops"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, want: "merge into"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "config")
			tt.setup(t, path)
			before, _ := os.ReadFile(path)
			_, err := Merge(path, from)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Merge error = %v, want %q", err, tt.want)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Errorf("file changed after a failed merge")
			}
		})
	}
}
