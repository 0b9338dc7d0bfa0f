package up

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/authn/bootstrap"
	"github.com/kubegate/kubegate/controllers/persistentvolume"
	"github.com/kubegate/kubegate/kubeconfig"
)

// NodeBootstrapGroup is the group of the bootstrap tokens kubeadm makes
// for joining nodes, and of the one up makes for its nodes (H.5).
const NodeBootstrapGroup = "system:bootstrappers:kubeadm:default-node-token"

// BootstrapKubeconfig is the file, in the cluster directory, holding the
// bootstrap token the simulated nodes start from with NodeBootstrap:
// kubeadm's name for the kubelet's bootstrap kubeconfig.
const BootstrapKubeconfig = "bootstrap-kubelet.conf"

// bootstrapTokenTTL is how long up's node bootstrap token works: a day,
// kubeadm's default token TTL; each run makes a new one.
const bootstrapTokenTTL = 24 * time.Hour

// NodeBindings are the ClusterRoleBindings up makes so that nodes can
// join with a bootstrap token and keep their client certificates renewed
// (H.5). The first three are kubeadm init's: bootstrap tokens of
// NodeBootstrapGroup may create CSRs and have node client requests
// auto-approved (nodeclient), and nodes may have their renewals
// auto-approved (selfnodeclient). The fourth is kubegate's own: in kube
// the Node authorizer lets every member of system:nodes create and watch
// CSRs, and kubegate has no Node authorizer, so system:nodes is bound to
// system:node-bootstrapper, which allows just that.
func NodeBindings() []*rbacv1.ClusterRoleBinding {
	binding := func(name, role, group string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}}}
	}
	return []*rbacv1.ClusterRoleBinding{
		binding("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", NodeBootstrapGroup),
		binding("kubeadm:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", NodeBootstrapGroup),
		binding("kubeadm:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"),
		binding("kubegate:node-certificate-requests", "system:node-bootstrapper", "system:nodes"),
	}
}

// ensureNodeBindings creates those of NodeBindings that are
// missing; one that exists, perhaps changed by an administrator, is left
// as it is.
func ensureNodeBindings(ctx context.Context, client kubernetes.Interface) error {
	for _, b := range NodeBindings() {
		_, err := client.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create clusterrolebinding %s: %w", b.Name, err)
		}
	}
	return nil
}

// writeBootstrapKubeconfig creates a bootstrap token of
// NodeBootstrapGroup, valid for bootstrapTokenTTL, and writes
// DIR/BootstrapKubeconfig with it, the gateway's URL and the cluster CA.
func (c *Cluster) writeBootstrapKubeconfig(ctx context.Context, client kubernetes.Interface) error {
	id, secret, err := bootstrap.GenerateToken()
	if err != nil {
		return err
	}
	spec := bootstrap.TokenSpec{ID: id, Secret: secret, Description: "kubegate up: the simulated nodes' TLS bootstrap",
		Expires: time.Now().Add(bootstrapTokenTTL), Usages: bootstrap.Usages, Groups: []string{NodeBootstrapGroup}}
	obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: bootstrap.SecretName(id), Namespace: bootstrap.Namespace},
		Type: corev1.SecretType(bootstrap.SecretType), Data: spec.Data()}
	if _, err := client.CoreV1().Secrets(bootstrap.Namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create bootstrap token secret %s/%s: %w", bootstrap.Namespace, obj.Name, err)
	}
	caPEM, err := os.ReadFile(filepath.Join(c.Dir, "pki", "ca.crt"))
	if err != nil {
		return err
	}
	cfg, err := kubeconfig.Build(kubeconfig.Options{Server: c.Server, CAPEM: caPEM, UserName: "tls-bootstrap-token-user",
		Token: id + "." + secret})
	if err != nil {
		return err
	}
	return kubeconfig.Write(filepath.Join(c.Dir, BootstrapKubeconfig), cfg, true)
}

// prepareNodes makes the node bindings, the default StorageClass when the
// volume binder, its provisioner, runs, and, with NodeBootstrap, the
// nodes' bootstrap kubeconfig, retrying until the API answers.
func (c *Cluster) prepareNodes(ctx context.Context) error {
	client, err := clientFromKubeconfig(filepath.Join(c.Dir, "admin.conf"), -1, 0)
	if err != nil {
		return err
	}
	provisions, err := c.runs(persistentvolume.Descriptor.Name)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if last = ensureNodeBindings(ctx, client); last != nil {
			return false, nil
		}
		if provisions {
			if last = ensureDefaultStorageClass(ctx, client); last != nil {
				return false, nil
			}
		}
		if c.NodeBootstrap {
			if last = c.writeBootstrapKubeconfig(ctx, client); last != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if ctx.Err() != nil {
		return nil // stopping before the API answered
	}
	if err != nil && last != nil {
		return fmt.Errorf("%w (last: %w)", err, last)
	}
	return err
}
