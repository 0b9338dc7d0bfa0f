package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/kubeconfig"
)

func TestKubeconfigCreate(t *testing.T) {
	t.Parallel()
	dir := initTreeWith(t)
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		args      []string
		stdin     string
		path      string // the kubeconfig written; "" means stdout
		user, ctx string
		orgs      []string // for certificate users
		token     string   // for token users
	}{
		{name: "certificate user", args: []string{"--user", "nakam", "--org", "devops", "--org", "devs"},
			path: "nakam.conf", user: "nakam", ctx: "nakam@kubernetes", orgs: []string{"devops", "devs"}},
		{name: "node user with names", args: []string{"--user", "system:node:w1", "--org", "system:nodes", "--cluster-name", "lab", "--context", "w1", "--validity", "30d"},
			path: "system_node_w1.conf", user: "system:node:w1", ctx: "w1", orgs: []string{"system:nodes"}},
		{name: "token user", args: []string{"--user", "bot", "--token", "abc.def", "--out", "DIR/custom/bot.conf"},
			path: "custom/bot.conf", user: "bot", ctx: "bot@kubernetes", token: "abc.def"},
		{name: "token from stdin", args: []string{"--user", "bot2", "--token", "-", "--out", "DIR/bot2.conf"}, stdin: "s3cr3t\n",
			path: "bot2.conf", user: "bot2", ctx: "bot2@kubernetes", token: "s3cr3t"},
		{name: "stdout", args: []string{"--user", "printed", "--out", "-"}, user: "printed", ctx: "printed@kubernetes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"kubeconfig", "create", "--dir", dir, "--server", "https://10.0.0.1:6443"}
			for _, a := range tt.args {
				if rest, ok := strings.CutPrefix(a, "DIR/"); ok {
					a = filepath.Join(dir, rest)
				}
				args = append(args, a)
			}
			code, out, errOut := runCLI(t, tt.stdin, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var cfg *clientcmdapi.Config
			if tt.path == "" {
				cfg, err = clientcmd.Load([]byte(out))
			} else {
				path := filepath.Join(dir, tt.path)
				if !strings.Contains(errOut, "wrote "+path) {
					t.Errorf("stderr = %q, want it to name %s", errOut, path)
				}
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != 0o600 {
					t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
				}
				cfg, err = kubeconfig.Load(path)
				if err != nil {
					t.Fatal(err)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.CurrentContext != tt.ctx || cfg.Contexts[tt.ctx] == nil || cfg.Contexts[tt.ctx].AuthInfo != tt.user {
				t.Fatalf("current context = %q, contexts %v; want %q for user %q", cfg.CurrentContext, cfg.Contexts, tt.ctx, tt.user)
			}
			cluster := cfg.Clusters[cfg.Contexts[tt.ctx].Cluster]
			if cluster.Server != "https://10.0.0.1:6443" || string(cluster.CertificateAuthorityData) != string(caPEM) {
				t.Errorf("cluster = %s with %d bytes of CA, want the server and DIR/pki/ca.crt", cluster.Server, len(cluster.CertificateAuthorityData))
			}
			u := cfg.AuthInfos[tt.user]
			if tt.token != "" {
				if u.Token != tt.token || len(u.ClientCertificateData) != 0 {
					t.Errorf("user = %+v, want only token %q", u, tt.token)
				}
				return
			}
			c, err := ca.ParseCertPEM("client", u.ClientCertificateData)
			if err != nil {
				t.Fatal(err)
			}
			if c.Subject.CommonName != tt.user || !slices.Equal(c.Subject.Organization, tt.orgs) {
				t.Errorf("subject = %v, want CN=%s O=%v", c.Subject, tt.user, tt.orgs)
			}
			if len(u.ClientKeyData) == 0 {
				t.Error("no client-key-data")
			}
		})
	}
}

func TestKubeconfigCreateRefuses(t *testing.T) {
	t.Parallel()
	dir := initTreeWith(t)
	existing := filepath.Join(dir, "admin.conf")
	before, err := os.ReadFile(existing)
	if err != nil {
		t.Fatal(err)
	}
	noCA := t.TempDir()
	base := []string{"kubeconfig", "create", "--dir", dir, "--server", "https://k:6443"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "no user", args: base, want: "--user is required"},
		{name: "no server", args: []string{"kubeconfig", "create", "--dir", dir, "--user", "u"}, want: "--server is required"},
		{name: "http server", args: []string{"kubeconfig", "create", "--dir", dir, "--user", "u", "--server", "http://k:6443"}, want: "want an https URL"},
		{name: "merge and out", args: append(base, "--user", "u", "--merge", "--out", "x.conf"), want: "--merge and --out cannot be used together"},
		{name: "org with token", args: append(base, "--user", "u", "--token", "t", "--org", "g"), want: "--org applies to certificate users"},
		{name: "bad validity", args: append(base, "--user", "u", "--validity", "soon"), want: `--validity "soon"`},
		{name: "existing file", args: append(base, "--user", "u", "--out", existing), want: existing + " already exists; use --force"},
		{name: "no CA", args: []string{"kubeconfig", "create", "--dir", noCA, "--user", "u", "--server", "https://k:6443"}, want: "ca.crt"},
		{name: "empty token on stdin", args: append(base, "--user", "u", "--token", "-"), want: "standard input holds no token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI(t, "", tt.args...)
			checkOneLineFailure(t, code, out, errOut, tt.want)
		})
	}
	t.Run("nothing written", func(t *testing.T) {
		after, _ := os.ReadFile(existing)
		if string(after) != string(before) {
			t.Error("admin.conf changed")
		}
		if m, _ := filepath.Glob(filepath.Join(dir, "u.conf")); len(m) != 0 {
			t.Errorf("wrote %v", m)
		}
		if entries, _ := os.ReadDir(noCA); len(entries) != 0 {
			t.Errorf("wrote into a directory without a CA: %v", entries)
		}
	})
	t.Run("force replaces", func(t *testing.T) {
		code, _, errOut := runCLI(t, "", append(base, "--user", "replaced", "--out", filepath.Join(dir, "force.conf"))...)
		if code != 0 {
			t.Fatal(errOut)
		}
		code, _, errOut = runCLI(t, "", append(base, "--user", "again", "--out", filepath.Join(dir, "force.conf"), "--force")...)
		if code != 0 {
			t.Fatal(errOut)
		}
		cfg, err := kubeconfig.Load(filepath.Join(dir, "force.conf"))
		if err != nil || cfg.AuthInfos["again"] == nil || cfg.AuthInfos["replaced"] != nil {
			t.Errorf("after --force: %v, users %v", err, cfg.AuthInfos)
		}
	})
}

// Not parallel: sets KUBECONFIG.
func TestKubeconfigCreateMerge(t *testing.T) {
	dir := initTreeWith(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	target := filepath.Join(t.TempDir(), "merged.conf")
	missing := filepath.Join(t.TempDir(), "missing.conf")
	// The existing file: kubectl's own admin context plus a second one.
	if _, err := kubeconfig.Merge(target, mustLoad(t, filepath.Join(dir, "admin.conf"))); err != nil {
		t.Fatal(err)
	}
	if _, err := kubeconfig.Merge(target, mustLoad(t, filepath.Join(dir, "scheduler.conf"))); err != nil {
		t.Fatal(err)
	}
	before := mustLoad(t, target)
	// KUBECONFIG lists a missing file first: kubectl writes to the first
	// file that exists.
	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, missing+string(os.PathListSeparator)+target)

	code, _, errOut := runCLI(t, "", "kubeconfig", "create", "--dir", dir, "--server", "https://k:6443", "--user", "nakam", "--org", "devs", "--merge")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "merged into "+target) || !strings.Contains(errOut, "replaced cluster \"kubernetes\"") {
		t.Errorf("stderr = %q", errOut)
	}
	after := mustLoad(t, target)
	for _, ctx := range []string{"kubernetes-admin@kubernetes", "system:kube-scheduler@kubernetes"} {
		user := before.Contexts[ctx].AuthInfo
		if !reflect.DeepEqual(after.Contexts[ctx], before.Contexts[ctx]) {
			t.Errorf("context %s changed", ctx)
		}
		if !reflect.DeepEqual(after.AuthInfos[user], before.AuthInfos[user]) {
			t.Errorf("user %s changed", user)
		}
	}
	if after.CurrentContext != before.CurrentContext {
		t.Errorf("current context = %q, want %q kept", after.CurrentContext, before.CurrentContext)
	}
	if after.Contexts["nakam@kubernetes"] == nil || after.AuthInfos["nakam"] == nil {
		t.Errorf("merged file lacks the new context or user")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("created %s; want the merge to go to the first existing file", missing)
	}

	t.Run("home when KUBECONFIG is unset", func(t *testing.T) {
		t.Setenv(clientcmd.RecommendedConfigPathEnvVar, "")
		code, _, errOut := runCLI(t, "", "kubeconfig", "create", "--dir", dir, "--server", "https://k:6443", "--user", "bot", "--token", "t", "--merge")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		cfg := mustLoad(t, filepath.Join(home, ".kube", "config"))
		if cfg.AuthInfos["bot"] == nil || cfg.CurrentContext != "bot@kubernetes" {
			t.Errorf("~/.kube/config = %+v", cfg)
		}
	})
	t.Run("explicit --kubeconfig wins", func(t *testing.T) {
		explicit := filepath.Join(t.TempDir(), "explicit.conf")
		code, _, errOut := runCLI(t, "", "kubeconfig", "create", "--dir", dir, "--server", "https://k:6443", "--user", "x", "--token", "t", "--merge", "--kubeconfig", explicit)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if mustLoad(t, explicit).AuthInfos["x"] == nil || mustLoad(t, target).AuthInfos["x"] != nil {
			t.Error("--kubeconfig did not take precedence over KUBECONFIG")
		}
	})
}

func mustLoad(t *testing.T, path string) *clientcmdapi.Config {
	t.Helper()
	cfg, err := kubeconfig.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestKubeconfigCreateRefusesUnsafeNames(t *testing.T) {
	t.Parallel()
	dir := initTreeWith(t)
	before := treeFiles(t, dir)
	base := []string{"kubeconfig", "create", "--dir", dir, "--server", "https://k:6443"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"header injection in user", []string{"--user", "evil\nX-Remote-User: admin"},
			`--user "evil\nX-Remote-User: admin": contains a control character (U+000A)`},
		{"spaces around user", []string{"--user", " kubernetes-admin "},
			`--user " kubernetes-admin ": begins with whitespace (U+0020)`},
		{"space before org", []string{"--user", "alice", "--org", " system:masters"},
			`--org " system:masters": begins with whitespace (U+0020)`},
		{"NUL in org", []string{"--user", "bob", "--org", "devs\x00"},
			`--org "devs\x00": contains a control character (U+0000)`},
		{"token user", []string{"--user", "bot\n", "--token", "abc.def"},
			`--user "bot\n": contains a control character (U+000A)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append(base, tt.args...)...)
			checkRefusedName(t, dir, before, code, out, errOut, tt.want)
		})
	}
}

func TestKubeconfigCreateOIDCUser(t *testing.T) {
	t.Parallel()
	dir := initTreeWith(t)
	caFile := filepath.Join(dir, "pki", "ca.crt")
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	// The provider's CA: any PEM certificate will do; the front-proxy CA is one.
	oidcCAFile := filepath.Join(dir, "pki", "front-proxy-ca.crt")
	oidcCAPEM, err := os.ReadFile(oidcCAFile)
	if err != nil {
		t.Fatal(err)
	}
	issuer := "https://dex.example.com:5556/dex"
	tests := []struct {
		name    string
		args    []string
		user    string
		command string
		args0   []string // the plugin's arguments
	}{
		{
			name:    "kubelogin as a kubectl plugin, defaults",
			args:    []string{"--oidc-issuer", issuer, "--oidc-client-id", "kubernetes"},
			user:    "oidc",
			command: "kubectl",
			args0:   []string{"oidc-login", "get-token", "--oidc-issuer-url=" + issuer, "--oidc-client-id=kubernetes"},
		},
		{
			name: "every option",
			args: []string{"--user", "alice", "--oidc-issuer", issuer, "--oidc-client-id", "kubernetes",
				"--oidc-client-secret", "s3cr3t", "--oidc-extra-scope", "email", "--oidc-extra-scope", "groups",
				"--oidc-ca", oidcCAFile, "--exec-plugin", "kubectl-oidc_login"},
			user:    "alice",
			command: "kubectl-oidc_login",
			args0: []string{"get-token", "--oidc-issuer-url=" + issuer, "--oidc-client-id=kubernetes",
				"--oidc-client-secret=s3cr3t", "--oidc-extra-scope=email", "--oidc-extra-scope=groups",
				"--certificate-authority-data=" + base64.StdEncoding.EncodeToString(oidcCAPEM)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "oidc.conf")
			// No --dir: the server's CA comes from --ca.
			args := append([]string{"kubeconfig", "create", "--server", "https://127.0.0.1:6443", "--ca", caFile, "--out", out}, tt.args...)
			code, stdout, errOut := runCLI(t, "", args...)
			if code != 0 || stdout != "" {
				t.Fatalf("exit %d, stdout %q: %s", code, stdout, errOut)
			}
			if !strings.Contains(errOut, "wrote "+out+" (OIDC user "+tt.user+", logging in at "+issuer) {
				t.Errorf("stderr = %q", errOut)
			}
			if strings.Contains(errOut, "s3cr3t") {
				t.Errorf("stderr shows the client secret: %q", errOut)
			}
			cfg := mustLoad(t, out)
			ctx := cfg.Contexts[cfg.CurrentContext]
			if cfg.CurrentContext != tt.user+"@kubernetes" || ctx == nil || ctx.AuthInfo != tt.user {
				t.Fatalf("current context = %q (%+v); want %s@kubernetes for user %s", cfg.CurrentContext, ctx, tt.user, tt.user)
			}
			if c := cfg.Clusters[ctx.Cluster]; c.Server != "https://127.0.0.1:6443" || string(c.CertificateAuthorityData) != string(caPEM) {
				t.Errorf("cluster = %s with %d bytes of CA; want the server and --ca", c.Server, len(c.CertificateAuthorityData))
			}
			u := cfg.AuthInfos[tt.user]
			if u.Token != "" || len(u.ClientCertificateData) != 0 || len(u.ClientKeyData) != 0 {
				t.Errorf("user has a token or certificate besides the plugin: %+v", u)
			}
			want := &clientcmdapi.ExecConfig{
				APIVersion:      "client.authentication.k8s.io/v1",
				Command:         tt.command,
				Args:            tt.args0,
				InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode,
			}
			got := u.Exec
			if got == nil || got.APIVersion != want.APIVersion || got.Command != want.Command ||
				!slices.Equal(got.Args, want.Args) || got.InteractiveMode != want.InteractiveMode || len(got.Env) != 0 || got.ProvideClusterInfo {
				t.Fatalf("exec:\n got %+v\nwant %+v", got, want)
			}
			// client-go takes it as a credential plugin.
			rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
			if err != nil {
				t.Fatal(err)
			}
			if rc.ExecProvider == nil || rc.ExecProvider.Command != tt.command || rc.BearerToken != "" {
				t.Errorf("rest config: exec %+v, bearer token set %v", rc.ExecProvider, rc.BearerToken != "")
			}
		})
	}
}

func TestKubeconfigCreateTokenUserWithCA(t *testing.T) {
	t.Parallel()
	dir := initTreeWith(t)
	caFile := filepath.Join(dir, "pki", "front-proxy-ca.crt")
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "alice.conf")
	code, _, errOut := runCLI(t, "eyJ.id.token\n", "kubeconfig", "create", "--user", "alice", "--token", "-",
		"--server", "https://127.0.0.1:6443", "--ca", caFile, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	cfg := mustLoad(t, out)
	if u := cfg.AuthInfos["alice"]; u == nil || u.Token != "eyJ.id.token" || u.Exec != nil {
		t.Fatalf("user = %+v; want token eyJ.id.token only", u)
	}
	if c := cfg.Clusters["kubernetes"]; string(c.CertificateAuthorityData) != string(caPEM) {
		t.Error("cluster CA is not --ca")
	}
}

func TestKubeconfigCreateOIDCRefuses(t *testing.T) {
	t.Parallel()
	dir := initTreeWith(t)
	caFile := filepath.Join(dir, "pki", "ca.crt")
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"kubeconfig", "create", "--server", "https://k:6443", "--ca", caFile, "--out", filepath.Join(dir, "x.conf")}
	oidc := append(slices.Clone(base), "--oidc-issuer", "https://issuer.example.com")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no client ID", oidc, "--oidc-client-id is required with --oidc-issuer"},
		{"http issuer", append(slices.Clone(base), "--oidc-issuer", "http://issuer.example.com", "--oidc-client-id", "k"),
			`--oidc-issuer "http://issuer.example.com": want an https URL`},
		{"issuer with query", append(slices.Clone(base), "--oidc-issuer", "https://i.example.com/?a=b", "--oidc-client-id", "k"),
			"want an https URL without query or fragment"},
		{"client ID without issuer", append(slices.Clone(base), "--user", "u", "--oidc-client-id", "k"), "--oidc-client-id applies only with --oidc-issuer"},
		{"secret without issuer", append(slices.Clone(base), "--user", "u", "--oidc-client-secret", "s"), "--oidc-client-secret applies only with --oidc-issuer"},
		{"scope without issuer", append(slices.Clone(base), "--user", "u", "--oidc-extra-scope", "email"), "--oidc-extra-scope applies only with --oidc-issuer"},
		{"plugin without issuer", append(slices.Clone(base), "--user", "u", "--exec-plugin", "kubelogin"), "--exec-plugin applies only with --oidc-issuer"},
		{"token and issuer", append(slices.Clone(oidc), "--oidc-client-id", "k", "--token", "t"), "--token and --oidc-issuer cannot be used together"},
		{"org with issuer", append(slices.Clone(oidc), "--oidc-client-id", "k", "--org", "devs"), "--org applies to certificate users; an OIDC user's groups"},
		{"validity with issuer", append(slices.Clone(oidc), "--oidc-client-id", "k", "--validity", "1h"), "--validity applies to certificate users"},
		{"scope with a space", append(slices.Clone(oidc), "--oidc-client-id", "k", "--oidc-extra-scope", "email groups"), `--oidc-extra-scope "email groups": want one scope name`},
		{"empty scope", append(slices.Clone(oidc), "--oidc-client-id", "k", "--oidc-extra-scope", ""), `--oidc-extra-scope "": want one scope name`},
		{"client ID with a newline", append(slices.Clone(oidc), "--oidc-client-id", "k\n"), `--oidc-client-id "k\n": contains a control character`},
		{"secret with a newline", append(slices.Clone(oidc), "--oidc-client-id", "k", "--oidc-client-secret", "s3cr3t\n"), "--oidc-client-secret: contains a control character"},
		{"provider CA not PEM", append(slices.Clone(oidc), "--oidc-client-id", "k", "--oidc-ca", notPEM), "--oidc-ca: "},
		{"provider CA missing", append(slices.Clone(oidc), "--oidc-client-id", "k", "--oidc-ca", filepath.Join(dir, "missing.crt")), "--oidc-ca: open "},
		{"server CA not PEM", []string{"kubeconfig", "create", "--server", "https://k:6443", "--ca", notPEM, "--out", filepath.Join(dir, "x.conf"),
			"--oidc-issuer", "https://i.example.com", "--oidc-client-id", "k"}, "--ca: "},
		{"no dir and no CA", []string{"kubeconfig", "create", "--server", "https://k:6443", "--out", filepath.Join(dir, "x.conf"),
			"--oidc-issuer", "https://i.example.com", "--oidc-client-id", "k"}, "--dir is required (token and OIDC users may give --ca instead)"},
		{"no dir and no out", []string{"kubeconfig", "create", "--server", "https://k:6443", "--ca", caFile,
			"--oidc-issuer", "https://i.example.com", "--oidc-client-id", "k"}, "--out or --merge is required without --dir"},
		{"certificate user without dir", append(slices.Clone(base), "--user", "u"), "--dir is required: a certificate user's certificate is signed by DIR/pki/ca.key"},
	}
	// The group returns once its parallel cases are done.
	t.Run("refused", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				code, out, errOut := runCLI(t, "", tt.args...)
				checkOneLineFailure(t, code, out, errOut, tt.want)
				if strings.Contains(errOut, "s3cr3t") {
					t.Errorf("the error shows the client secret: %q", errOut)
				}
			})
		}
	})
	t.Run("nothing written", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(dir, "x.conf")); err == nil {
			t.Error("a refused command wrote x.conf")
		}
	})
}
