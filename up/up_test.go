package up

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/gateway"
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

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// cluster starts Run's cluster in dir and returns a client for admin.conf
// and a function that stops it and returns Serve's error.
func cluster(t *testing.T, dir string, port int) (*kubernetes.Clientset, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var status strings.Builder
	c, err := Start(ctx, Options{Dir: dir, SecurePort: port, InitPKI: initPKI, Status: &status,
		Logger: slog.New(slog.DiscardHandler)})
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
	t.Cleanup(func() { _ = stop() })
	return cs, stop
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
	if _, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, GatewayLookupRole, metav1.GetOptions{}); err != nil {
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
		{"ok", Options{Dir: "d", SecurePort: 6443, Nodes: 3, InitPKI: noop}, ""},
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

func TestAPIServerOptionsValidate(t *testing.T) {
	t.Parallel()
	base := func() APIServerOptions {
		o := APIServerDefaults()
		o.TLSCertFile, o.TLSKeyFile, o.DataDir = "c", "k", "d"
		return o
	}
	tests := []struct {
		name   string
		change func(*APIServerOptions)
		want   string
	}{
		{"defaults with a cert and a data dir", func(*APIServerOptions) {}, ""},
		{"etcd instead", func(o *APIServerOptions) { o.DataDir, o.EtcdServers = "", []string{"https://e:2379"} }, ""},
		{"etcd certs without etcd", func(o *APIServerOptions) { o.EtcdCAFile = "ca" }, "--etcd-cafile, --etcd-certfile and --etcd-keyfile need --etcd-servers"},
		{"etcd cert without key", func(o *APIServerOptions) {
			o.DataDir, o.EtcdServers, o.EtcdCertFile = "", []string{"https://e:2379"}, "c"
		}, "--etcd-certfile and --etcd-keyfile go together"},
		{"no authenticator", func(o *APIServerOptions) { o.AnonymousAuth = false }, "no authenticator configured"},
		{"keys without issuer", func(o *APIServerOptions) { o.SAIssuers, o.SASigningKeyFile = nil, "sa.key" }, "--service-account-issuer is required"},
		{"bad port", func(o *APIServerOptions) { o.SecurePort = 70000 }, "--secure-port 70000 is not a port number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			tt.change(&o)
			err := o.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestPolicyGrantsTheGatewayLookups(t *testing.T) {
	t.Parallel()
	p := Policy()
	var role *rbacv1.ClusterRole
	for _, r := range p.ClusterRoles {
		if r.Name == GatewayLookupRole {
			role = r
		}
	}
	var bound bool
	for _, b := range p.ClusterRoleBindings {
		if b.Name == GatewayLookupRole && b.RoleRef.Name == GatewayLookupRole && len(b.Subjects) == 1 && b.Subjects[0].Name == gateway.LookupUser {
			bound = true
		}
	}
	if role == nil || !bound {
		t.Fatalf("role %v, bound %v; want both", role, bound)
	}
	if got := strings.Join(role.Rules[0].Resources, ","); got != "serviceaccounts,secrets,pods,nodes" || strings.Join(role.Rules[0].Verbs, ",") != "get" {
		t.Fatalf("rules: got %+v", role.Rules)
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
