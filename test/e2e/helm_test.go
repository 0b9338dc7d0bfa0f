package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helmBinary returns the helm CLI that test/e2e/helm/build.sh builds from
// the module proxy, once per machine (a first build takes minutes; the
// binary is then found in the Go build cache). When it cannot be built the
// test is skipped, or fails when CI=true, as for any tool a test needs.
func helmBinary(t *testing.T) string {
	t.Helper()
	requireTool(t, "go") // build.sh builds with it
	helmOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		var out, errb bytes.Buffer
		cmd := exec.Command(filepath.Join(filepath.Dir(file), "helm", "build.sh"))
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			helmErr = fmt.Errorf("test/e2e/helm/build.sh: %v\n%s", err, errb.String())
			return
		}
		helmPath = strings.TrimSpace(out.String())
	})
	if helmErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("helm is required in CI: %v", helmErr)
		}
		t.Skipf("no helm: %v", helmErr)
	}
	return helmPath
}

// helmRelease is a row of `helm list -o json`.
type helmRelease struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Revision  string `json:"revision"`
	Status    string `json:"status"`
	Chart     string `json:"chart"`
}

// TestHelmInstallsChartWithCRDs_I1 installs with Helm, against `kubegate up
// --nodes 1`, a chart whose crds/ directory defines the Widget kind
// (docs/kubernetes-behaviour.md, I.1) and whose templates create a Widget
// (I.2), a ConfigMap and a Deployment; upgrades it with a new value, then
// with one the CRD's schema refuses; and uninstalls it, which leaves the
// CRD, as Helm never deletes what crds/ installed.
func TestHelmInstallsChartWithCRDs_I1(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	bin := helmBinary(t)
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0, "--nodes", "1")
	defer c.stop(t)

	helm := helmOn(t, bin, c)
	list := func() []helmRelease {
		t.Helper()
		res := helm("list", "-o", "json")
		var rels []helmRelease
		if res.code != 0 || json.Unmarshal([]byte(res.stdout), &rels) != nil {
			t.Fatalf("helm list: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
		}
		return rels
	}
	wantRelease := func(revision, status string) {
		t.Helper()
		want := []helmRelease{{Name: "demo", Namespace: "default", Revision: revision, Status: status, Chart: "widgets-0.1.0"}}
		if got := list(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("helm list: %+v; want %+v", got, want)
		}
	}
	// ok fails the test unless helm succeeded, printed each of wants and
	// warned of nothing.
	ok := func(res result, wants ...string) {
		t.Helper()
		for _, want := range wants {
			must(t, res, want)
		}
		if res.stderr != "" {
			t.Fatalf("helm succeeded with stderr %q; want none", res.stderr)
		}
	}
	// get prints one object's fields, by jsonpath, with kubectl.
	get := func(what, jsonpath string) string {
		t.Helper()
		res := c.kubectl(t, nil, "get", what, "-o", "jsonpath="+jsonpath)
		if res.code != 0 {
			t.Fatalf("kubectl get %s: %s", what, res.stderr)
		}
		return res.stdout
	}
	chart, err := filepath.Abs(filepath.Join("testdata", "widgets"))
	if err != nil {
		t.Fatal(err)
	}
	// Helm waits for the objects it applied to be ready, the Deployment
	// available, as kstatus reads them.
	wait := []string{"--wait=watcher", "--timeout=2m"}

	res := helm(append([]string{"install", "demo", chart}, wait...)...)
	ok(res, "NAME: demo\n", "NAMESPACE: default\n", "STATUS: deployed\n", "REVISION: 1\n", "DESCRIPTION: Install complete\n")
	wantRelease("1", "deployed")
	if got := get("crd/widgets.charts.example.com", `{.status.conditions[?(@.type=="Established")].status}`); got != "True" {
		t.Fatalf("the CRD's Established condition: %q", got)
	}
	// The schema's default is applied, and Helm's labels set.
	const widget = `{.spec.color}/{.spec.size}/{.metadata.labels.app\.kubernetes\.io/managed-by}/{.metadata.annotations.meta\.helm\.sh/release-name}`
	if got := get("widget/demo", widget); got != "blue/3/Helm/demo" {
		t.Fatalf("widget demo: %q; want blue/3/Helm/demo", got)
	}
	must(t, c.kubectl(t, nil, "get", "widgets", "--no-headers"), "demo   blue")
	if got := get("configmap/demo-settings", "{.data.color}"); got != "blue" {
		t.Fatalf("configmap demo-settings: color %q", got)
	}
	const deploy = `{.status.availableReplicas}/{.spec.template.metadata.annotations.charts\.example\.com/color}`
	if got := get("deployment/demo", deploy); got != "1/blue" {
		t.Fatalf("deployment demo: %q; want 1/blue", got)
	}

	res = helm(append([]string{"upgrade", "demo", chart, "--set", "color=green"}, wait...)...)
	ok(res, `Release "demo" has been upgraded. Happy Helming!`, "STATUS: deployed\n", "REVISION: 2\n")
	wantRelease("2", "deployed")
	if got := get("widget/demo", widget); got != "green/3/Helm/demo" {
		t.Fatalf("widget demo after the upgrade: %q; want green/3/Helm/demo", got)
	}
	if got := get("configmap/demo-settings", "{.data.color}"); got != "green" {
		t.Fatalf("configmap demo-settings after the upgrade: color %q", got)
	}
	if got := get("deployment/demo", deploy); got != "1/green" {
		t.Fatalf("deployment demo after the upgrade: %q; want 1/green", got)
	}

	// A value the CRD's schema does not allow: the API server's refusal
	// is Helm's error, and the release's third revision failed.
	res = helm("upgrade", "demo", chart, "--set", "color=purple")
	refusal := `Widget.charts.example.com "demo" is invalid: spec.color: Unsupported value: "purple": supported values: "blue", "green", "red"`
	if res.code != 1 || !strings.Contains(res.stderr, "Error: UPGRADE FAILED: ") || !strings.Contains(res.stderr, refusal) {
		t.Fatalf("upgrade to purple: exit %d, stdout %q, stderr %q; want exit 1 with %q", res.code, res.stdout, res.stderr, refusal)
	}
	wantRelease("3", "failed")
	if got := get("widget/demo", widget); got != "green/3/Helm/demo" {
		t.Fatalf("widget demo after the refused upgrade: %q; want green/3/Helm/demo", got)
	}

	res = helm("uninstall", "demo", "--wait", "--timeout=2m")
	ok(res, `release "demo" uninstalled`)
	if got := list(); len(got) != 0 {
		t.Fatalf("helm list after uninstall: %+v", got)
	}
	for _, what := range []string{"widgets", "configmaps", "deployments", "secrets"} {
		res := c.kubectl(t, nil, "get", what, "-l", "app.kubernetes.io/managed-by=Helm", "--no-headers")
		if res.code != 0 || res.stdout != "" {
			t.Fatalf("%s Helm made after uninstall: exit %d, stdout %q, stderr %q", what, res.code, res.stdout, res.stderr)
		}
	}
	if res := c.kubectl(t, nil, "get", "secrets", "-l", "owner=helm", "--no-headers"); res.code != 0 || res.stdout != "" {
		t.Fatalf("release secrets after uninstall: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	must(t, c.kubectl(t, nil, "get", "crd", "widgets.charts.example.com", "-o", "name"), "customresourcedefinition.apiextensions.k8s.io/widgets.charts.example.com")
}

// helmOn returns a function that runs the helm CLI bin against c with
// admin.conf, in a home of its own that is also its working directory.
func helmOn(t *testing.T, bin string, c *upCluster) func(args ...string) result {
	home := t.TempDir()
	env := append(kubectlEnv(t), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	return func(args ...string) result {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--kubeconfig", filepath.Join(c.dir, "admin.conf")}, args...)...)
		cmd.Env, cmd.Dir = env, home
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		res := result{}
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("run helm: %v", err)
			}
			res.code = ee.ExitCode()
		}
		res.stdout, res.stderr = out.String(), errb.String()
		return res
	}
}
