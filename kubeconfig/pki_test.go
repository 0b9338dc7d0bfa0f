package kubeconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/internal/testpki"
)

func TestWriteCredentialsAndEmbeddedCerts(t *testing.T) {
	dir := t.TempDir()
	root := testpki.NewCA(t, "kubernetes")
	admin := root.Issue(t, testpki.Options{CN: "kubernetes-admin", Orgs: []string{"kubeadm:cluster-admins"}})
	sched := root.Issue(t, testpki.Options{CN: "system:kube-scheduler"})
	creds := []ca.Credential{
		{Kubeconfig: "admin.conf", User: "kubernetes-admin", CAPEM: root.CertPEM, CertPEM: admin.CertPEM, KeyPEM: admin.KeyPEM},
		{Kubeconfig: "scheduler.conf", User: "system:kube-scheduler", CAPEM: root.CertPEM, CertPEM: sched.CertPEM, KeyPEM: sched.KeyPEM},
	}
	if err := WriteCredentials(dir, "prod", "https://10.0.0.1:6443", creds); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(filepath.Join(dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.CurrentContext, "kubernetes-admin@prod"; got != want {
		t.Errorf("current context = %q, want %q", got, want)
	}
	if got := cfg.Clusters["prod"]; got == nil || got.Server != "https://10.0.0.1:6443" || !bytes.Equal(got.CertificateAuthorityData, root.CertPEM) {
		t.Errorf("cluster prod = %+v, want the server and embedded CA", got)
	}
	if info, _ := os.Stat(filepath.Join(dir, "admin.conf")); info.Mode().Perm() != 0o600 {
		t.Errorf("admin.conf mode %v, want 0600", info.Mode().Perm())
	}

	emb, err := ScanDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(emb) != 2 || emb[0].File != "admin.conf" || emb[0].User != "kubernetes-admin" ||
		!bytes.Equal(emb[1].CertPEM, sched.CertPEM) || !bytes.Equal(emb[1].KeyPEM, sched.KeyPEM) {
		t.Errorf("ScanDir = %+v", emb)
	}

	fresh := root.Issue(t, testpki.Options{CN: "kubernetes-admin"})
	if err := ReplaceClientCert(filepath.Join(dir, "admin.conf"), "kubernetes-admin", fresh.CertPEM, fresh.KeyPEM); err != nil {
		t.Fatal(err)
	}
	emb, err = EmbeddedCerts(filepath.Join(dir, "admin.conf"), "admin.conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(emb) != 1 || !bytes.Equal(emb[0].CertPEM, fresh.CertPEM) || !bytes.Equal(emb[0].KeyPEM, fresh.KeyPEM) {
		t.Error("ReplaceClientCert did not replace the embedded cert and key")
	}
	if cfg2, _ := Load(filepath.Join(dir, "admin.conf")); cfg2.Clusters["prod"].Server != "https://10.0.0.1:6443" {
		t.Error("ReplaceClientCert changed the cluster")
	}
	if err := ReplaceClientCert(filepath.Join(dir, "admin.conf"), "nobody", fresh.CertPEM, fresh.KeyPEM); err == nil || !strings.Contains(err.Error(), `no user "nobody"`) {
		t.Errorf("ReplaceClientCert(unknown user) = %v", err)
	}
}

func TestWriteCredentialsBadServerWritesNothing(t *testing.T) {
	dir := t.TempDir()
	err := WriteCredentials(dir, "k", "", []ca.Credential{{Kubeconfig: "a.conf", User: "a"}})
	if err == nil {
		t.Fatal("WriteCredentials with an empty server succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("wrote %d files, want none", len(entries))
	}
}

func TestScanDirCorruptKubeconfigNamesFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.conf")
	os.WriteFile(p, []byte("{{{ not yaml"), 0o600)
	if _, err := ScanDir(dir); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("ScanDir = %v, want an error naming %s", err, p)
	}
}
