package admission

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/store"
)

// downStore fails every read as the etcd store fails when etcd does not
// answer: a *store.UnavailableError whose detail names a key.
type downStore struct{ store.Store }

func (downStore) List(context.Context, string, store.ListOptions) (store.ListResult, error) {
	return store.ListResult{}, &store.UnavailableError{Reason: "etcdserver: request timed out",
		Err: errors.New(`list "/registry/storageclasses/": dial tcp 10.0.0.9:2379: i/o timeout`)}
}

func (d downStore) Get(ctx context.Context, key string) (store.KV, error) {
	_, err := d.List(ctx, key, store.ListOptions{})
	return store.KV{}, &store.KeyError{Op: "get", Key: key, Err: err}
}

// A plugin that reads the store passes a failure of the store on as it
// is, for the REST layer to answer as kube-apiserver answers an etcd
// fault, without the key or etcd's address, instead of wrapping it in a
// refusal of its own whose message carries them (J.4).
func TestPluginsPassStoreFailuresOn_J4(t *testing.T) {
	for name, c := range map[string]struct {
		plugin apiserver.Admission
		gvr    string
		obj    runtime.Object
	}{
		"DefaultStorageClass": {DefaultStorageClass(downStore{}), "persistentvolumeclaims", &corev1.PersistentVolumeClaim{}},
		"DefaultIngressClass": {DefaultIngressClass(downStore{}), "ingresses", &networkingv1.Ingress{}},
	} {
		a := &apiserver.AdmissionAttributes{Operation: apiserver.Create, Object: c.obj}
		if c.gvr == "ingresses" {
			a.Resource = networkingv1.SchemeGroupVersion.WithResource("ingresses")
		} else {
			a.Resource = claimsGVR
		}
		err := c.plugin.Admit(context.Background(), a)
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s: %v, want the store's failure passed on", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "forbidden") {
			t.Errorf("%s: %v, a store failure answered as a refusal", name, err)
		}
	}
}
