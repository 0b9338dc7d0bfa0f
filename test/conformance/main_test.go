// Package conformance holds kubegate's API server to a real kube-apiserver.
// It runs one list of operations (HTTP requests and kubectl commands)
// against `kubegate up` and against kube-apiserver with etcd, both started
// on trees written by `kubegate pki init`, and fails on any difference in
// the answers that is not written down with its reason in allowlist_test.go.
// The reference binaries are built from the Go module proxy by
// kube/build.sh, at the versions kube/go.mod pins. docs/architecture.md
// ("The conformance test") explains how the comparison works.
package conformance

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var (
	// kubegateBin is kubegate built from this checkout.
	kubegateBin string
	// oracleDir holds the reference kube-apiserver and etcd binaries, or
	// is empty when they could not be built (oracleErr says why).
	oracleDir string
	oracleErr error
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	here := filepath.Dir(file)

	dir, err := os.MkdirTemp("", "kubegate-conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	kubegateBin = filepath.Join(dir, "kubegate")
	build := exec.Command("go", "build", "-o", kubegateBin, "./cmd/kubegate")
	build.Dir = filepath.Join(here, "..", "..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build kubegate:", err)
		return 1
	}

	// kube/build.sh answers at once when the binaries are cached; `make
	// test` runs it before the tests so that a first, slow build does not
	// count against the test timeout.
	var out, errb bytes.Buffer
	oracle := exec.Command(filepath.Join(here, "kube", "build.sh"))
	oracle.Stdout, oracle.Stderr = &out, &errb
	if err := oracle.Run(); err != nil {
		oracleErr = fmt.Errorf("kube/build.sh: %v\n%s", err, errb.String())
	} else {
		oracleDir = strings.TrimSpace(out.String())
	}
	return m.Run()
}

// requireOracle returns the directory of the reference binaries. Without
// them the test is skipped, or fails when CI=true.
func requireOracle(t *testing.T) string {
	t.Helper()
	if oracleDir != "" {
		return oracleDir
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the reference kube-apiserver is required in CI: %v", oracleErr)
	}
	t.Skipf("no reference kube-apiserver: %v", oracleErr)
	return ""
}
