package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// debianPython is the interpreter Debian's python3-kubernetes package
// installs the official Python client for.
const debianPython = "/usr/bin/python3"

// pythonClient returns an interpreter that imports the official Python
// client, skipping the test when there is none, or failing it in CI,
// which installs the client (.ci/run).
func pythonClient(t *testing.T) string {
	t.Helper()
	if out, err := exec.Command(debianPython, "-c", "import kubernetes").CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the Python client (Debian's python3-kubernetes) is required in CI: %v\n%s", err, out)
		}
		t.Skipf("the Python client is not installed: %v", err)
	}
	return debianPython
}

// kubegate up is used through the official Python client: objects made
// from manifests (an APIService among them) and their failures, pods
// watched until they run, patches, paged lists, and the dynamic client
// over discovery (testdata/pyclient/test_kubegate.py).
func TestUpServesThePythonClient(t *testing.T) {
	python := pythonClient(t)
	c := startUp(t, t.TempDir(), 0, "--nodes", "2")
	defer c.stop(t)
	script, err := filepath.Abs(filepath.Join("testdata", "pyclient", "test_kubegate.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-W", "ignore::ResourceWarning", script, "-v")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(c.dir, "admin.conf"), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Python client's tests failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "OK") {
		t.Fatalf("no result from the Python client's tests:\n%s", out)
	}
	t.Logf("%s", out)
}
