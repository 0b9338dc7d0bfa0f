package up

import (
	"context"
	"crypto"
	"crypto/tls"
	"fmt"
	"github.com/kubegate/kubegate/apiserver/server"
	"github.com/kubegate/kubegate/internal/serving"
	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testtool"
	"io"
	"k8s.io/client-go/rest"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/kubeconfig"
)

// initPKI writes a cluster tree as pki init does.
func initPKI(dir, server string) error {
	spec := ca.Spec{}
	spec.Default()
	plan, err := ca.NewPlan(dir, spec, false)
	if err != nil {
		return err
	}
	out, err := plan.Build()
	if err != nil {
		return err
	}
	if err := ca.WriteFiles(dir, out.Files); err != nil {
		return err
	}
	return kubeconfig.WriteCredentials(dir, "kubernetes", server, out.Credentials)
}

func freePort(t *testing.T) int { return testtool.FreePort(t) }

// cluster starts Run's cluster in dir and returns a client for admin.conf
// and a function that stops it and returns Serve's error.
func cluster(t *testing.T, dir string, port int) (*kubernetes.Clientset, func() error) {
	t.Helper()
	return clusterWithNodes(t, dir, port, 0)
}

// clusterWithNodes is cluster with nodes simulated nodes, and so the
// scheduler and the node lifecycle taint pass.
func clusterWithNodes(t *testing.T, dir string, port, nodes int) (*kubernetes.Clientset, func() error) {
	t.Helper()
	return clusterWith(t, Options{Dir: dir, SecurePort: port, Nodes: nodes})
}

// clusterWith is cluster with the options o (InitPKI, Status and Logger
// are set here).
func clusterWith(t *testing.T, o Options) (*kubernetes.Clientset, func() error) {
	t.Helper()
	dir := o.Dir
	ctx, cancel := context.WithCancel(context.Background())
	var status strings.Builder
	logs := &lockedBuffer{}
	o.InitPKI, o.Status = initPKI, &status
	o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := Start(ctx, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	for _, want := range []string{"export KUBECONFIG=" + filepath.Join(dir, "admin.conf"), "kubectl get pods", c.Server} {
		if !strings.Contains(status.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, status.String())
		}
	}
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx) }()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(15 * time.Second):
			t.Fatal("cluster still serving 15 s after cancel")
			return nil
		}
	}
	t.Cleanup(func() {
		// A cluster that stopped on its own before the test stopped it
		// explains the failures that followed.
		if t.Failed() && !stopped {
			select {
			case err := <-done:
				stopped = true
				t.Logf("the cluster had stopped on its own: %v", err)
			default:
			}
		}
		_ = stop()
		if t.Failed() {
			t.Logf("the cluster's warnings and errors:\n%s", logs.String())
		}
	})
	return cs, stop
}

// lockedBuffer is a log destination shared by the cluster's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestRunKeepsStateAcrossRestarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cluster")
	port := freePort(t)
	cs, stop := cluster(t, dir, port)
	ctx := context.Background()

	// The kubeconfigs point at the gateway, and the admin is who kubeadm
	// makes it.
	ssr, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ui := ssr.Status.UserInfo; ui.Username != "kubernetes-admin" || !contains(ui.Groups, "kubeadm:cluster-admins") {
		t.Fatalf("whoami: got %+v", ui)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest"}}}}
	created, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.ServiceAccountName != "default" {
		t.Fatalf("serviceAccountName: got %q, want default", created.Spec.ServiceAccountName)
	}
	tok, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The gateway looks the token's service account up in the API server
	// with its own identity, which the default policy allows.
	if _, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, server.GatewayLookupRole, metav1.GetOptions{}); err != nil {
		t.Fatalf("gateway lookup binding: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}

	cs, _ = cluster(t, dir, port)
	got, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pod after restart: %v", err)
	}
	if got.UID != created.UID {
		t.Fatalf("pod UID changed across the restart: %s → %s", created.UID, got.UID)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.CertData, cfg.KeyData, cfg.BearerToken = nil, nil, tok.Status.Token
	sa, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ssr, err = sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token issued before the restart: %v", err)
	}
	if ssr.Status.UserInfo.Username != "system:serviceaccount:default:default" {
		t.Fatalf("token user: got %q", ssr.Status.UserInfo.Username)
	}
	// A deleted service account's tokens stop working, through the
	// gateway's lookup.
	if err := cs.CoreV1().ServiceAccounts("default").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "token of a deleted service account refused with 401", func() (bool, string) {
		_, err = sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return apierrors.IsUnauthorized(err), fmt.Sprintf("%v", err)
	})
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	noop := func(string, string) error { return nil }
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"no dir", Options{SecurePort: 6443, InitPKI: noop}, "--dir is required"},
		{"port zero", Options{Dir: "d", InitPKI: noop}, "--secure-port 0 is not a port number"},
		{"negative nodes", Options{Dir: "d", SecurePort: 6443, Nodes: -1, InitPKI: noop}, "--nodes -1 is negative"},
		{"node bootstrap without nodes", Options{Dir: "d", SecurePort: 6443, NodeBootstrap: true, InitPKI: noop}, "--node-bootstrap needs simulated nodes (--nodes N)"},
		{"negative signing duration", Options{Dir: "d", SecurePort: 6443, SigningDuration: -time.Minute, InitPKI: noop}, "--cluster-signing-duration -1m0s is negative"},
		{"negative run time", Options{Dir: "d", SecurePort: 6443, PodRunTime: -time.Second, InitPKI: noop}, "--pod-run-time -1s is negative"},
		{"API server address without a port", Options{Dir: "d", SecurePort: 6443, APIServerAddress: "127.0.0.1", InitPKI: noop}, `--apiserver-address "127.0.0.1" is not HOST:PORT`},
		{"API server address of a name", Options{Dir: "d", SecurePort: 6443, APIServerAddress: "localhost:1", InitPKI: noop}, `--apiserver-address "localhost:1": "localhost" is not an IP address`},
		{"API server address of a bad port", Options{Dir: "d", SecurePort: 6443, APIServerAddress: "[::1]:x", InitPKI: noop}, `--apiserver-address "[::1]:x": "x" is not a port number (0 for a free one)`},
		{"API server address on the gateway's", Options{Dir: "d", SecurePort: 6443, BindAddress: "0.0.0.0", APIServerAddress: "127.0.0.1:6443", InitPKI: noop},
			`--apiserver-address "127.0.0.1:6443": the gateway listens there (--secure-port 6443)`},
		{"ok", Options{Dir: "d", SecurePort: 6443, Nodes: 3, APIServerAddress: "[::1]:0", InitPKI: noop}, ""},
		{"ok on the gateway's port of another address", Options{Dir: "d", SecurePort: 6443, BindAddress: "127.0.0.1", APIServerAddress: "127.0.0.2:6443", InitPKI: noop}, ""},
		{"ok with node bootstrap", Options{Dir: "d", SecurePort: 6443, Nodes: 3, NodeBootstrap: true, SigningDuration: time.Hour, InitPKI: noop}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && err.Error() != tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestStartRefusesABadDir(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	if err := os.WriteFile(filepath.Join(parent, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{Dir: filepath.Join(parent, "file", "cluster"), SecurePort: freePort(t), InitPKI: initPKI})
	if err == nil || !strings.Contains(err.Error(), filepath.Join("file", "cluster", "pki")) {
		t.Fatalf("got %v, want an error naming the pki directory", err)
	}
}

// TestGatewayInProcessIdentity runs `kubegate up` and checks the identity
// the API server sees through the gateway's in-process transport: the
// client certificate's user, never a client-supplied X-Remote-User; and
// that a certificate outside the allowed names cannot assert identities.
func TestGatewayInProcessIdentity(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cluster")
	ctx, cancel := context.WithCancel(context.Background())
	c, err := Start(ctx, Options{Dir: dir, SecurePort: freePort(t), InitPKI: initPKI, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 10 * time.Second
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("X-Remote-User", "mallory")
			r.Header.Set("X-Remote-Group", "system:masters")
			return rt.RoundTrip(r)
		})
	}
	whoami := func(t *testing.T, cfg *rest.Config) (*authenticationv1.SelfSubjectReview, error) {
		t.Helper()
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	}
	t.Run("the certificate's user, not a client-supplied header", func(t *testing.T) {
		res, err := whoami(t, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if u := res.Status.UserInfo; u.Username != "kubernetes-admin" || contains(u.Groups, "system:masters") {
			t.Errorf("got %s %v, want kubernetes-admin without system:masters", u.Username, u.Groups)
		}
	})

	t.Run("a front-proxy certificate outside the allowed names", func(t *testing.T) {
		pki := filepath.Join(dir, "pki")
		pair, err := tls.LoadX509KeyPair(filepath.Join(pki, "front-proxy-ca.crt"), filepath.Join(pki, "front-proxy-ca.key"))
		if err != nil {
			t.Fatal(err)
		}
		ca := &testpki.Cert{Cert: pair.Leaf, Key: pair.PrivateKey.(crypto.Signer)}
		certFile, keyFile := ca.Issue(t, testpki.Options{CN: "mallory"}).WriteFiles(t, t.TempDir(), "mallory")
		kp, err := serving.LoadKeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		rt := c.APIServer.InProcessTransport(kp, nil)
		req, _ := http.NewRequest(http.MethodGet, c.APIServer.URL()+"/api/v1/namespaces", nil)
		req.Header.Set("X-Remote-User", "kubernetes-admin")
		req.Header.Set("X-Remote-Group", "system:masters")
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("got %d, want 401", resp.StatusCode)
		}
	})
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAPIServerAddressAndAnonymousHealth_A5 runs up with the API server on
// a port chosen here, and checks that it listens there, and that the
// gateway answers a request without credentials on the health and version
// paths (RBAC's system:public-info-viewer decides: a sub-path it does not
// list is 403) and refuses it elsewhere with 401 (docs/kubernetes-behaviour.md,
// A.5).
func TestAPIServerAddressAndAnonymousHealth_A5(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cluster")
	apiPort, port := freePort(t), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	c, err := Start(ctx, Options{Dir: dir, SecurePort: port, APIServerAddress: fmt.Sprintf("127.0.0.1:%d", apiPort), InitPKI: initPKI, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	if got, want := c.APIServer.Listener.Addr().String(), fmt.Sprintf("127.0.0.1:%d", apiPort); got != want {
		t.Errorf("the API server listens on %s, want %s", got, want)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // #nosec G402 -- a test of the status codes only
	get := func(path string) (int, string) {
		t.Helper()
		res, err := client.Get(c.Server + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	testwait.For(t, 30*time.Second, "/readyz without credentials", func() (bool, string) {
		code, body := get("/readyz")
		return code == http.StatusOK && body == "ok", fmt.Sprintf("%d %q", code, body)
	})
	for path, want := range map[string]int{"/livez": 200, "/healthz": 200, "/version": 200, "/version/": 200, "/readyz/etcd": 403, "/api": 401, "/apis": 401, "/metrics": 401} {
		if code, body := get(path); code != want {
			t.Errorf("GET %s without credentials: %d %q, want %d", path, code, body, want)
		}
	}
}
