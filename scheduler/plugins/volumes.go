package plugins

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/storage/ephemeral"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// The volume plugins' names.
const (
	NameVolumeBinding = "VolumeBinding"
	NameVolumeZone    = "VolumeZone"
)

// Reasons the volume filters give, word for word kube-scheduler's.
const (
	ReasonVolumeNodeConflict   = "node(s) had volume node affinity conflict"
	ReasonVolumeBindConflict   = "node(s) didn't find available persistent volumes to bind"
	ReasonVolumeZoneConflict   = "node(s) had no available volume zone"
	reasonUnboundImmediatePVCs = "pod has unbound immediate PersistentVolumeClaims"
)

// VolumeSources is what the volume plugins read of the cluster: claims,
// volumes and classes, from informer caches (scheduler.NewVolumeSources)
// or fixed lists (Objects).
type VolumeSources interface {
	Claim(namespace, name string) (*v1.PersistentVolumeClaim, bool)
	Volume(name string) (*v1.PersistentVolume, bool)
	Volumes() []*v1.PersistentVolume
	Class(name string) (*storagev1.StorageClass, bool)
}

// DefaultBindTimeout is how long PreBind waits for a pod's claims to be
// bound, kube-scheduler's VolumeBinding bindTimeoutSeconds.
const DefaultBindTimeout = 600 * time.Second

// VolumeBinding is kube-scheduler's VolumeBinding plugin, in its simple
// form (E.7): a pod's claims must exist and not be being deleted; a bound
// claim's volume must allow the node by its node affinity; an unbound
// claim of a WaitForFirstConsumer class needs an Available volume that
// fits it on the node, or a class that provisions. At PreBind it binds
// the volumes it chose and annotates the other claims with the node
// (volume.kubernetes.io/selected-node) for the binder to provision, then
// waits until every claim is bound. Without Sources it does nothing.
type VolumeBinding struct {
	Sources VolumeSources
	// Client writes the volumes' and claims' bindings; nil: PreBind
	// writes nothing and only waits.
	Client kubernetes.Interface
	// Timeout bounds PreBind's wait; zero means DefaultBindTimeout.
	Timeout time.Duration
	// Poll is how often PreBind looks at the claims; zero means 100 ms.
	Poll time.Duration
}

var (
	_ framework.PreFilterPlugin = (*VolumeBinding)(nil)
	_ framework.FilterPlugin    = (*VolumeBinding)(nil)
	_ framework.PreBindPlugin   = (*VolumeBinding)(nil)
)

// Name implements framework.Plugin.
func (*VolumeBinding) Name() string { return NameVolumeBinding }

const volumeBindingStateKey = "PreFilter" + NameVolumeBinding

// podClaims is what PreFilter found of a pod's claims.
type podClaims struct {
	bound   []*v1.PersistentVolumeClaim
	delayed []*v1.PersistentVolumeClaim // unbound, WaitForFirstConsumer
}

// claimNames are the claims a pod's volumes name, with whether each is a
// generic ephemeral volume's.
func claimNames(pod *v1.Pod) (names []string, eph []bool) {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			names, eph = append(names, v.PersistentVolumeClaim.ClaimName), append(eph, false)
		case v.Ephemeral != nil:
			names, eph = append(names, ephemeral.VolumeClaimName(pod, v)), append(eph, true)
		}
	}
	return names, eph
}

// readClaims sorts a pod's claims into bound and waiting, or says why
// the pod cannot be scheduled anywhere.
func readClaims(src VolumeSources, pod *v1.Pod) (*podClaims, *framework.Status) {
	names, eph := claimNames(pod)
	pc := &podClaims{}
	for i, name := range names {
		claim, ok := src.Claim(pod.Namespace, name)
		if !ok {
			if eph[i] {
				return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable,
					fmt.Sprintf("waiting for ephemeral volume controller to create the persistentvolumeclaim %q", name))
			}
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q not found", name))
		}
		if claim.DeletionTimestamp != nil {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name))
		}
		if eph[i] && !metav1.IsControlledBy(claim, pod) {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable,
				fmt.Sprintf("PVC %s/%s was not created for pod %s/%s (pod is not owner)", claim.Namespace, claim.Name, pod.Namespace, pod.Name))
		}
		if claim.Spec.VolumeName != "" {
			pc.bound = append(pc.bound, claim)
			continue
		}
		className := storagehelpers.GetPersistentVolumeClaimClass(claim)
		class, ok := src.Class(className)
		if className == "" || !ok || class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonUnboundImmediatePVCs)
		}
		pc.delayed = append(pc.delayed, claim)
	}
	return pc, nil
}

// PreFilter implements framework.PreFilterPlugin.
func (vb *VolumeBinding) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) *framework.Status {
	if vb.Sources == nil {
		return statusSkip
	}
	if names, _ := claimNames(pod); len(names) == 0 {
		return statusSkip
	}
	pc, st := readClaims(vb.Sources, pod)
	if st != nil {
		return st
	}
	state.Write(volumeBindingStateKey, pc)
	return nil
}

// Filter implements framework.FilterPlugin.
func (vb *VolumeBinding) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, node *framework.NodeInfo) *framework.Status {
	pc, ok := state.Read(volumeBindingStateKey).(*podClaims)
	if !ok || node.Node == nil {
		return nil
	}
	_, st := vb.place(pc, node.Node)
	return st
}

var (
	statusVolumeNodeConflict = framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonVolumeNodeConflict)
	statusVolumeBindConflict = framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonVolumeBindConflict)
)

// place checks a pod's claims against node and chooses, for each waiting
// claim by name, an Available volume that fits it there (nil: to be
// provisioned).
func (vb *VolumeBinding) place(pc *podClaims, node *v1.Node) (map[string]*v1.PersistentVolume, *framework.Status) {
	for _, claim := range pc.bound {
		pv, ok := vb.Sources.Volume(claim.Spec.VolumeName)
		if !ok {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolume %q not found", claim.Spec.VolumeName))
		}
		if storagehelpers.CheckNodeAffinity(pv, node.Labels) != nil {
			return nil, statusVolumeNodeConflict
		}
	}
	if len(pc.delayed) == 0 {
		return nil, nil
	}
	chosen := make(map[string]*v1.PersistentVolume, len(pc.delayed))
	excluded := make(map[string]*v1.PersistentVolume, len(pc.delayed))
	all := vb.Sources.Volumes()
	for _, claim := range pc.delayed {
		pv, err := storagehelpers.FindMatchingVolume(claim, all, node, excluded, true, true)
		if err != nil {
			return nil, framework.NewStatus(framework.Error, err.Error())
		}
		if pv != nil {
			chosen[claim.Name], excluded[pv.Name] = pv, pv
			continue
		}
		class, ok := vb.Sources.Class(storagehelpers.GetPersistentVolumeClaimClass(claim))
		if !ok || class.Provisioner == storagehelpers.NotSupportedProvisioner || !topologyAllows(class.AllowedTopologies, node.Labels) {
			return nil, statusVolumeBindConflict
		}
		if sel, ok := claim.Annotations[storagehelpers.AnnSelectedNode]; ok && sel != node.Name {
			// Provisioning for another node has begun.
			return nil, statusVolumeBindConflict
		}
		chosen[claim.Name] = nil
	}
	return chosen, nil
}

// topologyAllows reports whether a class's allowedTopologies (none:
// anywhere) hold a node's labels: in some term, every expression names a
// label the node has, with one of its values.
func topologyAllows(terms []v1.TopologySelectorTerm, nodeLabels map[string]string) bool {
	if len(terms) == 0 {
		return true
	}
	return slices.ContainsFunc(terms, func(t v1.TopologySelectorTerm) bool {
		for _, e := range t.MatchLabelExpressions {
			if v, ok := nodeLabels[e.Key]; !ok || !slices.Contains(e.Values, v) {
				return false
			}
		}
		return true
	})
}

// PreBind implements framework.PreBindPlugin.
func (vb *VolumeBinding) PreBind(ctx context.Context, pod *v1.Pod, node *v1.Node) *framework.Status {
	if vb.Sources == nil {
		return nil
	}
	if names, _ := claimNames(pod); len(names) == 0 {
		return nil
	}
	pc, st := readClaims(vb.Sources, pod)
	if st != nil {
		return st
	}
	chosen, st := vb.place(pc, node)
	if st != nil {
		return st
	}
	if err := vb.write(ctx, pc, chosen, node); err != nil {
		return framework.NewStatus(framework.Error, "binding volumes: "+err.Error())
	}
	if err := vb.waitBound(ctx, pod, node); err != nil {
		return framework.NewStatus(framework.Error, "binding volumes: "+err.Error())
	}
	return nil
}

// write binds each chosen volume to its claim and annotates each claim
// left to provisioning with the node.
func (vb *VolumeBinding) write(ctx context.Context, pc *podClaims, chosen map[string]*v1.PersistentVolume, node *v1.Node) error {
	if vb.Client == nil {
		return nil
	}
	for _, claim := range pc.delayed {
		if pv := chosen[claim.Name]; pv != nil {
			bound, dirty, err := storagehelpers.GetBindVolumeToClaim(pv, claim)
			if err != nil {
				return err
			}
			if dirty {
				if _, err := vb.Client.CoreV1().PersistentVolumes().Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
					return err
				}
			}
			continue
		}
		if claim.Annotations[storagehelpers.AnnSelectedNode] == node.Name {
			continue
		}
		c := claim.DeepCopy()
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, storagehelpers.AnnSelectedNode, node.Name)
		if _, err := vb.Client.CoreV1().PersistentVolumeClaims(c.Namespace).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// waitBound waits until every claim of pod is bound to a volume the node
// may use.
func (vb *VolumeBinding) waitBound(ctx context.Context, pod *v1.Pod, node *v1.Node) error {
	timeout, poll := vb.Timeout, vb.Poll
	if timeout == 0 {
		timeout = DefaultBindTimeout
	}
	if poll == 0 {
		poll = 100 * time.Millisecond
	}
	names, _ := claimNames(pod)
	var waiting string
	err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(context.Context) (bool, error) {
		for _, name := range names {
			claim, ok := vb.Sources.Claim(pod.Namespace, name)
			if !ok {
				return false, fmt.Errorf("persistentvolumeclaim %q not found", name)
			}
			if sel, ok := claim.Annotations[storagehelpers.AnnSelectedNode]; ok && sel != node.Name {
				return false, fmt.Errorf("selectedNode annotation value %q not set to scheduled node %q", sel, node.Name)
			}
			if claim.Spec.VolumeName == "" || !metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBindCompleted) {
				waiting = name
				return false, nil
			}
			pv, ok := vb.Sources.Volume(claim.Spec.VolumeName)
			if !ok {
				waiting = name
				return false, nil
			}
			if storagehelpers.CheckNodeAffinity(pv, node.Labels) != nil {
				return false, fmt.Errorf("pv %q node affinity doesn't match node %q", pv.Name, node.Name)
			}
		}
		return true, nil
	})
	if err != nil && waiting != "" && ctx.Err() == nil && strings.Contains(err.Error(), "context deadline exceeded") {
		return fmt.Errorf("timed out waiting for persistentvolumeclaim %q to be bound", waiting)
	}
	return err
}

// VolumeZone is kube-scheduler's VolumeZone filter: a node must be in a
// zone and region of each of the pod's bound volumes that names them in
// its labels.
type VolumeZone struct {
	Sources VolumeSources
}

var _ framework.FilterPlugin = VolumeZone{}

// Name implements framework.Plugin.
func (VolumeZone) Name() string { return NameVolumeZone }

var (
	zoneLabels               = []string{v1.LabelTopologyZone, v1.LabelTopologyRegion, v1.LabelFailureDomainBetaZone, v1.LabelFailureDomainBetaRegion}
	statusVolumeZoneConflict = framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonVolumeZoneConflict)
)

// Filter implements framework.FilterPlugin.
func (vz VolumeZone) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	if vz.Sources == nil {
		return nil
	}
	names, _ := claimNames(pod)
	for _, name := range names {
		claim, ok := vz.Sources.Claim(pod.Namespace, name)
		if !ok || claim.Spec.VolumeName == "" {
			continue // VolumeBinding says why
		}
		pv, ok := vz.Sources.Volume(claim.Spec.VolumeName)
		if !ok {
			continue
		}
		for _, key := range zoneLabels {
			want, ok := pv.Labels[key]
			if !ok {
				continue
			}
			have, ok := node.Labels[key]
			if !ok || !zoneIn(have, want) {
				return statusVolumeZoneConflict
			}
		}
	}
	return nil
}

// zoneIn reports whether zone is among a volume's zones, which a label
// may list joined by "__".
func zoneIn(zone, zones string) bool {
	for z := range strings.SplitSeq(zones, "__") {
		if strings.TrimSpace(z) == zone {
			return true
		}
	}
	return false
}
