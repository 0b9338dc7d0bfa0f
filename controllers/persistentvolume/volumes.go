package persistentvolume

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

func (pc *Controller) syncVolumeKey(ctx context.Context, name string) error {
	pv, err := pc.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return pc.syncVolume(ctx, pv)
}

// syncVolume keeps a volume's phase: Available while no claim holds it,
// Bound to its claim, Released once the claim is gone, and then
// reclaimed (G.20).
func (pc *Controller) syncVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == "" {
		_, err := pc.updateVolumePhase(ctx, pv, corev1.VolumeAvailable, "")
		return err
	}
	claim, err := pc.claimOf(ctx, pv)
	if err != nil {
		return err
	}
	switch {
	case claim == nil:
		return pc.release(ctx, pv)
	case claim.Spec.VolumeName == "":
		if storagehelpers.CheckVolumeModeMismatches(&claim.Spec, &pv.Spec) {
			pc.events.Event(pv, corev1.EventTypeWarning, reasonVolumeMismatch,
				fmt.Sprintf("Cannot bind PersistentVolume to requested PersistentVolumeClaim %q due to incompatible volumeMode.", claim.Name))
			pc.events.Event(claim, corev1.EventTypeWarning, reasonVolumeMismatch,
				fmt.Sprintf("Cannot bind PersistentVolume %q to requested PersistentVolumeClaim due to incompatible volumeMode.", pv.Name))
			return nil
		}
		// The claim's sync finishes the binding.
		pc.claimQueue.Add(cache.NewObjectName(claim.Namespace, claim.Name).String())
		return nil
	case claim.Spec.VolumeName == pv.Name:
		_, err := pc.updateVolumePhase(ctx, pv, corev1.VolumeBound, "")
		return err
	case metav1.HasAnnotation(pv.ObjectMeta, storagehelpers.AnnDynamicallyProvisioned) && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete:
		// Provisioned for a claim that went to another volume.
		return pc.release(ctx, pv)
	default:
		return pc.unbind(ctx, pv)
	}
}

// claimOf is the claim a volume's claimRef names, with its UID; nil when
// there is none. A claim the cache does not have is asked for, as the
// cache may not have seen it yet.
func (pc *Controller) claimOf(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	ref := pv.Spec.ClaimRef
	claim, err := pc.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	released := pv.Status.Phase == corev1.VolumeReleased || pv.Status.Phase == corev1.VolumeFailed
	if (claim == nil && !released) || (claim != nil && claim.UID != ref.UID) {
		claim, err = pc.client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
	if claim == nil || claim.UID != ref.UID {
		return nil, nil
	}
	return claim, nil
}

// release marks a volume whose claim is gone Released and reclaims it.
func (pc *Controller) release(ctx context.Context, pv *corev1.PersistentVolume) error {
	if pv.Status.Phase != corev1.VolumeReleased && pv.Status.Phase != corev1.VolumeFailed {
		var err error
		if pv, err = pc.updateVolumePhase(ctx, pv, corev1.VolumeReleased, ""); err != nil {
			return err
		}
	}
	return pc.reclaim(ctx, pv)
}

// unbind gives back a volume whose claim is bound elsewhere: one the
// binder bound loses its claimRef, one bound by its creator keeps the
// claim's name without the UID.
func (pc *Controller) unbind(ctx context.Context, pv *corev1.PersistentVolume) error {
	v := pv.DeepCopy()
	if metav1.HasAnnotation(pv.ObjectMeta, storagehelpers.AnnBoundByController) {
		v.Spec.ClaimRef = nil
		delete(v.Annotations, storagehelpers.AnnBoundByController)
		if len(v.Annotations) == 0 {
			v.Annotations = nil
		}
	} else {
		v.Spec.ClaimRef.UID = ""
	}
	v, err := pc.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	_, err = pc.updateVolumePhase(ctx, v, corev1.VolumeAvailable, "")
	return err
}

// reclaim does what a Released volume's reclaim policy says: nothing for
// Retain; for Delete, the simulated provisioner's volumes are deleted,
// another provisioner's left to it, and any other volume fails as kube's
// fails a volume no plugin of its own can delete.
func (pc *Controller) reclaim(ctx context.Context, pv *corev1.PersistentVolume) error {
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimRetain:
		return nil
	case corev1.PersistentVolumeReclaimDelete:
		return pc.deleteVolume(ctx, pv)
	case corev1.PersistentVolumeReclaimRecycle:
		return pc.failVolume(ctx, pv, "VolumeFailedRecycle", "No recycler plugin found for the volume!")
	default:
		return pc.failVolume(ctx, pv, "VolumeUnknownReclaimPolicy", "Volume has unrecognized PersistentVolumeReclaimPolicy")
	}
}

func (pc *Controller) failVolume(ctx context.Context, pv *corev1.PersistentVolume, reason, msg string) error {
	if pv.Status.Phase == corev1.VolumeFailed {
		return nil
	}
	updated, err := pc.updateVolumePhase(ctx, pv, corev1.VolumeFailed, msg)
	if err != nil {
		return err
	}
	pc.events.Event(updated, corev1.EventTypeWarning, reason, msg)
	return nil
}

// deleteVolume deletes a Released volume of the simulated provisioner:
// after reading it again to be sure it is still released, it drops the
// binder's finalizer and deletes the object.
func (pc *Controller) deleteVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	by := pv.Annotations[storagehelpers.AnnDynamicallyProvisioned]
	switch {
	case by == SimulatedProvisioner:
	case by != "" && !isKubePlugin(by), pv.Spec.CSI != nil:
		return nil // its provisioner deletes it
	default:
		name := by
		if name == "" {
			return pc.failVolume(ctx, pv, reasonVolumeFailedDelete,
				fmt.Sprintf("error getting deleter volume plugin for volume %q: no deletable volume plugin matched", pv.Name))
		}
		return pc.failVolume(ctx, pv, reasonVolumeFailedDelete, "no volume plugin matched name: "+name)
	}
	fresh, err := pc.client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	if released, err := pc.isReleased(fresh); err != nil || !released {
		return err
	}
	if slices.Contains(fresh.Finalizers, storagehelpers.PVDeletionInTreeProtectionFinalizer) {
		v := fresh.DeepCopy()
		v.Finalizers = slices.DeleteFunc(v.Finalizers, func(f string) bool { return f == storagehelpers.PVDeletionInTreeProtectionFinalizer })
		if _, err := pc.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("persistent volume controller can't update finalizer: %w", err)
		}
	}
	err = pc.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// isReleased reports whether a volume's claim is gone, or bound to
// another volume.
func (pc *Controller) isReleased(pv *corev1.PersistentVolume) (bool, error) {
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.UID == "" {
		return false, nil
	}
	claim, err := pc.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if claim.UID != ref.UID {
		return true, nil
	}
	return claim.Spec.VolumeName != "" && claim.Spec.VolumeName != pv.Name, nil
}

// isKubePlugin reports whether a provisioner's name is one of kube's
// in-tree plugins, which kubegate has none of.
func isKubePlugin(name string) bool { return strings.HasPrefix(name, "kubernetes.io/") }
