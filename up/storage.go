package up

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/controllers/persistentvolume"
)

// DefaultStorageClassName is the StorageClass `kubegate up` makes.
const DefaultStorageClassName = "standard"

// DefaultStorageClass is the default StorageClass `kubegate up` makes, as
// kind and minikube make theirs: the simulated provisioner's
// (persistentvolume.SimulatedProvisioner), volumes made once the
// scheduler has chosen a pod's node (WaitForFirstConsumer) and pinned to
// it, deleted with their claims, and expandable (G.20).
func DefaultStorageClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultStorageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:          persistentvolume.SimulatedProvisioner,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		AllowVolumeExpansion: ptr.To(true),
	}
}

// ensureDefaultStorageClass creates DefaultStorageClass if there is no
// class of its name; one that exists, perhaps changed or no longer the
// default, is left as it is.
func ensureDefaultStorageClass(ctx context.Context, client kubernetes.Interface) error {
	_, err := client.StorageV1().StorageClasses().Create(ctx, DefaultStorageClass(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create storageclass %s: %w", DefaultStorageClassName, err)
	}
	return nil
}

// runs reports whether the controller named name is among those c runs.
func (c *Cluster) runs(name string) (bool, error) {
	selected, err := manager.Select(c.Controllers)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(selected, func(d controllers.Descriptor) bool { return d.Name == name }), nil
}
