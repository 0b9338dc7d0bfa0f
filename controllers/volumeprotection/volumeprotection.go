// Package volumeprotection is kube-controller-manager's pvc-protection
// and pv-protection controllers (docs/kubernetes-behaviour.md, G.20).
// The API server gives every new claim the finalizer
// kubernetes.io/pvc-protection and every new volume
// kubernetes.io/pv-protection (StorageObjectInUseProtection, D.17); these
// controllers take them off once the object is being deleted and no
// longer in use: a claim no scheduled pod uses, a volume that is not
// Bound. They add a missing finalizer to an object not being deleted.
//
// The claims' controller needs: persistentvolumeclaims get, list, watch,
// update; pods get, list, watch. The volumes' controller:
// persistentvolumes get, list, watch, update.
package volumeprotection

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/kubegate/kubegate/controllers"
)

// The finalizers, kube's.
const (
	ClaimFinalizer  = "kubernetes.io/pvc-protection"
	VolumeFinalizer = "kubernetes.io/pv-protection"
)

// ClaimDescriptor runs the claims' controller as kube's "pvc-protection".
var ClaimDescriptor = controllers.Descriptor{Name: "pvc-protection", ServiceAccount: "pvc-protection-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return NewClaims(c)
}}

// VolumeDescriptor runs the volumes' controller as kube's "pv-protection".
var VolumeDescriptor = controllers.Descriptor{Name: "pv-protection", ServiceAccount: "pv-protection-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return NewVolumes(c)
}}

// Claims is the pvc-protection controller.
type Claims struct {
	client kubernetes.Interface
	log    *slog.Logger
	claims corelisters.PersistentVolumeClaimLister
	pods   cache.SharedIndexInformer
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// NewClaims builds the pvc-protection controller on c's shared informers.
func NewClaims(c *controllers.Context) (*Claims, error) {
	pc := &Claims{client: c.Client, log: c.Logger, queue: controllers.NewQueue("pvcprotection")}
	if pc.log == nil {
		pc.log = slog.Default()
	}
	ci := c.Informers.Core().V1().PersistentVolumeClaims()
	pi := c.Informers.Core().V1().Pods()
	pc.claims, pc.pods = ci.Lister(), pi.Informer()
	if err := controllers.AddPodClaimIndex(pc.pods); err != nil {
		return nil, err
	}
	pc.synced = []cache.InformerSynced{ci.Informer().HasSynced, pi.Informer().HasSynced}
	enqueue := func(obj any) {
		if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok && (needsFinalizer(&claim.ObjectMeta, ClaimFinalizer) || deleting(&claim.ObjectMeta, ClaimFinalizer)) {
			controllers.Enqueue(pc.queue, claim)
		}
	}
	if _, err := ci.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	// A pod that stops using its claims (ended, deleted, or changed) may
	// free a claim being deleted.
	podClaims := func(obj any) {
		if pod, ok := controllers.Unwrap(obj).(*corev1.Pod); ok {
			for i := range pod.Spec.Volumes {
				v := &pod.Spec.Volumes[i]
				switch {
				case v.PersistentVolumeClaim != nil:
					pc.queue.Add(pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName)
				case v.Ephemeral != nil:
					pc.queue.Add(pod.Namespace + "/" + ephemeral.VolumeClaimName(pod, v))
				}
			}
		}
	}
	if _, err := pi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: podClaims, UpdateFunc: func(old, obj any) { podClaims(old); podClaims(obj) }, DeleteFunc: podClaims,
	}); err != nil {
		return nil, err
	}
	return pc, nil
}

// Run works until ctx is done.
func (pc *Claims) Run(ctx context.Context) error {
	return controllers.RunWorkers(ctx, "pvc-protection", pc.queue, 1, pc.log, pc.sync, pc.synced...)
}

func (pc *Claims) sync(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	claim, err := pc.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if deleting(&claim.ObjectMeta, ClaimFinalizer) {
		used, err := pc.inUse(ctx, claim)
		if err != nil || used {
			return err
		}
		c := claim.DeepCopy()
		c.Finalizers = without(c.Finalizers, ClaimFinalizer)
		_, err = pc.client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, c, metav1.UpdateOptions{})
		return ignoreGone(err)
	}
	if needsFinalizer(&claim.ObjectMeta, ClaimFinalizer) {
		c := claim.DeepCopy()
		c.Finalizers = append(c.Finalizers, ClaimFinalizer)
		_, err = pc.client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, c, metav1.UpdateOptions{})
		return ignoreGone(err)
	}
	return nil
}

// inUse reports whether a scheduled pod uses the claim: first by the
// cache, and, when the cache knows of none, by a live list of the
// namespace's pods, as the cache may not have seen the newest.
func (pc *Claims) inUse(ctx context.Context, claim *corev1.PersistentVolumeClaim) (bool, error) {
	pods, err := controllers.PodsUsingClaim(pc.pods, claim.Namespace, claim.Name)
	if err != nil {
		return false, err
	}
	if slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return podUses(p, claim) }) {
		return true, nil
	}
	list, err := pc.client.CoreV1().Pods(claim.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	for i := range list.Items {
		if podUses(&list.Items[i], claim) {
			return true, nil
		}
	}
	return false, nil
}

// podUses reports whether a scheduled pod keeps claim in use: a kubelet
// sees a pod only once it is scheduled, and never starts one whose claim
// is being deleted. A generic ephemeral volume's claim counts only while
// the pod has not shut down and only if the claim is the pod's own.
func podUses(pod *corev1.Pod, claim *corev1.PersistentVolumeClaim) bool {
	if pod.Spec.NodeName == "" {
		return false
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim.Name {
			return true
		}
		if v.Ephemeral != nil && !shutDown(pod) && ephemeral.VolumeClaimName(pod, v) == claim.Name && ephemeral.VolumeIsForPod(pod, claim) == nil {
			return true
		}
	}
	return false
}

// shutDown: the pod's kubelet is done with it, or it was force-deleted:
// it is being deleted with no grace left.
func shutDown(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
}

// Volumes is the pv-protection controller.
type Volumes struct {
	client  kubernetes.Interface
	log     *slog.Logger
	volumes corelisters.PersistentVolumeLister
	synced  cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
}

// NewVolumes builds the pv-protection controller on c's shared informers.
func NewVolumes(c *controllers.Context) (*Volumes, error) {
	vc := &Volumes{client: c.Client, log: c.Logger, queue: controllers.NewQueue("pvprotection")}
	if vc.log == nil {
		vc.log = slog.Default()
	}
	vi := c.Informers.Core().V1().PersistentVolumes()
	vc.volumes, vc.synced = vi.Lister(), vi.Informer().HasSynced
	enqueue := func(obj any) {
		if pv, ok := obj.(*corev1.PersistentVolume); ok && (needsFinalizer(&pv.ObjectMeta, VolumeFinalizer) || deleting(&pv.ObjectMeta, VolumeFinalizer)) {
			controllers.Enqueue(vc.queue, pv)
		}
	}
	if _, err := vi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	return vc, nil
}

// Run works until ctx is done.
func (vc *Volumes) Run(ctx context.Context) error {
	return controllers.RunWorkers(ctx, "pv-protection", vc.queue, 1, vc.log, vc.sync, vc.synced)
}

func (vc *Volumes) sync(ctx context.Context, name string) error {
	pv, err := vc.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case deleting(&pv.ObjectMeta, VolumeFinalizer):
		if pv.Status.Phase == corev1.VolumeBound {
			return nil // the binder releases it once its claim is gone
		}
		v := pv.DeepCopy()
		v.Finalizers = without(v.Finalizers, VolumeFinalizer)
		_, err = vc.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{})
	case needsFinalizer(&pv.ObjectMeta, VolumeFinalizer):
		v := pv.DeepCopy()
		v.Finalizers = append(v.Finalizers, VolumeFinalizer)
		_, err = vc.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{})
	}
	return ignoreGone(err)
}

// needsFinalizer: not being deleted, and without finalizer.
func needsFinalizer(m *metav1.ObjectMeta, finalizer string) bool {
	return m.DeletionTimestamp == nil && !slices.Contains(m.Finalizers, finalizer)
}

// deleting: being deleted, and held by finalizer.
func deleting(m *metav1.ObjectMeta, finalizer string) bool {
	return m.DeletionTimestamp != nil && slices.Contains(m.Finalizers, finalizer)
}

func without(list []string, s string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(x string) bool { return x == s })
}

func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
