package conformance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/internal/testtool"
	"github.com/kubegate/kubegate/internal/testwait"
)

// server is one API server under comparison, reached as its cluster
// administrator.
type server struct {
	name       string // "kubegate" or "kube-apiserver"
	dir        string // the tree kubegate pki init wrote
	url        string // https://127.0.0.1:PORT
	kubeconfig string // DIR/admin.conf
	client     *http.Client
	logs       []string // log files, shown when the server fails to start
	listRV     string   // the resourceVersion of the last list answered
}

// do sends one request and returns the status, the response headers and
// the body.
func (s *server) do(t *testing.T, method, path, contentType, accept string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s: %s %s: %v", s.name, method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %s %s: read body: %v", s.name, method, path, err)
	}
	return resp.StatusCode, resp.Header, b
}

// kubectl runs kubectl against the server as its administrator and
// returns the exit code, stdout and stderr.
func (s *server) kubectl(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	// kubectl keeps a discovery cache per server in $HOME/.kube/cache;
	// each server gets its own home, so nothing is shared between runs.
	cmd.Env = append(os.Environ(), "HOME="+s.dir, "KUBECTL_INTERACTIVE_DELETE=false")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run kubectl: %v", err)
		}
		code = ee.ExitCode()
	}
	return code, out.String(), errb.String()
}

// startKubegate runs `kubegate up` in a new directory, with args added to
// its command line; without --nodes in args it runs no nodes and no
// scheduler (--nodes 0), as the kube-apiserver it is compared with has
// none.
func startKubegate(t *testing.T, args ...string) *server {
	t.Helper()
	if !slices.ContainsFunc(args, func(a string) bool { return a == "--nodes" || strings.HasPrefix(a, "--nodes=") }) {
		args = append([]string{"--nodes", "0"}, args...)
	}
	dir := t.TempDir()
	port := testtool.FreePort(t)
	log := filepath.Join(dir, "kubegate.log")
	s := &server{name: "kubegate", dir: dir, url: "https://127.0.0.1:" + strconv.Itoa(port), kubeconfig: filepath.Join(dir, "admin.conf"), logs: []string{log}}
	start(t, s.logs[0], kubegateBin, append([]string{"up", "--dir", dir, "--secure-port", strconv.Itoa(port)}, args...)...)
	testwait.For(t, 60*time.Second, "kubegate up", func() (bool, string) {
		out, _ := os.ReadFile(log)
		return bytes.Contains(out, []byte("kubegate is up")), s.tailLogs()
	})
	s.client = httpClient(t, s.kubeconfig, 60*time.Second)
	s.waitReady(t, s.client)
	return s
}

// startKubeAPIServer runs etcd and kube-apiserver on a tree written by
// `kubegate pki init`, with kubeadm's flags and extra, and makes the
// tree's admin.conf a cluster administrator as `kubeadm init` does.
func startKubeAPIServer(t *testing.T, bin string, extra ...string) *server {
	t.Helper()
	dir := t.TempDir()
	port, client, peer := testtool.FreePort(t), testtool.FreePort(t), testtool.FreePort(t)
	s := &server{name: "kube-apiserver", dir: dir, url: "https://127.0.0.1:" + strconv.Itoa(port), kubeconfig: filepath.Join(dir, "admin.conf"),
		logs: []string{filepath.Join(dir, "etcd.log"), filepath.Join(dir, "kube-apiserver.log")}}
	if out, err := exec.Command(kubegateBin, "pki", "init", "--dir", dir, "--server", s.url).CombinedOutput(); err != nil {
		t.Fatalf("kubegate pki init: %v\n%s", err, out)
	}
	pki := func(name string) string { return filepath.Join(dir, "pki", name) }
	clientURL := fmt.Sprintf("https://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("https://127.0.0.1:%d", peer)
	start(t, s.logs[0], filepath.Join(bin, "etcd"),
		"--name=oracle", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=oracle="+peerURL,
		"--cert-file="+pki("etcd/server.crt"), "--key-file="+pki("etcd/server.key"),
		"--trusted-ca-file="+pki("etcd/ca.crt"), "--client-cert-auth",
		"--peer-cert-file="+pki("etcd/peer.crt"), "--peer-key-file="+pki("etcd/peer.key"),
		"--peer-trusted-ca-file="+pki("etcd/ca.crt"), "--peer-client-cert-auth",
		"--log-level=warn")
	start(t, s.logs[1], filepath.Join(bin, "kube-apiserver"), append([]string{
		"--advertise-address=127.0.0.1", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--etcd-servers=" + clientURL, "--etcd-cafile=" + pki("etcd/ca.crt"),
		"--etcd-certfile=" + pki("apiserver-etcd-client.crt"), "--etcd-keyfile=" + pki("apiserver-etcd-client.key"),
		"--tls-cert-file=" + pki("apiserver.crt"), "--tls-private-key-file=" + pki("apiserver.key"),
		"--client-ca-file=" + pki("ca.crt"),
		"--kubelet-client-certificate=" + pki("apiserver-kubelet-client.crt"), "--kubelet-client-key=" + pki("apiserver-kubelet-client.key"),
		"--service-account-key-file=" + pki("sa.pub"), "--service-account-signing-key-file=" + pki("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--proxy-client-cert-file=" + pki("front-proxy-client.crt"), "--proxy-client-key-file=" + pki("front-proxy-client.key"),
		"--requestheader-client-ca-file=" + pki("front-proxy-ca.crt"), "--requestheader-allowed-names=front-proxy-client",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-", "--requestheader-group-headers=X-Remote-Group",
		"--requestheader-username-headers=X-Remote-User",
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction", "--allow-privileged=true",
		"--service-cluster-ip-range=10.96.0.0/12", "--enable-bootstrap-token-auth=true",
		// The server is advertised on 127.0.0.1, which the endpoint
		// reconciler refuses.
		"--endpoint-reconciler-type=none"}, extra...)...)

	superAdmin := httpClient(t, filepath.Join(dir, "super-admin.conf"), 60*time.Second)
	s.waitReady(t, superAdmin)
	// kubeadm init binds admin.conf's group to cluster-admin with
	// super-admin.conf.
	crb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"kubeadm:cluster-admins"},
"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},
"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"kubeadm:cluster-admins"}]}`
	s.client = superAdmin
	if code, _, body := s.do(t, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "application/json", "", []byte(crb)); code != http.StatusCreated {
		t.Fatalf("bind kubeadm:cluster-admins: %d %s", code, body)
	}
	s.client = httpClient(t, s.kubeconfig, 60*time.Second)
	return s
}

// start runs a server process with its output in logFile, and stops it
// when the test ends.
func start(t *testing.T, logFile, bin string, args ...string) {
	t.Helper()
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		f.Close()
	})
}

// waitReady waits until /readyz answers 200 to client.
func (s *server) waitReady(t *testing.T, client *http.Client) {
	t.Helper()
	testwait.For(t, 90*time.Second, s.name+" /readyz", func() (bool, string) {
		resp, err := client.Get(s.url + "/readyz")
		if err != nil {
			return false, err.Error() + s.tailLogs()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status + s.tailLogs()
	})
}

// tailLogs returns the end of the server's logs.
func (s *server) tailLogs() string {
	var b strings.Builder
	for _, l := range s.logs {
		data, _ := os.ReadFile(l)
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "\n--- %s\n%s", l, data)
	}
	return b.String()
}

// httpClient returns an HTTP client with the credentials of kubeconfig.
func httpClient(t *testing.T, kubeconfig string, timeout time.Duration) *http.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = timeout
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
