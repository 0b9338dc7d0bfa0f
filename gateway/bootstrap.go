package gateway

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/kubegate/kubegate/authn/bootstrap"
)

// BootstrapSecrets serves the bootstrap token authenticator from a watch of
// the Secrets in kube-system, read through the upstream with the gateway's
// own identity, as kube-apiserver serves it from its informer (A.10): a
// token, good or bad, never causes a request to the upstream. Until the
// first list has arrived every token is unknown.
type BootstrapSecrets struct {
	lister corelisters.SecretNamespaceLister
}

var _ bootstrap.Getter = (*BootstrapSecrets)(nil)

// NewBootstrapSecrets starts watching the upstream's kube-system Secrets
// through client, the gateway's clientset (NewUpstreamClient), until ctx
// is done. The gateway's identity needs list and watch on Secrets in
// kube-system.
func NewBootstrapSecrets(ctx context.Context, client kubernetes.Interface) *BootstrapSecrets {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(metav1.NamespaceSystem),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = "type=" + string(corev1.SecretTypeBootstrapToken)
		}))
	secrets := f.Core().V1().Secrets()
	b := &BootstrapSecrets{lister: secrets.Lister().Secrets(metav1.NamespaceSystem)}
	secrets.Informer() // registered before Start
	f.Start(ctx.Done())
	return b
}

// GetSecretData returns a bootstrap token Secret of kube-system from the
// watch.
func (b *BootstrapSecrets) GetSecretData(_ context.Context, ns, name string) (bootstrap.Secret, error) {
	if ns != metav1.NamespaceSystem {
		return bootstrap.Secret{}, fmt.Errorf("secrets %q: %w", name, bootstrap.ErrNotFound)
	}
	s, err := b.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return bootstrap.Secret{}, fmt.Errorf("secrets %q: %w", name, bootstrap.ErrNotFound)
	}
	if err != nil {
		return bootstrap.Secret{}, err
	}
	out := bootstrap.Secret{Namespace: s.Namespace, Name: s.Name, Type: string(s.Type), Data: s.Data}
	if s.DeletionTimestamp != nil {
		out.DeletionTimestamp = s.DeletionTimestamp.Time
	}
	return out, nil
}
