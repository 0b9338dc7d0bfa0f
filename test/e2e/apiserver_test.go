package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/store/bolt"
)

// apiserverProc is a running `kubegate apiserver`.
type apiserverProc struct {
	url    string
	cmd    *exec.Cmd
	stderr *testwait.Buffer
}

// startAPIServer runs `kubegate apiserver` over DIR/pki (from pki init)
// with its data in dataDir (""): none, give --etcd-servers in extra), on
// port (0: a free one), and waits until it serves.
func startAPIServer(t *testing.T, dir, dataDir string, port int, extra ...string) *apiserverProc {
	t.Helper()
	if port == 0 {
		port = freePort(t)
	}
	pki := func(name string) string { return filepath.Join(dir, "pki", name) }
	args := append([]string{"apiserver", "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--tls-cert-file", pki("apiserver.crt"), "--tls-private-key-file", pki("apiserver.key"),
		"--client-ca-file", pki("ca.crt"),
		"--service-account-key-file", pki("sa.pub"), "--service-account-signing-key-file", pki("sa.key"),
		"--requestheader-client-ca-file", pki("front-proxy-ca.crt"), "--requestheader-allowed-names", "front-proxy-client"}, extra...)
	if dataDir != "" {
		args = append(args, "--data-dir", dataDir)
	}
	p := &apiserverProc{url: fmt.Sprintf("https://127.0.0.1:%d", port), stderr: &testwait.Buffer{}}
	p.cmd = exec.Command(kubegateBin, args...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	testwait.For(t, 30*time.Second, "kubegate apiserver serving", func() (bool, string) {
		if p.cmd.ProcessState != nil {
			t.Fatalf("kubegate apiserver exited; stderr:\n%s", p.stderr)
		}
		return strings.Contains(p.stderr.String(), "kubegate apiserver serving on"), "not; stderr:\n" + p.stderr.String()
	})
	return p
}

func TestAPIServerFlags(t *testing.T) {
	t.Parallel()
	dir := pkiTree(t)
	crt, key := filepath.Join(dir, "pki", "apiserver.crt"), filepath.Join(dir, "pki", "apiserver.key")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no serving cert", []string{"--data-dir", t.TempDir()}, "--tls-cert-file and --tls-private-key-file are required"},
		{"no store", []string{"--tls-cert-file", crt, "--tls-private-key-file", key}, "give exactly one of --data-dir and --etcd-servers"},
		{"two stores", []string{"--tls-cert-file", crt, "--tls-private-key-file", key, "--data-dir", t.TempDir(), "--etcd-servers", "https://127.0.0.1:2379"},
			"give exactly one of --data-dir and --etcd-servers"},
		{"unknown authorization mode", []string{"--tls-cert-file", crt, "--tls-private-key-file", key, "--data-dir", t.TempDir(), "--authorization-mode", "ABAC"},
			`--authorization-mode "ABAC" is not one of RBAC, AlwaysAllow`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := kubegate(t, append([]string{"apiserver"}, tt.args...)...)
			if res.code != 2 || strings.Count(res.stderr, "\n") != 1 || !strings.Contains(res.stderr, tt.want) {
				t.Fatalf("got exit %d stderr %q, want exit 2 and one line with %q", res.code, res.stderr, tt.want)
			}
		})
	}
}

func TestAPIServerAuthentication(t *testing.T) {
	curl := requireTool(t, "curl")
	requireTool(t, "kubectl")
	dir := pkiTree(t)
	p := startAPIServer(t, dir, t.TempDir(), 0)
	files := t.TempDir()
	pki := func(name string) string { return filepath.Join(dir, "pki", name) }
	admin := func(args ...string) result {
		t.Helper()
		return runCmd(t, nil, "kubectl", append([]string{"--kubeconfig", filepath.Join(dir, "admin.conf"), "--server", p.url}, args...)...)
	}
	issue := func(cn string, orgs ...string) (string, string) {
		t.Helper()
		prefix := filepath.Join(files, cn)
		args := []string{"cert", "issue", "--dir", dir, "--cn", cn, "--out", prefix}
		for _, o := range orgs {
			args = append(args, "--org", o)
		}
		if res := kubegate(t, args...); res.code != 0 {
			t.Fatalf("cert issue: %+v", res)
		}
		return prefix + ".crt", prefix + ".key"
	}
	whoami := func(extra ...string) (user string, groups []string) {
		t.Helper()
		args := append([]string{"-sS", "--cacert", pki("ca.crt"), "-X", "POST", "-H", "Content-Type: application/json",
			"--data-binary", `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`}, extra...)
		res := runCmd(t, nil, curl, append(args, p.url+"/apis/authentication.k8s.io/v1/selfsubjectreviews")...)
		var ssr struct {
			Status struct {
				UserInfo struct {
					Username string
					Groups   []string
				}
			}
		}
		if err := json.Unmarshal([]byte(res.stdout), &ssr); err != nil {
			t.Fatalf("selfsubjectreview: %v: %+v", err, res)
		}
		return ssr.Status.UserInfo.Username, ssr.Status.UserInfo.Groups
	}

	t.Run("x509 client certificate", func(t *testing.T) {
		res := admin("auth", "whoami")
		must(t, res, "kubernetes-admin")
	})
	t.Run("request-header from the front proxy", func(t *testing.T) {
		user, groups := whoami("--cert", pki("front-proxy-client.crt"), "--key", pki("front-proxy-client.key"),
			"-H", "X-Remote-User: alice", "-H", "X-Remote-Group: devs")
		if user != "alice" || strings.Join(groups, ",") != "devs,system:authenticated" {
			t.Fatalf("got %q %q, want alice [devs system:authenticated]", user, groups)
		}
	})
	t.Run("identity headers from a client certificate are ignored", func(t *testing.T) {
		crt, key := issue("mallory")
		user, _ := whoami("--cert", crt, "--key", key, "-H", "X-Remote-User: kubernetes-admin", "-H", "X-Remote-Group: system:masters")
		if user != "mallory" {
			t.Fatalf("got %q, want mallory", user)
		}
	})
	t.Run("anonymous gets public info only", func(t *testing.T) {
		res := runCmd(t, nil, curl, "-sS", "--cacert", pki("ca.crt"), p.url+"/healthz")
		if res.stdout != "ok" {
			t.Fatalf("anonymous /healthz: %+v", res)
		}
		res = runCmd(t, nil, curl, "-sS", "--cacert", pki("ca.crt"), p.url+"/api")
		if !strings.Contains(res.stdout, `forbidden: User \"system:anonymous\" cannot get path \"/api\"`) {
			t.Fatalf("anonymous /api: %+v", res)
		}
	})
	t.Run("token review", func(t *testing.T) {
		res := admin("create", "token", "default", "--audience", "vault")
		must(t, res, "eyJ")
		body := fmt.Sprintf(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":%q,"audiences":["vault"]}}`, strings.TrimSpace(res.stdout))
		res = runCmd(t, []byte(body), "kubectl", "--kubeconfig", filepath.Join(dir, "admin.conf"), "--server", p.url,
			"create", "--raw", "/apis/authentication.k8s.io/v1/tokenreviews", "-f", "-")
		must(t, res, `"authenticated":true`)
		if !strings.Contains(res.stdout, `"username":"system:serviceaccount:default:default"`) || !strings.Contains(res.stdout, `"audiences":["vault"]`) {
			t.Fatalf("token review: %s", res.stdout)
		}
	})
	daveCrt, daveKey := issue("dave")
	dave := func(args ...string) result {
		t.Helper()
		return runCmd(t, nil, "kubectl", append([]string{"--server", p.url, "--certificate-authority", pki("ca.crt"),
			"--client-certificate", daveCrt, "--client-key", daveKey}, args...)...)
	}
	t.Run("impersonation", func(t *testing.T) {
		must(t, admin("auth", "whoami", "--as", "carol", "--as-group", "qa"), "carol")
		res := runCmd(t, nil, curl, "-sS", "--cacert", pki("ca.crt"), "--cert", daveCrt, "--key", daveKey,
			"-H", "Impersonate-User: kubernetes-admin", p.url+"/api/v1/namespaces/default/pods")
		if !strings.Contains(res.stdout, `users \"kubernetes-admin\" is forbidden: User \"dave\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope`) ||
			!strings.Contains(res.stdout, `"code":403`) {
			t.Fatalf("dave impersonating the admin: %+v", res)
		}
	})
	t.Run("escalation through a binding is refused", func(t *testing.T) {
		must(t, admin("create", "role", "binder", "--verb", "create", "--resource", "rolebindings.rbac.authorization.k8s.io"), "created")
		must(t, admin("create", "rolebinding", "dave-binder", "--role", "binder", "--user", "dave"), "created")
		testwait.For(t, 10*time.Second, "dave may create role bindings", func() (bool, string) {
			res := dave("auth", "can-i", "create", "rolebindings")
			return res.code == 0, res.stdout
		})
		res := dave("create", "rolebinding", "dave-admin", "--clusterrole", "admin", "--user", "dave")
		if res.code == 0 || !strings.Contains(res.stderr, "is attempting to grant RBAC permissions not currently held") {
			t.Fatalf("dave granting himself admin: %+v", res)
		}
		must(t, admin("create", "rolebinding", "dave-admin", "--clusterrole", "admin", "--user", "dave"), "created")
	})
}

// TestAPIServerDurability kills the API server with SIGKILL in the middle
// of a write load, ten times, and checks after each restart that every
// write it acknowledged is there, and at the end that the file is sound.
func TestAPIServerDurability(t *testing.T) {
	dir := pkiTree(t)
	data := t.TempDir()
	port := freePort(t)
	acked := map[string]bool{}
	const rounds, writers = 10, 8
	for round := range rounds {
		p := startAPIServer(t, dir, data, port)
		cs := clientset(t, dir, p.url)
		ctx := context.Background()
		list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("round %d: list after restart: %v", round, err)
		}
		present := map[string]bool{}
		for _, cm := range list.Items {
			present[cm.Name] = true
		}
		for name := range acked {
			if !present[name] {
				t.Fatalf("round %d: acknowledged configmap %s is missing after kill -9", round, name)
			}
		}

		var mu sync.Mutex
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					name := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": strconv.Itoa(i)}}
					if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
						return // the server is gone
					}
					mu.Lock()
					acked[name] = true
					mu.Unlock()
				}
			}()
		}
		// Let the load run for a while that differs from round to round,
		// then pull the plug.
		time.Sleep(time.Duration(200+37*round) * time.Millisecond)
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = p.cmd.Wait()
		close(stop)
		wg.Wait()
	}
	if len(acked) < rounds {
		t.Fatalf("only %d writes were acknowledged in %d rounds", len(acked), rounds)
	}
	t.Logf("%d acknowledged writes over %d kills, none lost", len(acked), rounds)
	st, err := bolt.Open(filepath.Join(data, "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Check(context.Background()); err != nil {
		t.Fatalf("store check after the last kill: %v", err)
	}
}

// clientset returns a client-go clientset with admin.conf's credentials
// for the server at url.
func clientset(t *testing.T, dir, url string) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags(url, filepath.Join(dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
