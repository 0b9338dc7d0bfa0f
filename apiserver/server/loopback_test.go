package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/internal/testpki"
)

// startServer serves a server on a data directory with RBAC and no
// authenticator but anonymous, until the test ends.
func startServer(t *testing.T) *Server {
	t.Helper()
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	serving := ca.Issue(t, testpki.Options{CN: "apiserver", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	o := Defaults()
	o.BindAddress, o.SecurePort, o.DataDir = "127.0.0.1", 0, dir
	o.TLSCertFile, o.TLSKeyFile = serving.WriteFiles(t, dir, "apiserver")
	o.ClientCAFile, _ = ca.WriteFiles(t, dir, "ca")
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, o, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

func TestLoopbackClientIsTheAPIServer(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cs, err := kubernetes.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	ssr, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ui := ssr.Status.UserInfo
	if ui.Username != apiserver.LoopbackUserName || !slices.Contains(ui.Groups, authz.SystemMasters) || ui.UID == "" {
		t.Fatalf("loopback identity: got %+v", ui)
	}
	// It may do anything, as system:masters may.
	if _, err := cs.CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("list secrets as the loopback client: %v", err)
	}

	// Over the network, a request that claims that identity every way a
	// header can is anonymous.
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
		strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Remote-User", apiserver.LoopbackUserName)
	req.Header.Set("X-Remote-Group", authz.SystemMasters)
	req.Header.Set("Impersonate-User", apiserver.LoopbackUserName)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test of the server's answer, not of its certificate
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("network request claiming the loopback identity: got %d, want 403 (anonymous may not impersonate)", resp.StatusCode)
	}
}
