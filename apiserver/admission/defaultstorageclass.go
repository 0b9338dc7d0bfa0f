package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry/core"
	"github.com/kubegate/kubegate/apiserver/registry/storage"
	"github.com/kubegate/kubegate/store"
)

var (
	claimsGVR         = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	volumesGVR        = corev1.SchemeGroupVersion.WithResource("persistentvolumes")
	storageClassesGVR = storagev1.SchemeGroupVersion.WithResource("storageclasses")
	attributesGVR     = storagev1.SchemeGroupVersion.WithResource("volumeattributesclasses")
)

// DefaultStorageClass is kube-apiserver's plugin of that name (D.17): a
// new claim that names no class, neither in spec.storageClassName nor in
// the beta annotation, gets the default StorageClass, the newest of those
// marked so; with none it stays without.
func DefaultStorageClass(st store.Store) apiserver.Admission {
	return apiserver.AdmissionFunc(func(ctx context.Context, a *apiserver.AdmissionAttributes) error {
		if a.Operation != apiserver.Create || a.Resource != claimsGVR || a.Subresource != "" {
			return nil
		}
		pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
		if !ok || pvc.Spec.StorageClassName != nil {
			return nil
		}
		if _, ok := pvc.Annotations[core.BetaStorageClassAnnotation]; ok {
			return nil
		}
		classes, err := storageClasses(ctx, st)
		if storeFault(err) {
			return err
		}
		if err != nil {
			return apierrors.NewForbidden(claimsGVR.GroupResource(), a.Name, err)
		}
		if def := storage.DefaultClass(classes); def != nil {
			name := def.Name
			pvc.Spec.StorageClassName = &name
		}
		return nil
	})
}

// storageClasses reads every StorageClass.
func storageClasses(ctx context.Context, st store.Store) ([]*storagev1.StorageClass, error) {
	var classes []*storagev1.StorageClass
	opts := store.ListOptions{}
	for {
		page, err := st.List(ctx, apiserver.Key(storageClassesGVR, "", ""), opts)
		if err != nil {
			return nil, err
		}
		for _, kv := range page.KVs {
			sc := &storagev1.StorageClass{}
			if err := apiserver.UnmarshalStored(kv.Value, sc); err != nil {
				return nil, err
			}
			classes = append(classes, sc)
		}
		if !page.More || len(page.KVs) == 0 {
			return classes, nil
		}
		opts.Revision, opts.Continue = page.Revision, page.KVs[len(page.KVs)-1].Key
	}
}
