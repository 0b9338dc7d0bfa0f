package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testwait"
)

// TestGatewayReloadUnderLoad rotates the client CA bundle and the token
// file while test/bench's load generator keeps a certificate client and a
// token client busy: not one request may fail, and a token removed from
// the file must stop working within 2 s.
func TestGatewayReloadUnderLoad(t *testing.T) {
	curl := requireTool(t, "curl")
	e := startGateway(t, curl)
	dir := t.TempDir()

	_, file, _, _ := runtime.Caller(0)
	loadgen := filepath.Join(dir, "loadgen")
	build := exec.Command("go", "build", "-o", loadgen, "./test/bench/loadgen")
	build.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build loadgen: %v\n%s", err, out)
	}
	writeFile(t, e.tokens, []byte("s3cret-token,bob,uid-bob\ndoomed-token,eve,uid-eve\n"))
	waitStatus(t, curl, e, "doomed-token", "200")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := e.base + "/api/v1/namespaces/default/pods"
	load := func(args ...string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.CommandContext(ctx, loadgen, append([]string{"-url", url, "-cacert", e.serverCAFile,
			"-conns", "4", "-duration", "4s"}, args...)...)
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	certLoad, certOut := load("-cert", e.aliceCert, "-key", e.aliceKey)
	tokenLoad, tokenOut := load("-bearer", "s3cret-token")

	// Rotate while the load runs: a new CA joins the bundle, and the token
	// file is rewritten without doomed-token.
	time.Sleep(time.Second)
	next := testpki.NewCA(t, "kubernetes-next")
	writeFile(t, e.caFile, append(append([]byte(nil), e.clientCA.CertPEM...), next.CertPEM...))
	writeFile(t, e.tokens, []byte("s3cret-token,bob,uid-bob\nnew-token,carol,uid-carol\n"))
	start := time.Now()
	waitStatus(t, curl, e, "doomed-token", "401")
	t.Logf("removed token refused %s after the file was replaced", time.Since(start).Round(time.Millisecond))
	waitStatus(t, curl, e, "new-token", "200")

	// A client cert from the new CA works once the bundle has reloaded.
	carol := next.Issue(t, testpki.Options{CN: "carol"})
	cc, ck := carol.WriteFiles(t, dir, "carol")
	testwait.For(t, 2*time.Second, "cert from the new CA accepted", func() (bool, string) {
		res := runCmd(t, nil, curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", e.serverCAFile, "--cert", cc, "--key", ck, url)
		return res.stdout == "200", "status " + res.stdout
	})

	for name, c := range map[string]struct {
		cmd *exec.Cmd
		out *bytes.Buffer
	}{"cert": {certLoad, certOut}, "token": {tokenLoad, tokenOut}} {
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("%s load: %v\n%s", name, err, c.out)
		}
		var r struct {
			Requests int64 `json:"requests"`
			Errors   int64 `json:"errors"`
		}
		line := c.out.String()
		if i := strings.LastIndex(strings.TrimSpace(line), "\n"); i >= 0 {
			line = line[i+1:]
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s load output %q: %v", name, c.out, err)
		}
		if r.Requests == 0 || r.Errors != 0 {
			t.Errorf("%s load: %d requests, %d errors; want some and none failed\n%s", name, r.Requests, r.Errors, c.out)
		}
		t.Logf("%s load: %d requests, %d errors across the reloads", name, r.Requests, r.Errors)
	}
}

// waitStatus polls until a request with token gets status, for up to 2 s.
func waitStatus(t *testing.T, curl string, e *gatewayEnv, token, status string) {
	t.Helper()
	testwait.For(t, 2*time.Second, "token "+token[:4]+"… answered "+status, func() (bool, string) {
		res := runCmd(t, nil, curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", e.serverCAFile,
			"-H", "Authorization: Bearer "+token, e.base+"/api/v1/namespaces/default/pods")
		return res.stdout == status, "status " + res.stdout
	})
}
