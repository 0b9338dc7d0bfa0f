package persistentvolume

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/reference"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// provisionClaim provisions for a claim of a class: the simulated
// provisioner's claims get their volume here, as kube's binder provisions
// with its in-tree plugins; any other provisioner's are annotated for it
// and left to it.
func (pc *Controller) provisionClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	class, err := pc.classes.Get(storagehelpers.GetPersistentVolumeClaimClass(claim))
	if err != nil {
		pc.events.Event(claim, corev1.EventTypeWarning, reasonProvisioningFailed, err.Error())
		return nil
	}
	switch {
	case class.Provisioner == SimulatedProvisioner:
		return pc.provisionSimulated(ctx, claim, class)
	case isKubePlugin(class.Provisioner):
		pc.events.Event(claim, corev1.EventTypeWarning, reasonProvisioningFailed, "no volume plugin matched name: "+class.Provisioner)
		return nil
	}
	claim, err = pc.setClaimProvisioner(ctx, claim, class.Provisioner)
	if err != nil {
		pc.events.Event(claim, corev1.EventTypeWarning, reasonProvisioningFailed, fmt.Sprintf("Error saving claim: %v", err))
		return err
	}
	pc.events.Event(claim, corev1.EventTypeNormal, reasonExternalProvisioning, fmt.Sprintf(
		"Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. "+
			"If volume creation is delayed, please verify that the provisioner is running and correctly registered.", class.Provisioner))
	return nil
}

// setClaimProvisioner annotates a claim with the provisioner that is to
// make its volume, under kube's name and its beta one.
func (pc *Controller) setClaimProvisioner(ctx context.Context, claim *corev1.PersistentVolumeClaim, provisioner string) (*corev1.PersistentVolumeClaim, error) {
	if claim.Annotations[storagehelpers.AnnStorageProvisioner] == provisioner {
		return claim, nil
	}
	c := claim.DeepCopy()
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, storagehelpers.AnnBetaStorageProvisioner, provisioner)
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, storagehelpers.AnnStorageProvisioner, provisioner)
	updated, err := pc.client.CoreV1().PersistentVolumeClaims(c.Namespace).Update(ctx, c, metav1.UpdateOptions{})
	if err != nil {
		return claim, err
	}
	return updated, nil
}

// ProvisionedVolumeName is the name of the volume provisioned for a
// claim, kube's: "pvc-" and the claim's UID.
func ProvisionedVolumeName(claim *corev1.PersistentVolumeClaim) string {
	return "pvc-" + string(claim.UID)
}

// provisionSimulated makes the simulated volume of a claim: the claim's
// size, access modes and volume mode, the class's reclaim policy and
// mount options, a hostPath under SimulatedVolumeDir, pinned to the
// selected node when the class waits for the first consumer, pre-bound
// to the claim. The binding follows at the claim's next sync.
func (pc *Controller) provisionSimulated(ctx context.Context, claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) error {
	if claim.Spec.DataSource != nil {
		msg := fmt.Sprintf("plugin %q is not a CSI plugin. Only CSI plugin can provision a claim with a datasource", SimulatedProvisioner)
		pc.events.Event(claim, corev1.EventTypeWarning, reasonProvisioningFailed, msg)
		return fmt.Errorf("%s", msg)
	}
	claim, err := pc.setClaimProvisioner(ctx, claim, class.Provisioner)
	if err != nil {
		return err
	}
	name := ProvisionedVolumeName(claim)
	if _, err := pc.volumes.Get(name); err == nil {
		return nil // made already; the claim's sync binds it
	}
	if _, err := pc.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{}); err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	var node *corev1.Node
	if nodeName, ok := claim.Annotations[storagehelpers.AnnSelectedNode]; ok {
		if node, err = pc.nodes.Get(nodeName); err != nil {
			pc.events.Event(claim, corev1.EventTypeWarning, reasonProvisioningFailed, fmt.Sprintf("Failed to get target node: %v", err))
			return err
		}
	}
	pv, err := SimulatedVolume(claim, class, node)
	if err != nil {
		return err
	}
	if _, err := pc.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		pc.events.Event(claim, corev1.EventTypeWarning, reasonProvisioningFailed,
			fmt.Sprintf("Error creating provisioned PV object for claim %s: %v. Deleting the volume.", cache.NewObjectName(claim.Namespace, claim.Name), err))
		return err
	}
	pc.events.Event(claim, corev1.EventTypeNormal, reasonProvisioningSucceeded,
		fmt.Sprintf("Successfully provisioned volume %s using %s", name, SimulatedProvisioner))
	return nil
}

// SimulatedVolume is the volume the simulated provisioner makes for
// claim of class, on node when one was selected.
func SimulatedVolume(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, node *corev1.Node) (*corev1.PersistentVolume, error) {
	ref, err := reference.GetReference(scheme.Scheme, claim)
	if err != nil {
		return nil, err
	}
	policy := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		policy = *class.ReclaimPolicy
	}
	name := ProvisionedVolumeName(claim)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			storagehelpers.AnnBoundByController:      "yes",
			storagehelpers.AnnDynamicallyProvisioned: SimulatedProvisioner,
		}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   claim.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              storagehelpers.GetPersistentVolumeClaimClass(claim),
			MountOptions:                  class.MountOptions,
			VolumeMode:                    claim.Spec.VolumeMode,
			ClaimRef:                      ref,
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: SimulatedVolumeDir + name, Type: new(corev1.HostPathDirectoryOrCreate)}},
		},
	}
	if policy == corev1.PersistentVolumeReclaimDelete {
		pv.Finalizers = []string{storagehelpers.PVDeletionInTreeProtectionFinalizer}
	}
	if node != nil {
		host := node.Labels[corev1.LabelHostname]
		if host == "" {
			host = node.Name
		}
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{host}}},
		}}}}
	}
	return pv, nil
}
