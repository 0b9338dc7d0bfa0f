package admission

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry/core"
	"github.com/kubegate/kubegate/store"
)

// PersistentVolumeClaimResize is kube-apiserver's plugin of that name
// (D.17), a validating one: a claim's storage request may grow only once
// it is bound, and only when the claim keeps a class that allows volume
// expansion (403).
func PersistentVolumeClaimResize(st store.Store) apiserver.Admission { return claimResize{st} }

type claimResize struct{ st store.Store }

func (claimResize) Admit(context.Context, *apiserver.AdmissionAttributes) error { return nil }

func (p claimResize) Validate(ctx context.Context, a *apiserver.AdmissionAttributes) error {
	if a.Operation != apiserver.Update || a.Resource != claimsGVR || a.Subresource != "" {
		return nil
	}
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	old, oldOK := a.OldObject.(*corev1.PersistentVolumeClaim)
	if !ok || !oldOK {
		return nil
	}
	size, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.Cmp(oldSize) <= 0 {
		return nil
	}
	gr := claimsGVR.GroupResource()
	if old.Status.Phase != corev1.ClaimBound {
		//lint:ignore ST1005 kube's message, capital and all
		return apierrors.NewForbidden(gr, a.Name, errors.New("Only bound persistent volume claims can be expanded"))
	}
	if !p.expandable(ctx, core.ClaimClass(pvc), core.ClaimClass(old)) {
		return apierrors.NewForbidden(gr, a.Name, errors.New("only dynamically provisioned pvc can be resized and "+
			"the storageclass that provisions the pvc must support resize"))
	}
	return nil
}

// expandable: the claim keeps its class, which exists and allows volume
// expansion.
func (p claimResize) expandable(ctx context.Context, class, oldClass string) bool {
	if class == "" || class != oldClass {
		return false
	}
	sc := &storagev1.StorageClass{}
	if err := getStored(ctx, p.st, apiserver.Key(storageClassesGVR, "", class), sc); err != nil {
		return false
	}
	return sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
}
