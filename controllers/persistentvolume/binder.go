package persistentvolume

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/kubegate/kubegate/controllers"
)

// Event reasons, kube's.
const (
	reasonFailedBinding         = "FailedBinding"
	reasonVolumeMismatch        = "VolumeMismatch"
	reasonWaitForFirstConsumer  = "WaitForFirstConsumer"
	reasonWaitForPodScheduled   = "WaitForPodScheduled"
	reasonExternalProvisioning  = "ExternalProvisioning"
	reasonProvisioningFailed    = "ProvisioningFailed"
	reasonProvisioningSucceeded = "ProvisioningSucceeded"
	reasonVolumeFailedDelete    = "VolumeFailedDelete"
	reasonClaimLost             = "ClaimLost"
	reasonClaimMisbound         = "ClaimMisbound"
)

// The default class annotations, kube's.
const (
	annDefaultClass     = "storageclass.kubernetes.io/is-default-class"
	annBetaDefaultClass = "storageclass.beta.kubernetes.io/is-default-class"
)

func (pc *Controller) syncClaimKey(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	claim, err := pc.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBindCompleted) {
		return pc.syncUnboundClaim(ctx, claim)
	}
	return pc.syncBoundClaim(ctx, claim)
}

// syncUnboundClaim binds a claim that has not completed binding, or
// provisions for it, or says why it waits (G.20).
func (pc *Controller) syncUnboundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if claim.Spec.VolumeName != "" {
		return pc.syncPreboundClaim(ctx, claim)
	}
	delay, err := storagehelpers.IsDelayBindingMode(claim, pc.classes)
	if err != nil {
		return err
	}
	pv, err := pc.findBestMatch(claim, delay)
	if err != nil {
		return fmt.Errorf("error finding PV for claim %q: %w", cache.NewObjectName(claim.Namespace, claim.Name), err)
	}
	if pv != nil {
		return pc.bind(ctx, pv, claim)
	}
	if updated, err := pc.assignDefaultClass(ctx, claim); err != nil || updated {
		return err
	}
	switch {
	case delay && !storagehelpers.IsDelayBindingProvisioning(claim):
		pc.waitingForConsumer(claim)
	case storagehelpers.GetPersistentVolumeClaimClass(claim) != "":
		return pc.provisionClaim(ctx, claim)
	default:
		pc.events.Event(claim, corev1.EventTypeNormal, reasonFailedBinding, "no persistent volumes available for this claim and no storage class is set")
	}
	_, err = pc.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
	return err
}

// syncPreboundClaim binds a claim to the volume its spec.volumeName
// names, if it may.
func (pc *Controller) syncPreboundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	pv, err := pc.volumes.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		_, err = pc.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
		return err
	}
	if err != nil {
		return err
	}
	switch {
	case pv.Spec.ClaimRef == nil:
		if err := checkVolumeSatisfiesClaim(pv, claim); err != nil {
			pc.events.Event(claim, corev1.EventTypeWarning, reasonVolumeMismatch, fmt.Sprintf("Cannot bind to requested volume %q: %s", pv.Name, err))
			_, err = pc.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
			return err
		}
		return pc.bind(ctx, pv, claim)
	case storagehelpers.IsVolumeBoundToClaim(pv, claim):
		return pc.bind(ctx, pv, claim)
	default:
		pc.events.Event(claim, corev1.EventTypeWarning, reasonFailedBinding, fmt.Sprintf("volume %q already bound to a different claim.", pv.Name))
		if metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBoundByController) {
			return fmt.Errorf("invalid binding of claim %q to volume %q: volume already claimed by %q",
				cache.NewObjectName(claim.Namespace, claim.Name).String(), pv.Name, cache.NewObjectName(pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name).String())
		}
		_, err = pc.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
		return err
	}
}

// syncBoundClaim keeps a claim that completed binding Bound, or Lost
// when its volume went away or went to another claim.
func (pc *Controller) syncBoundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if claim.Spec.VolumeName == "" {
		return pc.claimLost(ctx, claim, reasonClaimLost, "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
	}
	pv, err := pc.volumes.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return pc.claimLost(ctx, claim, reasonClaimLost, "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
	}
	if err != nil {
		return err
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == claim.UID {
		return pc.bind(ctx, pv, claim)
	}
	return pc.claimLost(ctx, claim, reasonClaimMisbound, "Two claims are bound to the same volume, this one is bound incorrectly")
}

func (pc *Controller) claimLost(ctx context.Context, claim *corev1.PersistentVolumeClaim, reason, msg string) error {
	if claim.Status.Phase == corev1.ClaimLost {
		return nil
	}
	updated, err := pc.updateClaimStatus(ctx, claim, corev1.ClaimLost, nil)
	if err != nil {
		return err
	}
	pc.events.Event(updated, corev1.EventTypeWarning, reason, msg)
	return nil
}

// waitingForConsumer says why a claim of a WaitForFirstConsumer class
// waits: for a pod using it to be made, or to be scheduled.
func (pc *Controller) waitingForConsumer(claim *corev1.PersistentVolumeClaim) {
	reason, msg := reasonWaitForFirstConsumer, "waiting for first consumer to be created before binding"
	pods, _ := controllers.PodsUsingClaim(pc.pods, claim.Namespace, claim.Name)
	var names []string
	for _, p := range pods {
		if !controllers.PodTerminated(p) && p.Spec.NodeName == "" {
			names = append(names, p.Name)
		}
	}
	switch len(names) {
	case 0:
	case 1:
		reason, msg = reasonWaitForPodScheduled, fmt.Sprintf("waiting for pod %s to be scheduled", names[0])
	default:
		reason, msg = reasonWaitForPodScheduled, fmt.Sprintf("waiting for pods %s to be scheduled", strings.Join(names, ","))
	}
	pc.events.Event(claim, corev1.EventTypeNormal, reason, msg)
}

// assignDefaultClass gives a claim that names no class at all the
// default StorageClass, as kube's binder does for claims made before
// there was one (retroactive default class assignment).
func (pc *Controller) assignDefaultClass(ctx context.Context, claim *corev1.PersistentVolumeClaim) (bool, error) {
	if storagehelpers.PersistentVolumeClaimHasClass(claim) {
		return false, nil
	}
	class, err := DefaultClass(pc.classes.List(labels.Everything()))
	if err != nil || class == nil {
		return false, err
	}
	c := claim.DeepCopy()
	c.Spec.StorageClassName = &class.Name
	if _, err := pc.client.CoreV1().PersistentVolumeClaims(c.Namespace).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		return false, fmt.Errorf("can't update PersistentVolumeClaim[%q]: %w", cache.NewObjectName(c.Namespace, c.Name), err)
	}
	return true, nil
}

// DefaultClass is the default StorageClass among classes: of those
// annotated as default, the newest, then the first by name; nil when none
// is.
func DefaultClass(classes []*storagev1.StorageClass, err error) (*storagev1.StorageClass, error) {
	if err != nil {
		return nil, err
	}
	var best *storagev1.StorageClass
	for _, c := range classes {
		if c.Annotations[annDefaultClass] != "true" && c.Annotations[annBetaDefaultClass] != "true" {
			continue
		}
		if best == nil {
			best = c
			continue
		}
		bt, ct := best.CreationTimestamp.UnixNano(), c.CreationTimestamp.UnixNano()
		if ct > bt || ct == bt && c.Name < best.Name {
			best = c
		}
	}
	return best, nil
}

// findBestMatch is the smallest volume that satisfies claim, looked for
// first among the volumes with the fewest access modes that hold the
// claim's, as kube's binder looks.
func (pc *Controller) findBestMatch(claim *corev1.PersistentVolumeClaim, delay bool) (*corev1.PersistentVolume, error) {
	all, err := pc.volumes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return FindBestMatch(claim, all, delay)
}

// FindBestMatch is the binder's choice of a volume for claim among
// volumes; with delay (a WaitForFirstConsumer class), only a volume
// already meant for the claim.
func FindBestMatch(claim *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, delay bool) (*corev1.PersistentVolume, error) {
	groups := map[string][]*corev1.PersistentVolume{}
	var keys []string
	for _, pv := range volumes {
		if !holdsModes(pv.Spec.AccessModes, claim.Spec.AccessModes) {
			continue
		}
		k := modesKey(pv.Spec.AccessModes)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], pv)
	}
	sort.Slice(keys, func(i, j int) bool {
		if li, lj := len(groups[keys[i]][0].Spec.AccessModes), len(groups[keys[j]][0].Spec.AccessModes); li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		// The list is sorted by name so that equal volumes are chosen
		// the same way every time.
		vs := groups[k]
		sort.Slice(vs, func(i, j int) bool { return vs[i].Name < vs[j].Name })
		pv, err := storagehelpers.FindMatchingVolume(claim, vs, nil, nil, delay, true)
		if err != nil || pv != nil {
			return pv, err
		}
	}
	return nil, nil
}

func holdsModes(have, want []corev1.PersistentVolumeAccessMode) bool {
	for _, m := range want {
		if !slices.Contains(have, m) {
			return false
		}
	}
	return true
}

func modesKey(modes []corev1.PersistentVolumeAccessMode) string {
	s := make([]string, 0, len(modes))
	for _, m := range modes {
		if !slices.Contains(s, string(m)) {
			s = append(s, string(m))
		}
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

// checkVolumeSatisfiesClaim is what a volume a claim names must offer it.
func checkVolumeSatisfiesClaim(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	want := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	have := pv.Spec.Capacity[corev1.ResourceStorage]
	if want.Cmp(have) > 0 {
		return fmt.Errorf("requested PV is too small")
	}
	if storagehelpers.GetPersistentVolumeClass(pv) != storagehelpers.GetPersistentVolumeClaimClass(claim) {
		return fmt.Errorf("storageClassName does not match")
	}
	if ptrString(claim.Spec.VolumeAttributesClassName) != ptrString(pv.Spec.VolumeAttributesClassName) {
		return fmt.Errorf("volumeAttributesClassName does not match")
	}
	if storagehelpers.CheckVolumeModeMismatches(&claim.Spec, &pv.Spec) {
		return fmt.Errorf("incompatible volumeMode")
	}
	if !storagehelpers.CheckAccessModes(claim, pv) {
		return fmt.Errorf("incompatible accessMode")
	}
	return nil
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// bind writes both halves of a binding, in kube's order: the volume's
// claimRef, its phase, the claim's volumeName and annotations, its
// status. A failed step is finished by the next sync.
func (pc *Controller) bind(ctx context.Context, pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	bound, dirty, err := storagehelpers.GetBindVolumeToClaim(pv, claim)
	if err != nil {
		return err
	}
	if dirty {
		if pv, err = pc.client.CoreV1().PersistentVolumes().Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if pv, err = pc.updateVolumePhase(ctx, pv, corev1.VolumeBound, ""); err != nil {
		return err
	}
	c := claim.DeepCopy()
	dirty = false
	if c.Spec.VolumeName != pv.Name {
		c.Spec.VolumeName = pv.Name
		if !metav1.HasAnnotation(c.ObjectMeta, storagehelpers.AnnBoundByController) {
			metav1.SetMetaDataAnnotation(&c.ObjectMeta, storagehelpers.AnnBoundByController, "yes")
		}
		dirty = true
	}
	if !metav1.HasAnnotation(c.ObjectMeta, storagehelpers.AnnBindCompleted) {
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, storagehelpers.AnnBindCompleted, "yes")
		dirty = true
	}
	if dirty {
		if c, err = pc.client.CoreV1().PersistentVolumeClaims(c.Namespace).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	_, err = pc.updateClaimStatus(ctx, c, corev1.ClaimBound, pv)
	return err
}

// updateClaimStatus sets a claim's phase and, from its volume, its access
// modes and capacity (the capacity only as the phase changes, so that an
// expansion in progress is not overtaken); without a volume both are
// cleared.
func (pc *Controller) updateClaimStatus(ctx context.Context, claim *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	c := claim.DeepCopy()
	c.Status.Phase = phase
	if pv == nil {
		c.Status.AccessModes, c.Status.Capacity, c.Status.CurrentVolumeAttributesClassName = nil, nil, nil
	} else {
		c.Status.AccessModes = pv.Spec.AccessModes
		if claim.Status.Phase != phase {
			have, ok := claim.Status.Capacity[corev1.ResourceStorage]
			if size := pv.Spec.Capacity[corev1.ResourceStorage]; !ok || size.Cmp(have) != 0 {
				c.Status.Capacity = pv.Spec.Capacity
			}
			if claim.Status.Phase == corev1.ClaimPending && phase == corev1.ClaimBound {
				c.Status.CurrentVolumeAttributesClassName = pv.Spec.VolumeAttributesClassName
			}
		}
	}
	if apiequality.Semantic.DeepEqual(c.Status, claim.Status) {
		return claim, nil
	}
	return pc.client.CoreV1().PersistentVolumeClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
}

func (pc *Controller) updateVolumePhase(ctx context.Context, pv *corev1.PersistentVolume, phase corev1.PersistentVolumePhase, msg string) (*corev1.PersistentVolume, error) {
	if pv.Status.Phase == phase {
		return pv, nil
	}
	v := pv.DeepCopy()
	v.Status.Phase, v.Status.Message = phase, msg
	return pc.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, v, metav1.UpdateOptions{})
}
