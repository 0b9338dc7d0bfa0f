package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

// certRequest is a `kubegate cert request` running in the background.
type certRequest struct {
	cmd    *exec.Cmd
	stderr *testwait.Buffer
	done   chan int // its exit code
}

// startCertRequest runs kubegate cert request with args and waits until
// it prints the approval command for the request name.
func startCertRequest(t *testing.T, name string, args ...string) *certRequest {
	t.Helper()
	r := &certRequest{stderr: &testwait.Buffer{}, done: make(chan int, 1)}
	r.cmd = exec.Command(kubegateBin, append([]string{"cert", "request", "--name", name}, args...)...)
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := r.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			r.done <- ee.ExitCode()
			return
		}
		if err != nil {
			r.done <- -1
			return
		}
		r.done <- 0
	}()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
		}
	})
	want := "waiting for approval: kubectl certificate approve " + name + "\n"
	testwait.For(t, 30*time.Second, "kubegate cert request waiting for approval", func() (bool, string) {
		return r.stderr.String() == want, "stderr " + r.stderr.String()
	})
	return r
}

// wait returns the exit code and stderr once the command has ended.
func (r *certRequest) wait(t *testing.T) (int, string) {
	t.Helper()
	select {
	case code := <-r.done:
		return code, r.stderr.String()
	case <-time.After(60 * time.Second):
		t.Fatalf("kubegate cert request still running; stderr:\n%s", r.stderr)
	}
	return 0, ""
}

// TestCertRequestThroughTheSigner_H3 is the whole workflow against
// kubegate up: a user with a fresh key runs kubegate cert request, an
// administrator approves the request with kubectl, the signer issues the
// certificate, and the user's new kubeconfig authenticates through the
// gateway as the requested CN and O; openssl verifies the certificate
// against the cluster CA and shows client auth and the asked-for
// lifetime. A request with --force interrupted by SIGINT or SIGTERM
// leaves the earlier key, certificate and kubeconfig as they were, and a
// denied request ends the command with one line and exit 1.
func TestCertRequestThroughTheSigner_H3(t *testing.T) {
	requireTool(t, "kubectl")
	openssl := requireTool(t, "openssl")
	dir := filepath.Join(t.TempDir(), "cluster")
	c := startUp(t, dir, 0)
	files := t.TempDir()

	// The requester is a user who may create and read requests only.
	noraConf := filepath.Join(files, "nora.conf")
	if res := kubegate(t, "kubeconfig", "create", "--dir", dir, "--user", "nora", "--server", c.server, "--out", noraConf); res.code != 0 {
		t.Fatalf("kubeconfig create: %d %s", res.code, res.stderr)
	}
	must(t, c.kubectl(t, nil, "create", "clusterrole", "csr-requester", "--verb=create,get,list,watch", "--resource=certificatesigningrequests"), "created")
	must(t, c.kubectl(t, nil, "create", "clusterrolebinding", "nora-csr", "--clusterrole=csr-requester", "--user=nora"), "created")

	prefix := filepath.Join(files, "ada")
	req := startCertRequest(t, "ada-client", "--kubeconfig", noraConf, "--cn", "ada", "--org", "team-a", "--org", "team-b",
		"--duration", "2h", "--out", prefix)
	must(t, c.kubectl(t, nil, "certificate", "approve", "ada-client"), "approved")
	if code, stderr := req.wait(t); code != 0 {
		t.Fatalf("kubegate cert request: exit %d, stderr:\n%s", code, stderr)
	}

	t.Run("the new kubeconfig authenticates as the CN and O through the gateway", func(t *testing.T) {
		user, groups, res := c.whoami(t, "--kubeconfig", prefix+".conf")
		if res.code != 0 {
			t.Fatalf("auth whoami: %d %s", res.code, res.stderr)
		}
		if user != "ada" || !slices.Equal(groups, []string{"team-a", "team-b", "system:authenticated"}) {
			t.Errorf("whoami: %s %v, want ada [team-a team-b system:authenticated]", user, groups)
		}
		must(t, c.kubectl(t, nil, "--kubeconfig", prefix+".conf", "config", "view", "-o", "jsonpath={.clusters[0].cluster.server}"), c.server)
	})

	t.Run("openssl verifies it against the cluster CA, for client auth, for two hours", func(t *testing.T) {
		res := runCmd(t, nil, openssl, "verify", "-CAfile", filepath.Join(dir, "pki", "ca.crt"), "-purpose", "sslclient", prefix+".crt")
		if res.code != 0 || strings.TrimSpace(res.stdout) != prefix+".crt: OK" {
			t.Errorf("openssl verify: %d %q %q", res.code, res.stdout, res.stderr)
		}
		res = runCmd(t, nil, openssl, "x509", "-noout", "-text", "-in", prefix+".crt")
		if res.code != 0 {
			t.Fatalf("openssl x509: %d %s", res.code, res.stderr)
		}
		text := res.stdout
		// The subject is encoded again from the parsed request, as kube's
		// signer does: Go puts the O values in one RDN (H.3).
		for _, want := range []string{"Subject: O = team-a + O = team-b, CN = ada", "TLS Web Client Authentication", "CA:FALSE", "Digital Signature"} {
			if !strings.Contains(text, want) {
				t.Errorf("openssl x509 -text lacks %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, "TLS Web Server Authentication") {
			t.Errorf("a client certificate has server auth:\n%s", text)
		}
		notBefore, notAfter := opensslDate(t, text, "Not Before: "), opensslDate(t, text, "Not After : ")
		// Two hours asked for, under the signing duration's year; the
		// start is back-dated five minutes.
		if got := notAfter.Sub(notBefore); got != 2*time.Hour+5*time.Minute {
			t.Errorf("lifetime %v (%v to %v), want 2h5m", got, notBefore, notAfter)
		}
	})

	t.Run("an interrupted request with --force leaves the earlier files as they were", func(t *testing.T) {
		old := map[string][]byte{}
		for _, ext := range []string{".key", ".crt", ".conf"} {
			data, err := os.ReadFile(prefix + ext)
			if err != nil {
				t.Fatal(err)
			}
			old[ext] = data
		}
		for sig, name := range map[os.Signal]string{os.Interrupt: "ada-int", syscall.SIGTERM: "ada-term"} {
			req := startCertRequest(t, name, "--kubeconfig", noraConf, "--cn", "ada", "--force", "--out", prefix)
			if err := req.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			code, stderr := req.wait(t)
			want := "kubegate: certificate request " + name + " was interrupted before a certificate was issued; nothing was written"
			if lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"); code != 1 || lines[len(lines)-1] != want {
				t.Errorf("%v: exit %d, stderr %q; want exit 1 and the last line %q", sig, code, stderr, want)
			}
			for ext, data := range old {
				if got, err := os.ReadFile(prefix + ext); err != nil || !bytes.Equal(got, data) {
					t.Errorf("%v: %s%s changed (%v)", sig, prefix, ext, err)
				}
			}
			if _, err := os.Lstat(prefix + ".key.new"); err == nil {
				t.Errorf("%v: %s.key.new was left behind", sig, prefix)
			}
		}
	})

	t.Run("a denied request ends the command with one line", func(t *testing.T) {
		denied := startCertRequest(t, "eve-client", "--kubeconfig", noraConf, "--cn", "eve", "--out", filepath.Join(files, "eve"))
		must(t, c.kubectl(t, nil, "certificate", "deny", "eve-client"), "denied")
		code, stderr := denied.wait(t)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 1 || len(lines) != 2 || !strings.HasPrefix(lines[1], "kubegate: certificate request eve-client was denied: KubectlDeny: ") {
			t.Errorf("exit %d, stderr %q; want exit 1 and one line saying eve-client was denied", code, stderr)
		}
	})
}

// TestNodeClientCertificateIsAutoApproved_H4: with kubeadm's bindings,
// which kubegate up makes (bootstrap tokens may create requests and
// nodeclient), a kubelet client
// request sent with a bootstrap token is approved by the approver of
// kubegate up and signed without anyone running kubectl certificate
// approve, and the certificate authenticates as the node.
func TestNodeClientCertificateIsAutoApproved_H4(t *testing.T) {
	requireTool(t, "kubectl")
	dir := filepath.Join(t.TempDir(), "cluster")
	c := startUp(t, dir, 0)
	files := t.TempDir()
	// kubegate up makes kubeadm init's bindings (H.5).
	must(t, c.kubectl(t, nil, "get", "clusterrolebinding", "kubeadm:kubelet-bootstrap", "-o", "jsonpath={.roleRef.name} {.subjects[0].name}"),
		"system:node-bootstrapper system:bootstrappers:kubeadm:default-node-token")
	must(t, c.kubectl(t, nil, "get", "clusterrolebinding", "kubeadm:node-autoapprove-bootstrap", "-o", "jsonpath={.roleRef.name} {.subjects[0].name}"),
		"system:certificates.k8s.io:certificatesigningrequests:nodeclient system:bootstrappers:kubeadm:default-node-token")
	res := kubegate(t, "token", "create", "--bootstrap", "--kubeconfig", filepath.Join(dir, "admin.conf"),
		"--groups", "system:bootstrappers:kubeadm:default-node-token")
	if res.code != 0 {
		t.Fatalf("token create --bootstrap: %+v", res)
	}
	bootstrapConf := filepath.Join(files, "bootstrap.conf")
	writeFile(t, bootstrapConf, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: kubegate, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: bootstrap, user: {token: %q}}]
contexts: [{name: kubegate, context: {cluster: kubegate, user: bootstrap}}]
current-context: kubegate
`, c.server, filepath.Join(dir, "pki", "ca.crt"), strings.TrimSpace(res.stdout)))

	prefix := filepath.Join(files, "node-1")
	req := startCertRequest(t, "node-csr-1", "--kubeconfig", bootstrapConf, "--signer", "kubernetes.io/kube-apiserver-client-kubelet",
		"--cn", "system:node:node-1", "--org", "system:nodes", "--out", prefix)
	if code, stderr := req.wait(t); code != 0 {
		t.Fatalf("kubegate cert request: exit %d, stderr:\n%s", code, stderr)
	}
	must(t, c.kubectl(t, nil, "get", "csr", "node-csr-1", "-o", "jsonpath={.status.conditions[0].reason}"), "AutoApproved")
	res = c.kubectl(t, nil, "--kubeconfig", prefix+".conf", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
	if res.code != 0 || res.stdout != `system:node:node-1 ["system:nodes","system:authenticated"]` {
		t.Errorf("whoami: %d %q %q", res.code, res.stdout, res.stderr)
	}
}

// opensslDate reads the date after label in openssl x509 -text output.
func opensslDate(t *testing.T, text, label string) time.Time {
	t.Helper()
	_, rest, ok := strings.Cut(text, label)
	if !ok {
		t.Fatalf("no %q in:\n%s", label, text)
	}
	line, _, _ := strings.Cut(rest, "\n")
	when, err := time.Parse("Jan _2 15:04:05 2006 MST", strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("%s%s: %v", label, line, err)
	}
	return when
}
