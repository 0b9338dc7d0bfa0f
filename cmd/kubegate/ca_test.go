package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/kubeconfig"
)

func TestCARotateCommand_H6(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cluster")
	if code, _, errOut := runCLI(t, "", "pki", "init", "--dir", dir); code != 0 {
		t.Fatalf("pki init: %d %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--phase", "later"}, `--phase: unknown phase "later" (want trust-both, reissue or drop-old)`},
		{[]string{"--ca", "etcd"}, `--ca "etcd": want cluster, front-proxy, sa or all`},
		{[]string{"--phase", "drop-old"}, "phase drop-old cannot run: no CA rotation is in progress"},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"ca", "rotate", "--dir", dir}, tc.args...)...)
		if code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("ca rotate %v: code %d, stderr %q, want one line with %q", tc.args, code, errOut, tc.want)
		}
	}

	code, out, errOut := runCLI(t, "", "ca", "rotate", "--dir", dir, "--ca", "cluster,sa", "--dry-run")
	if code != 0 || !strings.Contains(out, "phase trust-both for cluster, sa:") || !strings.Contains(out, "pki/sa.pub") || strings.Contains(out, "front-proxy") {
		t.Errorf("--dry-run: code %d, stdout:\n%s\nstderr %s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "", "pki", "check", "--dir", dir); code != 0 || strings.Contains(out, "warning") {
		t.Errorf("--dry-run wrote something: pki check %d\n%s", code, out)
	}

	code, _, errOut = runCLI(t, "", "ca", "rotate", "--dir", dir, "--ca", "cluster", "--ca", "sa")
	if code != 0 || !strings.Contains(errOut, "trust-both done for cluster, sa") || !strings.Contains(errOut, "kubegate ca rotate --dir "+dir) {
		t.Fatalf("trust-both: code %d, stderr %q", code, errOut)
	}
	// A kubeconfig made mid-rotation trusts both CAs, so it keeps working
	// once the server's certificate is re-signed.
	bob := filepath.Join(t.TempDir(), "bob.conf")
	if code, _, errOut := runCLI(t, "", "kubeconfig", "create", "--dir", dir, "--user", "bob", "--server", "https://127.0.0.1:6443", "--out", bob); code != 0 {
		t.Fatalf("kubeconfig create: %d %s", code, errOut)
	}
	cfg, err := kubeconfig.Load(bob)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		if n := strings.Count(string(c.CertificateAuthorityData), "BEGIN CERTIFICATE"); n != 2 {
			t.Errorf("kubeconfig create mid-rotation embeds %d CA certificates, want the old and the new", n)
		}
	}
	code, out, _ = runCLI(t, "", "pki", "check", "--dir", dir)
	want := "warning: pki/rotation.json: the rotation of cluster, sa stopped with trust-both done; next: kubegate ca rotate --dir " + dir + " --phase reissue"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("pki check mid-rotation: code %d, stdout:\n%s\nwant the line %q", code, out, want)
	}
	code, out, _ = runCLI(t, "", "pki", "plan", "--dir", dir)
	if code != 0 || !strings.Contains(out, "phase reissue for cluster, sa:") || !strings.Contains(out, "pki/apiserver.crt") || !strings.Contains(out, "admin.conf") {
		t.Errorf("pki plan mid-rotation: code %d, stdout:\n%s", code, out)
	}
	code, _, errOut = runCLI(t, "", "ca", "rotate", "--dir", dir, "--ca", "front-proxy")
	if code == 0 || !strings.Contains(errOut, "a rotation of cluster, sa is in progress") {
		t.Errorf("another CA mid-rotation: code %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "ca", "rotate", "--dir", dir, "--phase", "trust-both")
	if code != 0 || !strings.Contains(errOut, "trust-both is already done for cluster, sa; nothing to change") {
		t.Errorf("trust-both again: code %d, stderr %q", code, errOut)
	}
	// The next phases, with no wait between them.
	code, _, errOut = runCLI(t, "", "ca", "rotate", "--dir", dir, "--reload-wait", "0s")
	if code != 0 || !strings.Contains(errOut, "reissue done for cluster, sa") ||
		!strings.Contains(errOut, "warning: tokens stored in Secrets of type kubernetes.io/service-account-token are never refreshed") {
		t.Fatalf("reissue: code %d, stderr %q", code, errOut)
	}
	// Right after reissue, the old service-account key still verifies
	// tokens nobody refreshed yet: drop-old waits for them, or --force.
	code, _, errOut = runCLI(t, "", "ca", "rotate", "--dir", dir, "--reload-wait", "0s")
	if want := "drop-old of the service-account key is refused until "; code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 ||
		!strings.Contains(errOut, want) || !strings.Contains(errOut, "(1h0m0s after reissue)") || !strings.Contains(errOut, "--force") {
		t.Fatalf("drop-old right after reissue: code %d, stderr %q, want one line with %q", code, errOut, want)
	}
	code, _, errOut = runCLI(t, "", "ca", "rotate", "--dir", dir, "--reload-wait", "0s", "--force")
	if code != 0 || !strings.Contains(errOut, "drop-old done for cluster, sa") || !strings.Contains(errOut, "warning: the old service-account key is dropped before") {
		t.Fatalf("drop-old --force: code %d, stderr %q", code, errOut)
	}
	code, out, _ = runCLI(t, "", "pki", "check", "--dir", dir)
	if code != 0 || strings.Contains(out, "warning") || !strings.Contains(out, "no problems") {
		t.Errorf("pki check after the rotation: code %d, stdout:\n%s", code, out)
	}
}

func TestCARotateWaitsForReaders_H6(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cluster")
	if code, _, errOut := runCLI(t, "", "pki", "init", "--dir", dir); code != 0 {
		t.Fatalf("pki init: %d %s", code, errOut)
	}
	now := time.Now()
	var slept time.Duration
	o := &caRotateOptions{dir: dir, cas: []string{"sa"}, reloadWait: time.Minute, minTokenAge: time.Hour, now: func() time.Time { return now.Add(slept) },
		sleep: func(d time.Duration) { slept += d }}
	var errOut strings.Builder
	s := streams{out: &strings.Builder{}, err: &errOut}
	if err := runCARotate(o, s); err != nil {
		t.Fatal(err)
	}
	if slept != 0 {
		t.Errorf("trust-both waited %s; nothing ran before it", slept)
	}
	o.cas = nil
	if err := runCARotate(o, s); err != nil {
		t.Fatal(err)
	}
	if slept < 58*time.Second || slept > time.Minute {
		t.Errorf("reissue right after trust-both waited %s, want about --reload-wait (1m)", slept)
	}
	if !strings.Contains(errOut.String(), "waiting") {
		t.Errorf("stderr %q does not say it waits", errOut.String())
	}
}

// TestCARotateTakesTheLock_H6: a phase does not run while another holds
// pki/rotation.lock.
func TestCARotateTakesTheLock_H6(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cluster")
	if code, _, errOut := runCLI(t, "", "pki", "init", "--dir", dir); code != 0 {
		t.Fatalf("pki init: %d %s", code, errOut)
	}
	unlock, err := ca.LockRotation(dir)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "", "ca", "rotate", "--dir", dir)
	want := filepath.Join(dir, "pki", "rotation.lock") + " exists: another kubegate ca rotate is running on " + dir
	if code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, want) {
		t.Errorf("ca rotate while locked: code %d, stderr %q, want one line with %q", code, errOut, want)
	}
	if st, err := ca.ReadRotationState(dir); err != nil || st != nil {
		t.Errorf("ca rotate while locked wrote a rotation state: %+v (%v)", st, err)
	}
	unlock()
	if code, _, errOut := runCLI(t, "", "ca", "rotate", "--dir", dir); code != 0 || !strings.Contains(errOut, "trust-both done") {
		t.Errorf("ca rotate once unlocked: code %d, stderr %q", code, errOut)
	}
}
