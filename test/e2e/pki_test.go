package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// pkiTree runs kubegate pki init into a fresh directory.
func pkiTree(t *testing.T, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cluster")
	res := kubegate(t, append([]string{"pki", "init", "--dir", dir}, args...)...)
	if res.code != 0 {
		t.Fatalf("pki init: %+v", res)
	}
	return dir
}

func TestPKIVerifiesWithOpenSSL(t *testing.T) {
	openssl := requireTool(t, "openssl")
	dir := pkiTree(t, "--apiserver-san", "api.example.com", "--apiserver-san", "192.168.1.10")
	pki := filepath.Join(dir, "pki")
	leaves := []struct{ leaf, ca, wrong string }{
		{"apiserver", "ca", "front-proxy-ca"},
		{"apiserver-kubelet-client", "ca", "etcd/ca"},
		{"front-proxy-client", "front-proxy-ca", "ca"},
		{"etcd/server", "etcd/ca", "ca"},
		{"etcd/peer", "etcd/ca", "ca"},
		{"etcd/healthcheck-client", "etcd/ca", "front-proxy-ca"},
		{"apiserver-etcd-client", "etcd/ca", "ca"},
	}
	for _, l := range leaves {
		t.Run(l.leaf, func(t *testing.T) {
			leaf := filepath.Join(pki, l.leaf+".crt")
			if res := runCmd(t, nil, openssl, "verify", "-CAfile", filepath.Join(pki, l.ca+".crt"), leaf); res.code != 0 {
				t.Errorf("openssl verify against %s: %+v", l.ca, res)
			}
			if res := runCmd(t, nil, openssl, "verify", "-CAfile", filepath.Join(pki, l.wrong+".crt"), leaf); res.code == 0 {
				t.Errorf("openssl verify against the wrong CA %s passed: %+v", l.wrong, res)
			}
		})
	}

	x509Text := func(t *testing.T, file string) string {
		t.Helper()
		res := runCmd(t, nil, openssl, "x509", "-in", file, "-noout", "-subject", "-ext", "subjectAltName,extendedKeyUsage")
		if res.code != 0 {
			t.Fatalf("openssl x509 %s: %+v", file, res)
		}
		return res.stdout
	}
	issued := filepath.Join(t.TempDir(), "nakam")
	if res := kubegate(t, "cert", "issue", "--dir", dir, "--cn", "nakam", "--org", "devops", "--org", "devs", "--out", issued); res.code != 0 {
		t.Fatalf("cert issue: %+v", res)
	}
	shows := []struct {
		file string
		want []string
	}{
		{filepath.Join(pki, "apiserver.crt"), []string{"subject=CN = kube-apiserver",
			"DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local, DNS:localhost, DNS:api.example.com, IP Address:127.0.0.1, IP Address:10.96.0.1, IP Address:192.168.1.10",
			"TLS Web Server Authentication"}},
		{filepath.Join(pki, "front-proxy-client.crt"), []string{"subject=CN = front-proxy-client", "TLS Web Client Authentication"}},
		{filepath.Join(pki, "apiserver-kubelet-client.crt"), []string{"subject=O = kubeadm:cluster-admins, CN = kube-apiserver-kubelet-client"}},
		{filepath.Join(pki, "etcd", "peer.crt"), []string{"TLS Web Server Authentication, TLS Web Client Authentication", "IP Address:0:0:0:0:0:0:0:1"}},
		{issued + ".crt", []string{"subject=O = devops, O = devs, CN = nakam", "TLS Web Client Authentication"}},
	}
	for _, s := range shows {
		t.Run("x509 "+filepath.Base(s.file), func(t *testing.T) {
			out := x509Text(t, s.file)
			for _, w := range s.want {
				if !strings.Contains(out, w) {
					t.Errorf("openssl x509 output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	if out := x509Text(t, filepath.Join(pki, "front-proxy-client.crt")); strings.Contains(out, "Server Authentication") {
		t.Errorf("client cert has serverAuth:\n%s", out)
	}
}

func TestCSRRoundTripKeepsSubject(t *testing.T) {
	openssl := requireTool(t, "openssl")
	dir := pkiTree(t)
	work := t.TempDir()
	key, csr, crt := filepath.Join(work, "key.pem"), filepath.Join(work, "csr.pem"), filepath.Join(work, "nakam.crt")
	if res := runCmd(t, nil, openssl, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key); res.code != 0 {
		t.Fatalf("genpkey: %+v", res)
	}
	if res := runCmd(t, nil, openssl, "req", "-new", "-key", key, "-out", csr, "-subj", "/CN=nakam/O=devops/O=devs"); res.code != 0 {
		t.Fatalf("req: %+v", res)
	}
	if res := kubegate(t, "cert", "sign", "--dir", dir, "--csr", csr, "--out", crt); res.code != 0 {
		t.Fatalf("cert sign: %+v", res)
	}
	reqSubj := runCmd(t, nil, openssl, "req", "-in", csr, "-noout", "-subject")
	crtSubj := runCmd(t, nil, openssl, "x509", "-in", crt, "-noout", "-subject")
	if want := "subject=CN = nakam, O = devops, O = devs\n"; reqSubj.stdout != want || crtSubj.stdout != want {
		t.Errorf("CSR subject %q, cert subject %q, want both %q", reqSubj.stdout, crtSubj.stdout, want)
	}
	if res := runCmd(t, nil, openssl, "verify", "-CAfile", filepath.Join(dir, "pki", "ca.crt"), crt); res.code != 0 {
		t.Errorf("signed cert does not verify: %+v", res)
	}
}

// sServer runs openssl s_server on a loopback port with the apiserver
// cert, requiring and verifying a client cert against ca.crt, for one
// connection. It returns the port and a function that waits for the
// server and returns everything it printed.
func sServer(t *testing.T, openssl, pki string) (string, func() string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	cmd := exec.CommandContext(ctx, openssl, "s_server", "-accept", "127.0.0.1:"+port,
		"-cert", filepath.Join(pki, "apiserver.crt"), "-key", filepath.Join(pki, "apiserver.key"),
		"-CAfile", filepath.Join(pki, "ca.crt"), "-Verify", "1", "-verify_return_error", "-naccept", "1")
	stdin, _ := cmd.StdinPipe() // held open: s_server quits on EOF
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out strings.Builder
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if sc.Text() == "ACCEPT" {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-done:
		cancel()
		t.Fatalf("s_server exited before accepting: %s", out.String())
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("s_server did not start within 10s")
	}
	return port, func() string {
		stdin.Close()
		<-done
		cmd.Wait()
		cancel()
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
}

func TestMutualTLSWithOpenSSL(t *testing.T) {
	openssl := requireTool(t, "openssl")
	dir := pkiTree(t)
	other := pkiTree(t)
	work := t.TempDir()
	for _, c := range []struct{ tree, name string }{{dir, "nakam"}, {other, "mallory"}} {
		if res := kubegate(t, "cert", "issue", "--dir", c.tree, "--cn", c.name, "--org", "devs", "--out", filepath.Join(work, c.name)); res.code != 0 {
			t.Fatalf("cert issue %s: %+v", c.name, res)
		}
	}
	pki := filepath.Join(dir, "pki")
	client := func(t *testing.T, port, name string) result {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, openssl, "s_client", "-connect", "127.0.0.1:"+port,
			"-servername", "kubernetes", "-verify_hostname", "kubernetes", "-verify_return_error",
			"-CAfile", filepath.Join(pki, "ca.crt"),
			"-cert", filepath.Join(work, name+".crt"), "-key", filepath.Join(work, name+".key"))
		cmd.Stdin = strings.NewReader("hello-from-" + name + "\n")
		var b strings.Builder
		cmd.Stdout, cmd.Stderr = &b, &b
		err := cmd.Run()
		res := result{stdout: b.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			res.code = ee.ExitCode()
		}
		return res
	}

	t.Run("own CA", func(t *testing.T) {
		port, wait := sServer(t, openssl, pki)
		res := client(t, port, "nakam")
		srv := wait()
		if res.code != 0 || !strings.Contains(res.stdout, "Verify return code: 0 (ok)") {
			t.Errorf("s_client: code %d, want verify return code 0:\n%s", res.code, res.stdout)
		}
		if !strings.Contains(srv, "depth=0 O = devs, CN = nakam\nverify return:1") || !strings.Contains(srv, "hello-from-nakam") {
			t.Errorf("s_server did not verify the client and receive its data:\n%s", srv)
		}
	})
	t.Run("other CA", func(t *testing.T) {
		port, wait := sServer(t, openssl, pki)
		res := client(t, port, "mallory")
		srv := wait()
		if !strings.Contains(srv, "certificate verify failed") || strings.Contains(srv, "hello-from-mallory") {
			t.Errorf("s_server accepted a client cert from another CA (client code %d):\n%s", res.code, srv)
		}
	})
}

// hashTree returns a digest of every path, mode and content under dir.
func hashTree(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		io.WriteString(h, p+"\x00"+info.Mode().String()+"\x00")
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestBadInputChangesNothing(t *testing.T) {
	openssl := requireTool(t, "openssl")
	root := t.TempDir()
	dir := filepath.Join(root, "cluster")
	if res := kubegate(t, "pki", "init", "--dir", dir); res.code != 0 {
		t.Fatalf("pki init: %+v", res)
	}
	if res := kubegate(t, "cert", "issue", "--dir", dir, "--cn", "nakam"); res.code != 0 {
		t.Fatalf("cert issue: %+v", res)
	}
	in := filepath.Join(root, "inputs")
	os.MkdirAll(in, 0o700)
	key, good := filepath.Join(in, "key.pem"), filepath.Join(in, "good.csr")
	runCmd(t, nil, openssl, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key)
	if res := runCmd(t, nil, openssl, "req", "-new", "-key", key, "-out", good, "-subj", "/CN=nakam/O=devs"); res.code != 0 {
		t.Fatalf("openssl req: %+v", res)
	}
	data, _ := os.ReadFile(good)
	block, _ := pem.Decode(data)
	block.Bytes[len(block.Bytes)-3] ^= 0x5a // inside the signature
	os.WriteFile(filepath.Join(in, "badsig.csr"), pem.EncodeToMemory(block), 0o644)
	os.WriteFile(filepath.Join(in, "empty.csr"), nil, 0o644)
	os.WriteFile(filepath.Join(in, "garbage.csr"), []byte("this is not a CSR\n"), 0o644)
	regular := filepath.Join(root, "regular-file")
	os.WriteFile(regular, []byte("x"), 0o644)

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing CSR", []string{"cert", "sign", "--dir", dir, "--csr", filepath.Join(in, "nope.csr"), "--out", filepath.Join(dir, "x.crt")}, "no such file"},
		{"empty CSR", []string{"cert", "sign", "--dir", dir, "--csr", filepath.Join(in, "empty.csr"), "--out", filepath.Join(dir, "x.crt")}, "is empty"},
		{"garbage CSR", []string{"cert", "sign", "--dir", dir, "--csr", filepath.Join(in, "garbage.csr"), "--out", filepath.Join(dir, "x.crt")}, "not a PEM or DER certificate request"},
		{"bad CSR signature", []string{"cert", "sign", "--dir", dir, "--csr", filepath.Join(in, "badsig.csr"), "--out", filepath.Join(dir, "x.crt")}, "signature does not verify"},
		{"unknown profile for sign", []string{"cert", "sign", "--dir", dir, "--csr", good, "--profile", "superuser", "--out", filepath.Join(dir, "x.crt")}, `unknown profile "superuser"`},
		{"unknown profile for issue", []string{"cert", "issue", "--dir", dir, "--cn", "eve", "--profile", "superuser"}, `unknown profile "superuser"`},
		{"existing tree without force", []string{"pki", "init", "--dir", dir, "--apiserver-san", "10.1.2.3"}, "use --force"},
		{"existing cert without force", []string{"cert", "issue", "--dir", dir, "--cn", "nakam"}, "already exists; use --force"},
		{"unwritable DIR for init", []string{"pki", "init", "--dir", filepath.Join(regular, "cluster")}, "not a directory"},
		{"unwritable out for issue", []string{"cert", "issue", "--dir", dir, "--cn", "eve", "--out", filepath.Join(regular, "eve")}, "not a directory"},
		{"unwritable out for sign", []string{"cert", "sign", "--dir", dir, "--csr", good, "--out", filepath.Join(regular, "x.crt")}, "not a directory"},
		{"corrupt CA key", nil, "ca.key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if args == nil {
				// A copy of the tree with a CA key that is not the CA's.
				bad := filepath.Join(t.TempDir(), "cluster")
				if res := kubegate(t, "pki", "init", "--dir", bad); res.code != 0 {
					t.Fatal(res.stderr)
				}
				other, _ := os.ReadFile(filepath.Join(bad, "pki", "front-proxy-ca.key"))
				os.WriteFile(filepath.Join(bad, "pki", "ca.key"), other, 0o600)
				os.Remove(filepath.Join(bad, "pki", "apiserver.crt"))
				before := hashTree(t, bad)
				for _, a := range [][]string{{"pki", "init", "--dir", bad}, {"cert", "issue", "--dir", bad, "--cn", "x"}} {
					res := kubegate(t, a...)
					if res.code == 0 || !strings.Contains(res.stderr, filepath.Join(bad, "pki", "ca.key")) || strings.Count(res.stderr, "\n") != 1 {
						t.Errorf("%v: code %d, stderr %q, want one line naming ca.key", a, res.code, res.stderr)
					}
				}
				if hashTree(t, bad) != before {
					t.Error("the tree changed")
				}
				return
			}
			before := hashTree(t, root)
			res := kubegate(t, args...)
			if res.code == 0 {
				t.Errorf("exit code 0, want non-zero")
			}
			if strings.Count(res.stderr, "\n") != 1 || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("stderr %q, want one line containing %q", res.stderr, tt.want)
			}
			if after := hashTree(t, root); after != before {
				t.Error("the tree changed")
			}
		})
	}
}
