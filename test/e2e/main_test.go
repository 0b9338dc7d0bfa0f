// Package e2e drives the built kubegate binary with real clients: openssl,
// curl, kubectl and client-go. Tools a test needs must be installed; when
// CI=true a missing tool fails the test instead of skipping it.
package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/kubegate/kubegate/internal/testtool"
)

// kubegateBin is the binary built once for the whole package.
var kubegateBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kubegate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kubegateBin = filepath.Join(dir, "kubegate")
	// kubectl keeps discovery per server address in a cache that would
	// otherwise be shared with every earlier run on this machine: each run
	// gets its own, and each test its own within it (kubectlEnv).
	if err := os.Setenv("KUBECACHEDIR", filepath.Join(dir, "kubectl-cache")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	build := exec.Command("go", "build", "-o", kubegateBin, "./cmd/kubegate")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build kubegate:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// requireTool returns the path of tool; see testtool.Require.
func requireTool(t *testing.T, tool string) string {
	t.Helper()
	return testtool.Require(t, tool)
}

// result is what a finished command printed.
type result struct {
	code           int
	stdout, stderr string
}

// runCmd runs name with args (and optional stdin) and returns its result.
// It fails the test only when the command cannot be started.
func runCmd(t *testing.T, stdin []byte, name string, args ...string) result {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = kubectlEnv(t)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errb.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run %s: %v", name, err)
		}
		res.code = ee.ExitCode()
	}
	return res
}

// kubegate runs the built binary.
func kubegate(t *testing.T, args ...string) result {
	t.Helper()
	return runCmd(t, nil, kubegateBin, args...)
}

func TestBinaryVersion(t *testing.T) {
	res := kubegate(t, "version")
	if res.code != 0 || !bytes.HasPrefix([]byte(res.stdout), []byte("kubegate ")) {
		t.Fatalf("kubegate version: %+v", res)
	}
}

var kubectlCaches sync.Map // *testing.T → its kubectl cache directory

// kubectlEnv is the environment for a command of test t: kubectl's
// discovery cache is the test's own, since a port one test's fake server
// answered on may serve another test's cluster later in the run.
func kubectlEnv(t *testing.T) []string {
	t.Helper()
	dir, ok := kubectlCaches.Load(t)
	if !ok {
		dir, _ = kubectlCaches.LoadOrStore(t, t.TempDir())
		t.Cleanup(func() { kubectlCaches.Delete(t) })
	}
	return append(os.Environ(), "KUBECACHEDIR="+dir.(string))
}
