package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

// TestUpDefaults_G13_A5 starts the built binary as the README's main
// command does, `kubegate up --dir DIR` (with a free --secure-port, as
// every test here, so that runs side by side do not meet on 6443), and
// uses it as a new user would, with nothing annotated: a Deployment's
// three replicas run on the three default nodes, a Job completes after the
// simulated run time (docs/kubernetes-behaviour.md, G.13), the chart
// `helm create` writes passes `helm test`, and a request without
// credentials is answered on /readyz and refused on /api (A.5).
func TestUpDefaults_G13_A5(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	curl := requireTool(t, "curl")
	dir := filepath.Join(t.TempDir(), "kubegate")
	port := freePort(t)
	c := startUpArgs(t, dir, port, []string{"up", "--dir", dir, "--secure-port", strconv.Itoa(port)})
	defer c.stop(t)

	t.Run("group", func(t *testing.T) {
		t.Run("a deployment of three replicas runs, one on each node", func(t *testing.T) {
			t.Parallel()
			must(t, c.kubectl(t, nil, "create", "deployment", "web", "--image=nginx", "--replicas=3"), "deployment.apps/web created")
			testwait.For(t, 90*time.Second, "3 Running pods of web on 3 nodes", func() (bool, string) {
				res := c.kubectl(t, nil, "get", "pods", "-l", "app=web", "-o", `jsonpath={range .items[*]}{.status.phase} {.spec.nodeName}{"\n"}{end}`)
				running, nodes := 0, map[string]bool{}
				for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
					if phase, node, ok := strings.Cut(line, " "); ok && phase == "Running" {
						running++
						nodes[node] = true
					}
				}
				return running == 3 && len(nodes) == 3, fmt.Sprintf("%q %s", res.stdout, res.stderr)
			})
		})
		t.Run("a job completes", func(t *testing.T) {
			t.Parallel()
			must(t, c.kubectl(t, nil, "create", "job", "j", "--image=busybox", "--", "true"), "job.batch/j created")
			must(t, c.kubectl(t, nil, "wait", "--for=condition=complete", "job/j", "--timeout=90s"), "job.batch/j condition met")
			res := c.kubectl(t, nil, "get", "pods", "-l", "job-name=j", "-o",
				`jsonpath={.items[0].status.phase} {.items[0].status.containerStatuses[0].state.terminated.exitCode} {.items[0].status.containerStatuses[0].state.terminated.reason}`)
			if res.code != 0 || res.stdout != "Succeeded 0 Completed" {
				t.Errorf("job j's pod: exit %d, %q %s; want Succeeded 0 Completed", res.code, res.stdout, res.stderr)
			}
		})
		t.Run("helm test of the chart helm create writes passes", func(t *testing.T) {
			t.Parallel()
			helm := helmOn(t, helmBinary(t), c)
			must(t, helm("create", "demo"), "Creating demo")
			must(t, helm("install", "demo", "./demo", "--wait", "--timeout=3m"), "STATUS: deployed")
			res := helm("test", "demo", "--timeout=2m")
			if res.code != 0 || !strings.Contains(res.stdout, "TEST SUITE:     demo-test-connection") || !strings.Contains(res.stdout, "Phase:          Succeeded") {
				t.Fatalf("helm test: exit %d, stdout %q, stderr %q; want demo-test-connection Succeeded", res.code, res.stdout, res.stderr)
			}
		})
		t.Run("health answers without credentials, the API does not", func(t *testing.T) {
			t.Parallel()
			anonymousCodes(t, curl, c.server, map[string]string{"/readyz": "200 ok", "/livez": "200 ok", "/healthz": "200 ok", "/api": "401 "})
		})
	})
}

// TestGatewayAnswersHealthAnonymously_A5 runs `kubegate gateway` in
// front of `kubegate apiserver`, which answers no anonymous request
// itself: the gateway forwards a request without credentials as
// system:anonymous on the health and version paths, where RBAC's
// system:public-info-viewer lets it in (and, on a sub-path it does not
// name, answers 403 as kube does), and refuses it elsewhere with 401
// (docs/kubernetes-behaviour.md, A.5).
func TestGatewayAnswersHealthAnonymously_A5(t *testing.T) {
	t.Parallel()
	curl := requireTool(t, "curl")
	dir := t.TempDir()
	if res := kubegate(t, "pki", "init", "--dir", dir); res.code != 0 {
		t.Fatalf("pki init: %d %s", res.code, res.stderr)
	}
	pki := func(name string) string { return filepath.Join(dir, "pki", name) }
	api := startAPIServer(t, dir, filepath.Join(dir, "state"), 0, "--anonymous-auth=false",
		"--requestheader-username-headers", "X-Remote-User", "--requestheader-group-headers", "X-Remote-Group",
		"--requestheader-uid-headers", "X-Remote-Uid", "--requestheader-extra-headers-prefix", "X-Remote-Extra-")
	anonymousCodes(t, curl, api.url, map[string]string{"/readyz": "401 "})

	port := freePort(t)
	stderr := &testwait.Buffer{}
	gw := exec.Command(kubegateBin, "gateway", "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--tls-cert-file", pki("apiserver.crt"), "--tls-private-key-file", pki("apiserver.key"),
		"--client-ca-file", pki("ca.crt"), "--upstream", api.url, "--upstream-ca-file", pki("ca.crt"),
		"--proxy-client-cert-file", pki("front-proxy-client.crt"), "--proxy-client-key-file", pki("front-proxy-client.key"))
	gw.Stderr = stderr
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Process.Kill(); _ = gw.Wait() })
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	waitHealthy(t, curl, base, pki("ca.crt"), stderr)
	anonymousCodes(t, curl, base, map[string]string{"/readyz": "200 ok", "/livez": "200 ok", "/healthz": "200 ok", "/livez/ping": "403 ",
		"/readyz/etcd": "403 ", "/api": "401 ", "/apis/apps/v1": "401 "})
	res := runCmd(t, nil, curl, "-sk", base+"/version")
	if res.code != 0 || !strings.Contains(res.stdout, `"gitVersion"`) {
		t.Errorf("GET /version without credentials: %q %s; want the version JSON", res.stdout, res.stderr)
	}
}

// anonymousCodes GETs each path of base with curl and no credentials and
// wants "CODE BODY" ("401 " for any body).
func anonymousCodes(t *testing.T, curl, base string, want map[string]string) {
	t.Helper()
	for path, w := range want {
		res := runCmd(t, nil, curl, "-sk", "-w", "\n%{http_code}", base+path)
		body, code := "", res.stdout
		if i := strings.LastIndex(res.stdout, "\n"); i >= 0 {
			body, code = res.stdout[:i], res.stdout[i+1:]
		}
		got := code + " " + body
		if wantCode, wantBody, _ := strings.Cut(w, " "); code != wantCode || (wantBody != "" && body != wantBody) {
			t.Errorf("GET %s%s without credentials: %q, want %q", base, path, got, w)
		}
	}
}
