package authentication

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn/bootstrap"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/store"
)

// Getter is the serviceaccount.Getter and bootstrap.Getter of an API
// server: it reads service accounts, pods, secrets and nodes straight from
// the store, so a token stops working as soon as the object it names is
// deleted. It is no resource of the group; it is here because it serves
// token authentication, as the group does: it looks up what the
// service-account tokens that serviceaccounts/token issues are bound to.
type Getter struct {
	Store store.Store
}

var (
	_ serviceaccount.Getter = Getter{}
	_ bootstrap.Getter      = Getter{}
)

// get decodes the object stored for gvr/namespace/name into into.
func (g Getter) get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, into runtime.Object) error {
	kv, err := g.Store.Get(ctx, apiserver.Key(gvr, namespace, name))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%s %q: %w", gvr.Resource, name, serviceaccount.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if err := apiserver.UnmarshalStored(kv.Value, into); err != nil {
		return fmt.Errorf("decode %s %q: %w", gvr.Resource, name, err)
	}
	return nil
}

func object(m *metav1.ObjectMeta) serviceaccount.Object {
	o := serviceaccount.Object{UID: string(m.UID)}
	if m.DeletionTimestamp != nil {
		o.DeletionTimestamp = m.DeletionTimestamp.Time
	}
	return o
}

// GetServiceAccount implements serviceaccount.Getter.
func (g Getter) GetServiceAccount(ctx context.Context, namespace, name string) (serviceaccount.Object, error) {
	var sa corev1.ServiceAccount
	if err := g.get(ctx, serviceAccountsGVR, namespace, name, &sa); err != nil {
		return serviceaccount.Object{}, err
	}
	return object(&sa.ObjectMeta), nil
}

// GetPod implements serviceaccount.Getter.
func (g Getter) GetPod(ctx context.Context, namespace, name string) (serviceaccount.Object, error) {
	var pod corev1.Pod
	if err := g.get(ctx, podsGVR, namespace, name, &pod); err != nil {
		return serviceaccount.Object{}, err
	}
	return object(&pod.ObjectMeta), nil
}

// GetSecret implements serviceaccount.Getter.
func (g Getter) GetSecret(ctx context.Context, namespace, name string) (serviceaccount.Secret, error) {
	var s corev1.Secret
	if err := g.get(ctx, secretsGVR, namespace, name, &s); err != nil {
		return serviceaccount.Secret{}, err
	}
	return serviceaccount.Secret{Object: object(&s.ObjectMeta), Token: s.Data[corev1.ServiceAccountTokenKey], Labels: s.Labels}, nil
}

// GetSecretData implements bootstrap.Getter.
func (g Getter) GetSecretData(ctx context.Context, namespace, name string) (bootstrap.Secret, error) {
	var s corev1.Secret
	if err := g.get(ctx, secretsGVR, namespace, name, &s); errors.Is(err, serviceaccount.ErrNotFound) {
		return bootstrap.Secret{}, fmt.Errorf("secrets %q: %w", name, bootstrap.ErrNotFound)
	} else if err != nil {
		return bootstrap.Secret{}, err
	}
	return bootstrapSecret(&s), nil
}

// bootstrapSecret is s as bootstrap.Getter returns it.
func bootstrapSecret(s *corev1.Secret) bootstrap.Secret {
	b := bootstrap.Secret{Namespace: s.Namespace, Name: s.Name, Type: string(s.Type), Data: s.Data}
	if s.DeletionTimestamp != nil {
		b.DeletionTimestamp = s.DeletionTimestamp.Time
	}
	return b
}

// GetNode implements serviceaccount.Getter.
func (g Getter) GetNode(ctx context.Context, name string) (serviceaccount.Object, error) {
	var n corev1.Node
	if err := g.get(ctx, nodesGVR, "", name, &n); err != nil {
		return serviceaccount.Object{}, err
	}
	return object(&n.ObjectMeta), nil
}
