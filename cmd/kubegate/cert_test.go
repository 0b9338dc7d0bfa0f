package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/kubeconfig"
)

func initTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if code, _, errOut := runCLI(t, "", "pki", "init", "--dir", dir); code != 0 {
		t.Fatalf("pki init: %s", errOut)
	}
	return dir
}

func TestCertIssue(t *testing.T) {
	t.Parallel()
	dir := initTree(t)
	code, _, errOut := runCLI(t, "", "cert", "issue", "--dir", dir, "--cn", "nakam", "--org", "devops", "--org", "devs")
	if code != 0 {
		t.Fatalf("cert issue: %s", errOut)
	}
	if !strings.Contains(errOut, "O=devops, O=devs, CN=nakam") {
		t.Errorf("stderr %q does not show the subject as issued", errOut)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "pki", "users", "nakam.crt"))
	c, err := ca.ParseCertPEM("nakam", data)
	if err != nil || strings.Join(c.Subject.Organization, ",") != "devops,devs" {
		t.Fatalf("issued cert O = %v (err %v)", c.Subject.Organization, err)
	}
	code, _, errOut = runCLI(t, "", "cert", "issue", "--dir", dir, "--cn", "nakam")
	if code == 0 || !strings.Contains(errOut, "already exists; use --force") {
		t.Errorf("re-issue without --force: code %d, stderr %q", code, errOut)
	}
	out := filepath.Join(t.TempDir(), "etcd-probe")
	code, _, errOut = runCLI(t, "", "cert", "issue", "--dir", dir, "--cn", "probe", "--ca", "etcd/ca", "--profile", "peer", "--san", "localhost", "--out", out)
	if code != 0 {
		t.Fatalf("issue from etcd/ca: %s", errOut)
	}
	data, _ = os.ReadFile(out + ".crt")
	c, _ = ca.ParseCertPEM("probe", data)
	if c.Issuer.CommonName != "etcd-ca" || len(c.ExtKeyUsage) != 2 {
		t.Errorf("issuer %q EKU %v, want etcd-ca and server+client", c.Issuer.CommonName, c.ExtKeyUsage)
	}
}

func TestCertIssueFromFile(t *testing.T) {
	t.Parallel()
	dir := initTree(t)
	csv := filepath.Join(t.TempDir(), "users.csv")
	os.WriteFile(csv, []byte("alice,dev\nbob,dev,ops\nsystem:node:w1,system:nodes\n"), 0o644)
	code, _, errOut := runCLI(t, "", "cert", "issue", "--dir", dir, "--from-file", csv)
	if code != 0 || !strings.Contains(errOut, "issued 3 certificates") {
		t.Fatalf("from-file: code %d, stderr %q", code, errOut)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "pki", "users", "system_node_w1.crt"))
	c, err := ca.ParseCertPEM("w1", data)
	if err != nil || c.Subject.CommonName != "system:node:w1" {
		t.Errorf("w1 cert CN %q (err %v)", c.Subject.CommonName, err)
	}
	os.WriteFile(csv, []byte("carol\n,nogroup\n"), 0o644)
	code, _, errOut = runCLI(t, "", "cert", "issue", "--dir", dir, "--from-file", csv)
	if code == 0 || !strings.Contains(errOut, "line 2: common name is empty") {
		t.Errorf("bad users file: code %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "pki", "users", "carol.crt")); err == nil {
		t.Error("a bad users file still wrote carol.crt")
	}
}

func TestCertSignFromStdin(t *testing.T) {
	t.Parallel()
	dir := initTree(t)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	subject, _ := ca.EncodeSubject("nakam", []string{"devops"})
	der, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{RawSubject: subject}, key)
	csr := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	code, out, errOut := runCLI(t, string(csr), "cert", "sign", "--dir", dir, "--csr", "-")
	if code != 0 {
		t.Fatalf("cert sign: %s", errOut)
	}
	c, err := ca.ParseCertPEM("stdout", []byte(out))
	if err != nil || !bytes.Equal(c.RawSubject, subject) {
		t.Errorf("signed cert subject %v (err %v), want the CSR's bytes", c.Subject, err)
	}
	code, _, errOut = runCLI(t, string(csr), "cert", "sign", "--dir", dir, "--csr", "-", "--profile", "admin")
	if code == 0 || !strings.Contains(errOut, `unknown profile "admin"`) {
		t.Errorf("unknown profile: code %d, stderr %q", code, errOut)
	}
}

func TestCertExpiry(t *testing.T) {
	t.Parallel()
	dir := initTree(t)
	var out, errb bytes.Buffer
	s := streams{out: &out, err: &errb}
	o := &certExpiryOptions{dir: dir, output: "table", failWithin: "30d", now: time.Now}
	if err := runCertExpiry(o, s); err != nil {
		t.Fatalf("expiry now: %v", err)
	}
	for _, row := range []string{"admin.conf:kubernetes-admin", "pki/etcd/ca.crt", "pki/front-proxy-client.crt   ", "364d"} {
		if !strings.Contains(out.String(), row) {
			t.Errorf("table lacks %q:\n%s", row, out.String())
		}
	}
	out.Reset()
	o.now = func() time.Time { return time.Now().Add(350 * 24 * time.Hour) }
	err := runCertExpiry(o, s)
	var ee *exitError
	if !asExit(err, &ee) || ee.code != 1 || !strings.Contains(err.Error(), "certificates expire within 30d") {
		t.Errorf("expiry in 350 days with --fail-within 30d = %v, want exit 1", err)
	}
	out.Reset()
	o.output, o.failWithin = "json", ""
	if err := runCertExpiry(o, s); err != nil || !strings.Contains(out.String(), `"residual": "14d"`) {
		t.Errorf("json: err %v, output %s", err, out.String())
	}
}

// TestCertExpiryPrometheus_H7 checks that -o prometheus is wired to the
// textfile format (its content is ca's golden test), that --fail-within
// still writes the report before it exits 1, and that a bad -o is one line
// naming the flag.
func TestCertExpiryPrometheus_H7(t *testing.T) {
	t.Parallel()
	dir := initTree(t)
	var out, errb bytes.Buffer
	s := streams{out: &out, err: &errb}
	later := time.Now().Add(350 * 24 * time.Hour)
	o := &certExpiryOptions{dir: dir, output: "prometheus", failWithin: "30d", now: func() time.Time { return later }}
	err := runCertExpiry(o, s)
	var ee *exitError
	if !asExit(err, &ee) || ee.code != 1 || !strings.Contains(err.Error(), "certificates expire within 30d, first ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("-o prometheus --fail-within 30d in 350 days = %v, want exit 1 with one line", err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, perr := parser.TextToMetricFamilies(bytes.NewReader(out.Bytes()))
	if perr != nil {
		t.Fatalf("parse the report written before exiting: %v\n%s", perr, out.String())
	}
	mf := families[ca.MetricExpirySeconds]
	if mf.GetType() != dto.MetricType_GAUGE || len(mf.GetMetric()) == 0 || families[ca.MetricNotAfter] == nil {
		t.Fatalf("families %v, want both gauges with series:\n%s", slices.Collect(maps.Keys(families)), out.String())
	}
	apiserver := false
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["path"] != "pki/apiserver.crt" {
			continue
		}
		apiserver = true
		if labels["role"] != "apiserver" || labels["ca"] != "pki/ca.crt" || labels["kubeconfig_user"] != "" {
			t.Errorf("apiserver labels %v", labels)
		}
		// pki init issues for 365 days, so 15 are left, less the seconds
		// the test took.
		if v := m.GetGauge().GetValue(); v > 15*86400 || v < 14*86400 {
			t.Errorf("apiserver has %vs left 350 days on, want about 15 days", v)
		}
	}
	if !apiserver {
		t.Errorf("no series for pki/apiserver.crt:\n%s", out.String())
	}
	if errb.Len() != 0 {
		t.Errorf("stderr %q, want nothing besides the error", errb.String())
	}

	code, stdout, errOut := runCLI(t, "", "cert", "expiry", "--dir", dir, "-o", "yaml")
	if code == 0 || stdout != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 ||
		!strings.Contains(errOut, `--output "yaml": want table, json or prometheus`) {
		t.Errorf("-o yaml: code %d, stdout %q, stderr %q; want one line naming --output", code, stdout, errOut)
	}
}

func asExit(err error, target **exitError) bool {
	e, ok := err.(*exitError)
	*target = e
	return ok
}

func TestCertRenew(t *testing.T) {
	t.Parallel()
	dir := initTree(t)
	before, _ := kubeconfig.EmbeddedCerts(filepath.Join(dir, "admin.conf"), "admin.conf")
	apiBefore, _ := os.ReadFile(filepath.Join(dir, "pki", "apiserver.crt"))
	code, _, errOut := runCLI(t, "", "cert", "renew", "--dir", dir, "admin.conf")
	if code != 0 || !strings.Contains(errOut, "renewed admin.conf:kubernetes-admin") {
		t.Fatalf("renew admin.conf: code %d, stderr %q", code, errOut)
	}
	after, _ := kubeconfig.EmbeddedCerts(filepath.Join(dir, "admin.conf"), "admin.conf")
	if bytes.Equal(before[0].CertPEM, after[0].CertPEM) {
		t.Error("admin.conf still embeds the old cert")
	}
	old, _ := ca.ParseCertPEM("old", before[0].CertPEM)
	renewed, _ := ca.ParseCertPEM("new", after[0].CertPEM)
	if !bytes.Equal(old.RawSubject, renewed.RawSubject) {
		t.Errorf("renewed subject %v, want %v", renewed.Subject, old.Subject)
	}
	if apiAfter, _ := os.ReadFile(filepath.Join(dir, "pki", "apiserver.crt")); !bytes.Equal(apiBefore, apiAfter) {
		t.Error("renewing admin.conf changed apiserver.crt")
	}
	if code, _, _ := runCLI(t, "", "pki", "check", "--dir", dir); code != 0 {
		t.Error("tree fails pki check after renewal")
	}
	code, _, errOut = runCLI(t, "", "cert", "renew", "--dir", dir, "all")
	if code != 0 || strings.Count(errOut, "renewed ") != 11 {
		t.Errorf("renew all: code %d, stderr %q, want 11 renewals", code, errOut)
	}
}

// treeFiles returns every file under dir with its contents, to show that a
// refused command wrote nothing.
func treeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		files[path] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkRefusedName checks that a command refused a name: exit 1, nothing
// on stdout, exactly the line "kubegate: WANT" on stderr, and no file
// under dir added or changed since before.
func checkRefusedName(t *testing.T, dir string, before map[string]string, code int, out, errOut, want string) {
	t.Helper()
	if code != 1 || out != "" || errOut != "kubegate: "+want+"\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and the one line %q", code, out, errOut, "kubegate: "+want)
	}
	if after := treeFiles(t, dir); !maps.Equal(after, before) {
		for path := range after {
			if _, ok := before[path]; !ok {
				t.Errorf("wrote %s", path)
			}
		}
		t.Errorf("%s changed", dir)
	}
}

func TestCertIssueRefusesUnsafeNames(t *testing.T) {
	t.Parallel()
	dir := initTree(t)
	before := treeFiles(t, dir)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"header injection in CN", []string{"--cn", "evil\nX-Remote-User: admin"},
			`--cn "evil\nX-Remote-User: admin": contains a control character (U+000A)`},
		{"spaces around CN", []string{"--cn", " kubernetes-admin "},
			`--cn " kubernetes-admin ": begins with whitespace (U+0020)`},
		{"space before org", []string{"--cn", "alice", "--org", "devs", "--org", " system:masters"},
			`--org " system:masters": begins with whitespace (U+0020)`},
		{"DEL in org", []string{"--cn", "bob", "--org", "system:masters\x7f"},
			`--org "system:masters\x7f": contains a control character (U+007F)`},
		{"with --out", []string{"--cn", "admin\r", "--out", filepath.Join(dir, "admin")},
			`--cn "admin\r": contains a control character (U+000D)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"cert", "issue", "--dir", dir}, tt.args...)...)
			checkRefusedName(t, dir, before, code, out, errOut, tt.want)
		})
	}
}

func TestCertIssueFromFileRefusesUnsafeNames(t *testing.T) {
	t.Parallel()
	dir := initTree(t)
	csvDir := t.TempDir()
	tests := []struct {
		name, csv, want string
	}{
		{"header injection in CN", "alice,dev\n\"evil\nX-Remote-User: admin\",dev\n",
			`common name "evil\nX-Remote-User: admin": contains a control character (U+000A)`},
		{"space inside quotes before group", "carol,dev\nbob,\" system:masters\"\n",
			`organization " system:masters": begins with whitespace (U+0020)`},
		{"space after CN", "dave,dev\nkubernetes-admin ,dev\n",
			`common name "kubernetes-admin ": ends with whitespace (U+0020)`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csv := filepath.Join(csvDir, fmt.Sprintf("users-%d.csv", i))
			if err := os.WriteFile(csv, []byte(tt.csv), 0o644); err != nil {
				t.Fatal(err)
			}
			before := treeFiles(t, dir)
			code, out, errOut := runCLI(t, "", "cert", "issue", "--dir", dir, "--from-file", csv)
			checkRefusedName(t, dir, before, code, out, errOut, fmt.Sprintf("users file %s line 2: %s", csv, tt.want))
		})
	}
}

// requireOpenSSL returns the path of openssl, skipping the test when it is
// missing, or failing it when CI=true.
func requireOpenSSL(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("openssl")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("openssl is required in CI but is not installed")
	}
	t.Skip("openssl not installed")
	return ""
}

func TestCertSignRefusesUnsafeSubjectFromOpenSSL(t *testing.T) {
	t.Parallel()
	openssl := requireOpenSSL(t)
	dir := initTree(t)
	work := t.TempDir()
	csr := filepath.Join(work, "admin.csr")
	cmd := exec.Command(openssl, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
		"-keyout", filepath.Join(work, "admin.key"), "-subj", "/CN= kubernetes-admin/O=devs", "-out", csr)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("openssl req: %v\n%s", err, out)
	}
	data, err := os.ReadFile(csr)
	if err != nil {
		t.Fatal(err)
	}
	before := treeFiles(t, dir)
	want := fmt.Sprintf(`CSR %s: CN " kubernetes-admin": begins with whitespace (U+0020)`, csr)
	out := filepath.Join(dir, "admin.crt")
	code, stdout, errOut := runCLI(t, "", "cert", "sign", "--dir", dir, "--csr", csr, "--out", out)
	checkRefusedName(t, dir, before, code, stdout, errOut, want)
	code, stdout, errOut = runCLI(t, string(data), "cert", "sign", "--dir", dir, "--csr", "-")
	checkRefusedName(t, dir, before, code, stdout, errOut, `CSR -: CN " kubernetes-admin": begins with whitespace (U+0020)`)
}
