package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/internal/testpki"
)

// initTreeWith runs `pki init` with args into a new directory and returns it.
func initTreeWith(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	code, _, errOut := runCLI(t, "", append([]string{"pki", "init", "--dir", dir}, args...)...)
	if code != 0 {
		t.Fatalf("pki init: exit %d: %s", code, errOut)
	}
	return dir
}

// checkOneLineFailure checks the shape of every bad-input failure: exit 1,
// nothing on stdout, one line on stderr containing want.
func checkOneLineFailure(t *testing.T, code int, out, errOut, want string) {
	t.Helper()
	if code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
	if out != "" {
		t.Errorf("stdout = %q, want nothing", out)
	}
	if !strings.HasPrefix(errOut, "kubegate: ") || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) {
		t.Errorf("stderr = %q, want one line containing %q", errOut, want)
	}
}

func TestCertInspectBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert := testpki.SelfSigned(t, testpki.Options{CN: "x"})
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	truncated := write("truncated.crt", string(cert.CertPEM[:len(cert.CertPEM)/2]))
	noUsers := write("no-users.conf", "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: https://k:6443\n")
	garbage := write("garbage.bin", "\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe")
	good := write("good.crt", string(cert.CertPEM))

	tests := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{name: "truncated PEM", args: []string{truncated}, want: "inspect " + truncated + ": truncated PEM"},
		{name: "binary garbage", args: []string{garbage}, want: "input is binary data"},
		{name: "binary garbage on stdin", stdin: "\x00\x01\x02\x03", args: []string{"-"}, want: "inspect standard input: input is binary data"},
		{name: "kubeconfig with no users", args: []string{noUsers}, want: "kubeconfig has no users"},
		{name: "JWT with two segments", stdin: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0\n", args: []string{"-"}, want: "JWT has 2 segments, want 3"},
		{name: "empty stdin", args: []string{"-"}, want: "inspect standard input: input is empty"},
		{name: "missing file", args: []string{filepath.Join(dir, "nope")}, want: "no such file or directory"},
		{name: "bad output format", args: []string{good, "-o", "yaml"}, want: `--output "yaml": want text or json`},
		{name: "CA file is not PEM", args: []string{good, "--ca", garbage}, want: "--ca " + garbage},
		{name: "key file without keys", args: []string{good, "--key", noUsers}, want: "--key " + noUsers},
		{name: "no argument", args: nil, want: "accepts 1 arg(s), received 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI(t, tt.stdin, append([]string{"cert", "inspect"}, tt.args...)...)
			checkOneLineFailure(t, code, out, errOut, tt.want)
		})
		t.Run("kubeconfig inspect/"+tt.name, func(t *testing.T) {
			if tt.args == nil {
				return // kubeconfig inspect without FILE reads kubectl's kubeconfig
			}
			t.Parallel()
			code, out, errOut := runCLI(t, tt.stdin, append([]string{"kubeconfig", "inspect"}, tt.args...)...)
			checkOneLineFailure(t, code, out, errOut, tt.want)
		})
	}
}

func TestCertInspectTree(t *testing.T) {
	t.Parallel()
	dir := initTreeWith(t)
	pki := filepath.Join(dir, "pki")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "serving cert against the CA", args: []string{filepath.Join(pki, "apiserver.crt"), "--ca", filepath.Join(pki, "ca.crt")},
			want: []string{"Subject:              CN = kube-apiserver", "Result:  verified against " + filepath.Join(pki, "ca.crt"), "no client-auth extended key usage"}},
		{name: "front-proxy cert against the wrong CA", args: []string{filepath.Join(pki, "front-proxy-client.crt"), "--ca", filepath.Join(pki, "ca.crt")},
			want: []string{"NOT verified", "x509: certificate signed by unknown authority"}},
		{name: "kubeconfig against its own CA", args: []string{filepath.Join(dir, "super-admin.conf")},
			want: []string{"Groups:  system:masters", `verified against CA of cluster "kubernetes"`, "matches the certificate"}},
		{name: "private key shows type only", args: []string{filepath.Join(pki, "sa.key")},
			want: []string{"Type:      ECDSA P-256 private key"}},
		{name: "public key shows the kid", args: []string{filepath.Join(pki, "sa.pub")},
			want: []string{"Service-account key ID:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI(t, "", append([]string{"cert", "inspect"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "PRIVATE KEY") && !strings.Contains(out, "PEM type:") {
				t.Errorf("output contains key material:\n%s", out)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		code, out, errOut := runCLI(t, "", "cert", "inspect", "-o", "json", filepath.Join(dir, "admin.conf"))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var r struct {
			Kind       string
			Kubeconfig struct {
				Users []struct {
					Name         string
					Certificates []struct {
						PEM      string
						Identity struct{ User string }
					}
					Chains []struct{ Verified bool }
				}
			}
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		u := r.Kubeconfig.Users
		if r.Kind != "kubeconfig" || len(u) != 1 || u[0].Certificates[0].Identity.User != "kubernetes-admin" ||
			!strings.HasPrefix(u[0].Certificates[0].PEM, "-----BEGIN CERTIFICATE-----") || !u[0].Chains[0].Verified {
			t.Errorf("json = %+v", r)
		}
	})
	t.Run("kubeconfig inspect is the same report", func(t *testing.T) {
		t.Parallel()
		conf := filepath.Join(dir, "admin.conf")
		_, viaCert, _ := runCLI(t, "", "cert", "inspect", conf)
		code, viaKubeconfig, errOut := runCLI(t, "", "kubeconfig", "inspect", conf)
		if code != 0 || viaKubeconfig != viaCert {
			t.Errorf("kubeconfig inspect: exit %d, %s; output differs from cert inspect", code, errOut)
		}
	})
}

// Not parallel: sets KUBECONFIG.
func TestKubeconfigInspectDefault(t *testing.T) {
	dir := initTreeWith(t)
	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, filepath.Join(dir, "scheduler.conf")+string(os.PathListSeparator)+filepath.Join(dir, "admin.conf"))
	code, out, errOut := runCLI(t, "", "kubeconfig", "inspect")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"Current context:  system:kube-scheduler@kubernetes", `User "kubernetes-admin"`, `User "system:kube-scheduler"`} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q", w)
		}
	}
	code, out, errOut = runCLI(t, "", "kubeconfig", "inspect", "--kubeconfig", filepath.Join(dir, "admin.conf"))
	if code != 0 || strings.Contains(out, "scheduler") {
		t.Errorf("--kubeconfig did not take precedence over KUBECONFIG: exit %d, %s", code, errOut)
	}
}
