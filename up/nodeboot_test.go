package up

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/kubeconfig"
)

// kubegate up makes kubeadm init's node bindings (and its own for CSRs
// by nodes), and with NodeBootstrap
// a bootstrap token in a 0600 bootstrap kubeconfig from which every
// simulated node gets its client certificate through the CSR API before
// it registers (docs/kubernetes-behaviour.md, H.5).
func TestUpMakesNodeBindingsAndBootstrapsNodes_H5(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cluster")
	cs, _ := clusterWith(t, Options{Dir: dir, SecurePort: freePort(t), Nodes: 2, NodeBootstrap: true})
	ctx := context.Background()

	for _, want := range NodeBindings() {
		testwait.For(t, 30*time.Second, "clusterrolebinding "+want.Name, func() (bool, string) {
			got, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return got.RoleRef == want.RoleRef && slices.Equal(got.Subjects, want.Subjects), got.String()
		})
	}

	conf := filepath.Join(dir, BootstrapKubeconfig)
	testwait.For(t, 30*time.Second, "the nodes registered", func() (bool, string) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(nodes.Items) == 2, nodes.String()
	})
	info, err := os.Stat(conf)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", conf, info.Mode().Perm())
	}
	cfg, err := kubeconfig.Load(conf)
	if err != nil {
		t.Fatal(err)
	}
	var token string
	for _, u := range cfg.AuthInfos {
		token = u.Token
	}
	id, _, ok := strings.Cut(token, ".")
	if !ok {
		t.Fatalf("%s holds no bootstrap token", conf)
	}
	csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var issued []string
	for _, c := range csrs.Items {
		if c.Spec.Username == "system:bootstrap:"+id && c.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName && len(c.Status.Certificate) > 0 {
			issued = append(issued, c.Name)
		}
	}
	if len(issued) != 2 {
		t.Errorf("issued kubelet client requests by system:bootstrap:%s: %v, want one per node", id, issued)
	}
}
