package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

// upCluster is a running `kubegate up`.
type upCluster struct {
	dir, server string
	port        int
	cmd         *exec.Cmd
	stderr      *testwait.Buffer
	started     time.Duration // from exec to "kubegate is up"
}

// startUp runs `kubegate up --dir dir [extra...]` on a free port (or port,
// if not 0) and waits until it says it is up. Without --nodes in extra it
// runs no nodes and no scheduler (--nodes 0): the tests that want them,
// or run their own, say so.
func startUp(t *testing.T, dir string, port int, extra ...string) *upCluster {
	t.Helper()
	if !slices.ContainsFunc(extra, func(a string) bool { return a == "--nodes" || strings.HasPrefix(a, "--nodes=") }) {
		extra = append([]string{"--nodes", "0"}, extra...)
	}
	if port == 0 {
		port = freePort(t)
	}
	return startUpArgs(t, dir, port, append([]string{"up", "--dir", dir, "--secure-port", strconv.Itoa(port)}, extra...))
}

// startUpArgs runs kubegate with args, a `kubegate up` of dir serving on
// port, and waits until it says it is up.
func startUpArgs(t *testing.T, dir string, port int, args []string) *upCluster {
	t.Helper()
	c := &upCluster{dir: dir, port: port, server: fmt.Sprintf("https://127.0.0.1:%d", port), stderr: &testwait.Buffer{}}
	c.cmd = exec.Command(kubegateBin, args...)
	c.cmd.Stderr = c.stderr
	begin := time.Now()
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	testwait.For(t, 30*time.Second, "kubegate up", func() (bool, string) {
		return strings.Contains(c.stderr.String(), "kubegate is up"), "not; stderr:\n" + c.stderr.String()
	})
	c.started = time.Since(begin)
	return c
}

// stop sends SIGTERM and checks that kubegate up exits cleanly and soon.
func (c *upCluster) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("kubegate up exited with %v; stderr:\n%s", err, c.stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("kubegate up still running 15 s after SIGTERM; stderr:\n%s", c.stderr)
	}
}

// kubectl runs kubectl with the cluster's admin.conf unless args name
// another kubeconfig.
func (c *upCluster) kubectl(t *testing.T, stdin []byte, args ...string) result {
	t.Helper()
	if !strings.HasPrefix(strings.Join(args, " "), "--kubeconfig") {
		args = append([]string{"--kubeconfig", filepath.Join(c.dir, "admin.conf")}, args...)
	}
	return runCmd(t, stdin, "kubectl", args...)
}

// must fails the test unless res succeeded and its stdout contains want.
func must(t *testing.T, res result, want string) {
	t.Helper()
	if res.code != 0 || !strings.Contains(res.stdout, want) {
		t.Fatalf("got exit %d, stdout %q, stderr %q; want success with %q", res.code, res.stdout, res.stderr, want)
	}
}

const appPodYAML = `apiVersion: v1
kind: Pod
metadata:
  name: app
  labels:
    app: app
spec:
  containers:
  - name: app
    image: registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest
    command: ["app"]
    ports:
    - containerPort: 2580
`

const appPodJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"curl-app"},"spec":{"containers":[{"name":"app",
"image":"registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest","command":["app"],"ports":[{"containerPort":2580}]}]}}`

func TestUpWithKubectlAndCurl(t *testing.T) {
	requireTool(t, "kubectl")
	curl := requireTool(t, "curl")
	dir := filepath.Join(t.TempDir(), "cluster")
	c := startUp(t, dir, 0)
	t.Logf("first start (pki init included) took %v", c.started)
	files := t.TempDir()
	podFile := filepath.Join(files, "app.yaml")
	writeFile(t, podFile, []byte(appPodYAML))
	ca := filepath.Join(dir, "pki", "ca.crt")

	t.Run("admin.conf points at the gateway", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "config", "view", "-o", "jsonpath={.clusters[0].cluster.server}"), c.server)
	})
	t.Run("create -f with validation", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "create", "-f", podFile, "--validate=strict"), "pod/app created")
	})
	t.Run("get and describe", func(t *testing.T) {
		res := c.kubectl(t, nil, "get", "pods", "-o", "wide")
		must(t, res, "app")
		for _, col := range []string{"NAME", "STATUS", "NODE", "IP", "AGE", "Pending"} {
			if !strings.Contains(res.stdout, col) {
				t.Errorf("get pods -o wide lacks %q:\n%s", col, res.stdout)
			}
		}
		res = c.kubectl(t, nil, "describe", "pod", "app")
		for _, want := range []string{"registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest", "2580/TCP", "Service Account:  default"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("describe lacks %q:\n%s%s", want, res.stdout, res.stderr)
			}
		}
	})
	t.Run("label and select", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "label", "pod", "app", "tier=web"), "pod/app labeled")
		must(t, c.kubectl(t, nil, "get", "pods", "-l", "tier=web", "-o", "name"), "pod/app")
		res := c.kubectl(t, nil, "get", "pods", "-l", "tier=db", "-o", "name")
		if res.code != 0 || strings.TrimSpace(res.stdout) != "" {
			t.Fatalf("selecting tier=db: %+v", res)
		}
	})
	t.Run("get -w sees added, modified and deleted", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		w := exec.CommandContext(ctx, "kubectl", "--kubeconfig", filepath.Join(dir, "admin.conf"), "get", "pods",
			"--field-selector", "metadata.name=watched", "-w", "--output-watch-events")
		w.Env = kubectlEnv(t)
		out, err := w.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = w.Wait() }()
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		var seen []string
		await := func(want string) {
			t.Helper()
			for !strings.Contains(strings.Join(seen, "\n"), want) {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("kubectl get -w ended; saw %q", seen)
					}
					seen = append(seen, l)
				case <-ctx.Done():
					t.Fatalf("no %s event; saw %q", want, seen)
				}
			}
		}
		// kubectl watches from the resourceVersion of its list, so once the
		// pod has been reported, every later change is seen.
		watched := strings.NewReplacer("name: app", "name: watched").Replace(appPodYAML)
		must(t, c.kubectl(t, []byte(watched), "create", "-f", "-"), "pod/watched created")
		await("ADDED")
		must(t, c.kubectl(t, nil, "label", "pod", "watched", "step=two"), "labeled")
		await("MODIFIED")
		must(t, c.kubectl(t, nil, "delete", "pod", "watched", "--wait=false"), "deleted")
		await("DELETED")
	})
	t.Run("apply twice", func(t *testing.T) {
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n"
		must(t, c.kubectl(t, []byte(cm), "apply", "-f", "-"), "configmap/settings created")
		must(t, c.kubectl(t, []byte(cm), "apply", "-f", "-"), "configmap/settings unchanged")
	})
	t.Run("auth whoami", func(t *testing.T) {
		res := c.kubectl(t, nil, "auth", "whoami")
		must(t, res, "kubernetes-admin")
		if !strings.Contains(res.stdout, "kubeadm:cluster-admins") || !strings.Contains(res.stdout, "system:authenticated") {
			t.Fatalf("groups missing:\n%s", res.stdout)
		}
	})
	daveConf := filepath.Join(files, "dave.conf")
	t.Run("auth can-i", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "auth", "can-i", "create", "pods"), "yes")
		if res := kubegate(t, "kubeconfig", "create", "--dir", dir, "--user", "dave", "--server", c.server, "--out", daveConf); res.code != 0 {
			t.Fatalf("kubeconfig create: %+v", res)
		}
		res := c.kubectl(t, nil, "--kubeconfig", daveConf, "auth", "can-i", "create", "pods")
		if res.code != 1 || strings.TrimSpace(res.stdout) != "no" {
			t.Fatalf("fresh user: got exit %d %q %q, want exit 1 and no", res.code, res.stdout, res.stderr)
		}
		must(t, c.kubectl(t, nil, "create", "rolebinding", "dave-edit", "--clusterrole", "edit", "--user", "dave"), "rolebinding.rbac.authorization.k8s.io/dave-edit created")
		testwait.For(t, 10*time.Second, "dave can create pods", func() (bool, string) {
			res := c.kubectl(t, nil, "--kubeconfig", daveConf, "auth", "can-i", "create", "pods")
			return res.code == 0 && strings.TrimSpace(res.stdout) == "yes", res.stdout + res.stderr
		})
		res = c.kubectl(t, nil, "--kubeconfig", daveConf, "auth", "can-i", "create", "pods", "-n", "kube-system")
		if strings.TrimSpace(res.stdout) != "no" {
			t.Fatalf("dave in kube-system: got %q, want no", res.stdout)
		}
	})
	saConf := filepath.Join(files, "sa.conf")
	t.Run("create token and use it", func(t *testing.T) {
		res := c.kubectl(t, nil, "create", "token", "default")
		must(t, res, "eyJ")
		token := strings.TrimSpace(res.stdout)
		if res := kubegate(t, "kubeconfig", "create", "--dir", dir, "--user", "default-sa", "--token", token, "--server", c.server, "--out", saConf); res.code != 0 {
			t.Fatalf("kubeconfig create --token: %+v", res)
		}
		must(t, c.kubectl(t, nil, "--kubeconfig", saConf, "auth", "whoami"), "system:serviceaccount:default:default")
		res = c.kubectl(t, nil, "--kubeconfig", saConf, "get", "pods")
		if res.code == 0 || !strings.Contains(res.stderr, `User "system:serviceaccount:default:default" cannot list resource "pods"`) {
			t.Fatalf("the service account listed pods without a binding: %+v", res)
		}
		res = c.kubectl(t, nil, "create", "token", "default", "--duration", "1m")
		if res.code == 0 || !strings.Contains(res.stderr, "may not specify a duration less than 10 minutes") {
			t.Fatalf("a 1 minute token: %+v", res)
		}
	})
	t.Run("create namespace", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "create", "namespace", "team-a"), "namespace/team-a created")
		testwait.For(t, 10*time.Second, "team-a has a default service account", func() (bool, string) {
			res := c.kubectl(t, nil, "get", "serviceaccount", "default", "-n", "team-a", "-o", "name")
			return res.code == 0, res.stderr
		})
	})
	t.Run("curl with a client cert", func(t *testing.T) {
		prefix := filepath.Join(files, "curl-admin")
		if res := kubegate(t, "cert", "issue", "--dir", dir, "--cn", "curl-admin", "--org", "kubeadm:cluster-admins", "--out", prefix); res.code != 0 {
			t.Fatalf("cert issue: %+v", res)
		}
		auth := []string{"-sS", "--cacert", ca, "--cert", prefix + ".crt", "--key", prefix + ".key"}
		res := runCmd(t, nil, curl, append(auth, c.server+"/api/")...)
		var versions struct {
			Kind                       string
			ServerAddressByClientCIDRs []struct{ ClientCIDR, ServerAddress string }
		}
		if err := json.Unmarshal([]byte(res.stdout), &versions); err != nil || versions.Kind != "APIVersions" ||
			len(versions.ServerAddressByClientCIDRs) == 0 || versions.ServerAddressByClientCIDRs[0].ServerAddress == "" {
			t.Fatalf("GET /api/: %v %+v", err, res)
		}
		res = runCmd(t, nil, curl, append(auth, "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "Content-Type: application/json",
			"--data-binary", appPodJSON, c.server+"/api/v1/namespaces/default/pods")...)
		if res.stdout != "201" {
			t.Fatalf("POST pod: got %q, want 201; %s", res.stdout, res.stderr)
		}
	})
	t.Run("delete", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "delete", "pod", "app", "--wait=false"), `pod "app" deleted`)
		res := c.kubectl(t, nil, "get", "pod", "app")
		if res.code == 0 || !strings.Contains(res.stderr, `pods "app" not found`) {
			t.Fatalf("get after delete: %+v", res)
		}
	})

	c.stop(t)
	c = startUp(t, dir, c.port)
	t.Logf("restart took %v", c.started)
	t.Run("state survives a restart", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "get", "pod", "curl-app", "-o", "name"), "pod/curl-app")
		must(t, c.kubectl(t, nil, "get", "configmap", "settings", "-o", "jsonpath={.data.color}"), "blue")
		must(t, c.kubectl(t, nil, "get", "rolebinding", "dave-edit", "-o", "jsonpath={.roleRef.name}"), "edit")
		must(t, c.kubectl(t, nil, "get", "namespace", "team-a", "-o", "name"), "namespace/team-a")
		must(t, c.kubectl(t, nil, "--kubeconfig", daveConf, "auth", "can-i", "create", "pods"), "yes")
		must(t, c.kubectl(t, nil, "--kubeconfig", saConf, "auth", "whoami"), "system:serviceaccount:default:default")
	})
	c.stop(t)
	if _, err := os.Stat(filepath.Join(dir, "state.db")); err != nil {
		t.Fatalf("no state.db: %v", err)
	}
}

// TestUpIsReady checks both readiness endpoints of `kubegate up`: the API
// server's /readyz, reached through the gateway with kubectl, and the
// gateway's own /kubegate/readyz, which asks the API server in turn; and
// that the admin may read the gateway's metrics.
func TestUpIsReady(t *testing.T) {
	requireTool(t, "kubectl")
	curl := requireTool(t, "curl")
	dir := filepath.Join(t.TempDir(), "cluster")
	c := startUp(t, dir, 0)
	must(t, c.kubectl(t, nil, "get", "--raw", "/readyz"), "ok")
	ca := filepath.Join(dir, "pki", "ca.crt")
	var last result
	testwait.For(t, 5*time.Second, "/kubegate/readyz ok", func() (bool, string) {
		last = runCmd(t, nil, curl, "-sS", "--cacert", ca, c.server+"/kubegate/readyz")
		return last.code == 0 && last.stdout == "ok", fmt.Sprintf("got %+v", last)
	})
	// The gateway's metrics, which the API server authorizes for the admin.
	must(t, c.kubectl(t, nil, "get", "--raw", "/kubegate/metrics"), "kubegate_gateway_requests_total")
	c.stop(t)
}
