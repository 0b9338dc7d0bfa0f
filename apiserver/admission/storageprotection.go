package admission

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubegate/kubegate/apiserver"
)

// The finalizers StorageObjectInUseProtection adds, which the volume
// protection controllers remove once nothing uses the object.
const (
	ClaimProtectionFinalizer      = "kubernetes.io/pvc-protection"
	VolumeProtectionFinalizer     = "kubernetes.io/pv-protection"
	AttributesProtectionFinalizer = "kubernetes.io/vac-protection"
)

// StorageObjectInUseProtection is kube-apiserver's plugin of that name
// (D.17): a new PersistentVolume, PersistentVolumeClaim or
// VolumeAttributesClass gets its protection finalizer, so that it is not
// removed while in use.
func StorageObjectInUseProtection() apiserver.Admission {
	return apiserver.AdmissionFunc(func(_ context.Context, a *apiserver.AdmissionAttributes) error {
		if a.Operation != apiserver.Create || a.Subresource != "" || a.Object == nil {
			return nil
		}
		var finalizer string
		switch a.Resource {
		case claimsGVR:
			finalizer = ClaimProtectionFinalizer
		case volumesGVR:
			finalizer = VolumeProtectionFinalizer
		case attributesGVR:
			finalizer = AttributesProtectionFinalizer
		default:
			return nil
		}
		acc, err := meta.Accessor(a.Object)
		if err != nil {
			return nil
		}
		if fs := acc.GetFinalizers(); !slices.Contains(fs, finalizer) {
			acc.SetFinalizers(append(fs, finalizer))
		}
		return nil
	})
}
