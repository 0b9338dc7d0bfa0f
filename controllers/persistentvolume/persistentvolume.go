// Package persistentvolume is kube-controller-manager's persistent volume
// binder and volume expander for kubegate (docs/kubernetes-behaviour.md,
// G.20), with kubegate's simulated provisioner built in.
//
// The binder binds each Pending PersistentVolumeClaim to the smallest
// Available PersistentVolume that satisfies it (class, access modes,
// volume mode, capacity, selector), or to the volume either names, and
// keeps both phases and kube's annotations. A claim whose class names
// SimulatedProvisioner gets a volume made for it, as kube's binder
// provisions with its in-tree plugins; a claim of any other provisioner
// is left to that provisioner (ExternalProvisioning). A volume whose
// claim is gone is Released, then deleted or kept by its reclaim policy.
//
// The expander grows a bound simulated volume, and its claim's
// status.capacity, when the claim asks for more.
//
// The binder's identity needs what kube's persistent-volume-binder role
// grants; the expander's what expand-controller's grants.
package persistentvolume

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/controllers"
)

// Descriptor runs the binder in the controller manager, as kube's
// "persistentvolume-binder".
var Descriptor = controllers.Descriptor{Name: "persistentvolume-binder", ServiceAccount: "persistent-volume-binder", New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c)
}}

// SimulatedProvisioner is the provisioner name of kubegate's simulated
// volumes: a StorageClass that names it has its claims' volumes made by
// the binder, and a volume annotated as provisioned by it is deleted by
// the binder when its reclaim policy is Delete.
const SimulatedProvisioner = "kubegate.io/simulated"

// SimulatedVolumeDir is the directory under which simulated volumes'
// hostPath sources point; nothing is made there.
const SimulatedVolumeDir = "/var/lib/kubegate/volumes/"

// eventSource is the component of the binder's events, as kube's.
const eventSource = "persistentvolume-controller"

// ResyncPeriod is how often every claim and volume is looked at again,
// kube-controller-manager's --pvclaimbinder-sync-period.
const ResyncPeriod = 15 * time.Second

// Controller is the persistent volume binder.
type Controller struct {
	client   kubernetes.Interface
	log      *slog.Logger
	events   record.EventRecorder
	startRec func() func()

	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	nodes   corelisters.NodeLister
	pods    cache.SharedIndexInformer
	synced  []cache.InformerSynced

	claimQueue  workqueue.TypedRateLimitingInterface[string]
	volumeQueue workqueue.TypedRateLimitingInterface[string]
}

// New builds the binder on c's shared informers.
func New(c *controllers.Context) (*Controller, error) {
	pc := &Controller{client: c.Client, log: c.Logger,
		claimQueue: controllers.NewQueue("claims"), volumeQueue: controllers.NewQueue("volumes")}
	if pc.log == nil {
		pc.log = slog.Default()
	}
	pc.events, pc.startRec = controllers.NewLazyRecorder(c.Client, eventSource)
	ci := c.Informers.Core().V1().PersistentVolumeClaims()
	vi := c.Informers.Core().V1().PersistentVolumes()
	si := c.Informers.Storage().V1().StorageClasses()
	ni := c.Informers.Core().V1().Nodes()
	pi := c.Informers.Core().V1().Pods()
	pc.claims, pc.volumes, pc.classes, pc.nodes, pc.pods = ci.Lister(), vi.Lister(), si.Lister(), ni.Lister(), pi.Informer()
	if err := controllers.AddPodClaimIndex(pc.pods); err != nil {
		return nil, err
	}
	pc.synced = []cache.InformerSynced{ci.Informer().HasSynced, vi.Informer().HasSynced, si.Informer().HasSynced,
		ni.Informer().HasSynced, pi.Informer().HasSynced}
	if _, err := ci.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { controllers.Enqueue(pc.claimQueue, obj) },
		UpdateFunc: func(_, obj any) { controllers.Enqueue(pc.claimQueue, obj) },
		DeleteFunc: pc.claimDeleted,
	}); err != nil {
		return nil, err
	}
	if _, err := vi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    pc.volumeChanged,
		UpdateFunc: func(_, obj any) { pc.volumeChanged(obj) },
		DeleteFunc: pc.volumeDeleted,
	}); err != nil {
		return nil, err
	}
	// A new class, or a class made the default, may let waiting claims
	// go on before the next resync.
	if _, err := si.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { pc.enqueuePendingClaims() },
		UpdateFunc: func(any, any) { pc.enqueuePendingClaims() },
	}); err != nil {
		return nil, err
	}
	return pc, nil
}

// claimDeleted looks again at the volume the claim was bound to, which
// is now Released.
func (pc *Controller) claimDeleted(obj any) {
	if claim, ok := controllers.Unwrap(obj).(*corev1.PersistentVolumeClaim); ok && claim.Spec.VolumeName != "" {
		pc.volumeQueue.Add(claim.Spec.VolumeName)
	}
}

// volumeChanged queues the volume, and the claims that may bind to it
// now: the one it names, or every Pending claim when it is Available.
func (pc *Controller) volumeChanged(obj any) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return
	}
	controllers.Enqueue(pc.volumeQueue, pv)
	if pv.Spec.ClaimRef != nil {
		pc.claimQueue.Add(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
		return
	}
	if pv.Status.Phase == corev1.VolumeAvailable {
		pc.enqueuePendingClaims()
	}
}

// volumeDeleted queues the claim a deleted volume was bound to, which
// has lost it.
func (pc *Controller) volumeDeleted(obj any) {
	if pv, ok := controllers.Unwrap(obj).(*corev1.PersistentVolume); ok && pv.Spec.ClaimRef != nil {
		pc.claimQueue.Add(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
	}
}

func (pc *Controller) enqueuePendingClaims() {
	claims, _ := pc.claims.List(labels.Everything())
	for _, c := range claims {
		if c.Status.Phase != corev1.ClaimBound {
			controllers.Enqueue(pc.claimQueue, c)
		}
	}
}

// Run works until ctx is done: one worker for claims and one for
// volumes, as kube's binder has, and every claim and volume queued again
// each ResyncPeriod.
func (pc *Controller) Run(ctx context.Context) error {
	defer pc.startRec()()
	go func() {
		t := time.NewTicker(ResyncPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				pc.resync()
			}
		}
	}()
	errc := make(chan error, 1)
	go func() {
		errc <- controllers.RunWorkers(ctx, "persistentvolume-binder", pc.volumeQueue, 1, pc.log, pc.syncVolumeKey, pc.synced...)
	}()
	err := controllers.RunWorkers(ctx, "persistentvolume-binder", pc.claimQueue, 1, pc.log, pc.syncClaimKey, pc.synced...)
	if verr := <-errc; err == nil {
		err = verr
	}
	return err
}

func (pc *Controller) resync() {
	claims, _ := pc.claims.List(labels.Everything())
	for _, c := range claims {
		controllers.Enqueue(pc.claimQueue, c)
	}
	volumes, _ := pc.volumes.List(labels.Everything())
	for _, v := range volumes {
		controllers.Enqueue(pc.volumeQueue, v)
	}
}
