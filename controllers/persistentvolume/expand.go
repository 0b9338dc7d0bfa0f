package persistentvolume

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/kubegate/kubegate/controllers"
)

// ExpanderDescriptor runs the expander in the controller manager, as
// kube's "persistentvolume-expander".
var ExpanderDescriptor = controllers.Descriptor{Name: "persistentvolume-expander", ServiceAccount: "expand-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return NewExpander(c)
}}

// The annotation naming who resizes a claim, and the expander's event
// reasons, kube's.
const (
	annStorageResizer       = "volume.kubernetes.io/storage-resizer"
	reasonExternalExpanding = "ExternalExpanding"
	reasonResizeSuccessful  = "VolumeResizeSuccessful"
)

// Expander is the volume expander: a Bound claim that asks for more than
// its status.capacity has its volume grown. The simulated provisioner's
// volumes are grown here at once and need no resize on the node, so the
// claim's capacity follows in the same pass; any other volume is left to
// an external resizer (G.20).
type Expander struct {
	client   kubernetes.Interface
	log      *slog.Logger
	now      func() time.Time
	events   record.EventRecorder
	startRec func() func()
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
}

// NewExpander builds the expander on c's shared informers.
func NewExpander(c *controllers.Context) (*Expander, error) {
	e := &Expander{client: c.Client, log: c.Logger, now: c.Now, queue: controllers.NewQueue("volume_expand")}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.now == nil {
		e.now = time.Now
	}
	e.events, e.startRec = controllers.NewLazyRecorder(c.Client, "volume_expand")
	ci := c.Informers.Core().V1().PersistentVolumeClaims()
	vi := c.Informers.Core().V1().PersistentVolumes()
	e.claims, e.volumes = ci.Lister(), vi.Lister()
	e.synced = []cache.InformerSynced{ci.Informer().HasSynced, vi.Informer().HasSynced}
	enqueue := func(obj any) {
		if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok && claim.Status.Phase == corev1.ClaimBound {
			controllers.Enqueue(e.queue, claim)
		}
	}
	if _, err := ci.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*corev1.PersistentVolumeClaim)
			n, ok2 := obj.(*corev1.PersistentVolumeClaim)
			if !ok1 || !ok2 {
				return
			}
			oldReq, newReq := o.Spec.Resources.Requests[corev1.ResourceStorage], n.Spec.Resources.Requests[corev1.ResourceStorage]
			oldCap, newCap := o.Status.Capacity[corev1.ResourceStorage], n.Status.Capacity[corev1.ResourceStorage]
			if newReq.Cmp(oldReq) > 0 || newCap.Cmp(oldCap) > 0 || o.Status.Phase != n.Status.Phase {
				enqueue(obj)
			}
		},
	}); err != nil {
		return nil, err
	}
	return e, nil
}

// Run works until ctx is done.
func (e *Expander) Run(ctx context.Context) error {
	defer e.startRec()()
	return controllers.RunWorkers(ctx, "persistentvolume-expander", e.queue, 1, e.log, e.sync, e.synced...)
}

func (e *Expander) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	claim, err := e.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if claim.Spec.VolumeName == "" {
		return nil
	}
	pv, err := e.volumes.Get(claim.Spec.VolumeName)
	if err != nil {
		return err
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace != claim.Namespace || pv.Spec.ClaimRef.UID != claim.UID {
		return fmt.Errorf("persistent Volume is not bound to PVC being updated : %s", key)
	}
	want := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if have := claim.Status.Capacity[corev1.ResourceStorage]; want.Cmp(have) <= 0 {
		return nil
	}
	if pv.Annotations[storagehelpers.AnnDynamicallyProvisioned] != SimulatedProvisioner {
		e.events.Event(claim, corev1.EventTypeNormal, reasonExternalExpanding, "waiting for an external controller to expand this PVC")
		return nil
	}
	// The claim is marked as being resized by the controller, the volume
	// grown, then the claim's capacity set and the marks taken off.
	resizing := claim.DeepCopy()
	metav1.SetMetaDataAnnotation(&resizing.ObjectMeta, annStorageResizer, SimulatedProvisioner)
	resizing.Status.Conditions = setResizeCondition(resizing.Status.Conditions, corev1.PersistentVolumeClaimCondition{
		Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(e.now())})
	resizing.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: want}
	resizing.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
		corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInProgress}
	if claim, err = e.patchClaim(ctx, claim, resizing); err != nil {
		return err
	}
	if size := pv.Spec.Capacity[corev1.ResourceStorage]; size.Cmp(want) < 0 {
		grown := pv.DeepCopy()
		if grown.Spec.Capacity == nil {
			grown.Spec.Capacity = corev1.ResourceList{}
		}
		grown.Spec.Capacity[corev1.ResourceStorage] = want
		if _, err := e.patchVolume(ctx, pv, grown); err != nil {
			return fmt.Errorf("error updating PV spec capacity for volume %q with : %w", key, err)
		}
	}
	done := claim.DeepCopy()
	if done.Status.Capacity == nil {
		done.Status.Capacity = corev1.ResourceList{}
	}
	done.Status.Capacity[corev1.ResourceStorage] = want
	delete(done.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
	if len(done.Status.AllocatedResourceStatuses) == 0 {
		done.Status.AllocatedResourceStatuses = nil
	}
	done.Status.Conditions = setResizeCondition(done.Status.Conditions)
	if _, err := e.patchClaim(ctx, claim, done); err != nil {
		return fmt.Errorf("error marking pvc %s as resized: %w", key, err)
	}
	e.events.Event(claim, corev1.EventTypeNormal, reasonResizeSuccessful, "ExpandVolume succeeded for volume "+key)
	return nil
}

// setResizeCondition replaces the resize conditions (Resizing,
// FileSystemResizePending) among conds with set.
func setResizeCondition(conds []corev1.PersistentVolumeClaimCondition, set ...corev1.PersistentVolumeClaimCondition) []corev1.PersistentVolumeClaimCondition {
	var out []corev1.PersistentVolumeClaimCondition
	for _, c := range conds {
		if c.Type != corev1.PersistentVolumeClaimResizing && c.Type != corev1.PersistentVolumeClaimFileSystemResizePending {
			out = append(out, c)
		}
	}
	return append(out, set...)
}

// patchClaim writes the difference from old to updated, its metadata and
// status, as a strategic merge patch of the status subresource.
func (e *Expander) patchClaim(ctx context.Context, old, updated *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	if apiequality.Semantic.DeepEqual(old, updated) {
		return old, nil
	}
	patch, err := twoWayPatch(old, updated, &corev1.PersistentVolumeClaim{})
	if err != nil {
		return nil, err
	}
	return e.client.CoreV1().PersistentVolumeClaims(old.Namespace).Patch(ctx, old.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
}

func (e *Expander) patchVolume(ctx context.Context, old, updated *corev1.PersistentVolume) (*corev1.PersistentVolume, error) {
	patch, err := twoWayPatch(old, updated, &corev1.PersistentVolume{})
	if err != nil {
		return nil, err
	}
	return e.client.CoreV1().PersistentVolumes().Patch(ctx, old.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
}

func twoWayPatch(old, updated, kind any) ([]byte, error) {
	o, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	n, err := json.Marshal(updated)
	if err != nil {
		return nil, err
	}
	return strategicpatch.CreateTwoWayMergePatch(o, n, kind)
}
