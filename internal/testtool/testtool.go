// Package testtool holds what tests that drive real programs share: finding
// a tool they need, and a free loopback port.
package testtool

import (
	"net"
	"os"
	"os/exec"
	"testing"
)

// Require returns the path of tool, skipping the test when it is missing,
// or failing it when CI=true: no test is skipped silently in CI.
func Require(t testing.TB, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required in CI but is not installed", tool)
	}
	t.Skipf("%s not installed", tool)
	return ""
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
