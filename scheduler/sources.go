package scheduler

import (
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegate/kubegate/scheduler/plugins"
)

// listerSources is plugins.SpreadSources over informer caches.
type listerSources struct {
	f informers.SharedInformerFactory
}

// NewSpreadSources returns the default-spreading sources backed by
// informers of f (services, replication controllers, replica sets,
// stateful sets). The scheduler does not wait for these caches: until they
// sync, pods simply get no default spreading.
func NewSpreadSources(f informers.SharedInformerFactory) plugins.SpreadSources {
	f.Core().V1().Services().Informer()
	f.Core().V1().ReplicationControllers().Informer()
	f.Apps().V1().ReplicaSets().Informer()
	f.Apps().V1().StatefulSets().Informer()
	return &listerSources{f: f}
}

func (l *listerSources) Services(ns string) []*v1.Service {
	out, _ := l.f.Core().V1().Services().Lister().Services(ns).List(labels.Everything())
	return out
}

func (l *listerSources) ReplicationController(ns, name string) *v1.ReplicationController {
	x, _ := l.f.Core().V1().ReplicationControllers().Lister().ReplicationControllers(ns).Get(name)
	return x
}

func (l *listerSources) ReplicaSet(ns, name string) *appsv1.ReplicaSet {
	x, _ := l.f.Apps().V1().ReplicaSets().Lister().ReplicaSets(ns).Get(name)
	return x
}

func (l *listerSources) StatefulSet(ns, name string) *appsv1.StatefulSet {
	x, _ := l.f.Apps().V1().StatefulSets().Lister().StatefulSets(ns).Get(name)
	return x
}

// volumeSources is plugins.VolumeSources over informer caches.
type volumeSources struct {
	f informers.SharedInformerFactory
}

// NewVolumeSources returns the volume plugins' sources backed by
// informers of f (claims, volumes, storage classes). Until their caches
// sync, a pod with claims finds them missing and waits as unschedulable.
func NewVolumeSources(f informers.SharedInformerFactory) plugins.VolumeSources {
	f.Core().V1().PersistentVolumeClaims().Informer()
	f.Core().V1().PersistentVolumes().Informer()
	f.Storage().V1().StorageClasses().Informer()
	return &volumeSources{f: f}
}

func (v *volumeSources) Claim(ns, name string) (*v1.PersistentVolumeClaim, bool) {
	c, err := v.f.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(ns).Get(name)
	return c, err == nil
}

func (v *volumeSources) Volume(name string) (*v1.PersistentVolume, bool) {
	pv, err := v.f.Core().V1().PersistentVolumes().Lister().Get(name)
	return pv, err == nil
}

func (v *volumeSources) Volumes() []*v1.PersistentVolume {
	out, _ := v.f.Core().V1().PersistentVolumes().Lister().List(labels.Everything())
	return out
}

func (v *volumeSources) Class(name string) (*storagev1.StorageClass, bool) {
	c, err := v.f.Storage().V1().StorageClasses().Lister().Get(name)
	return c, err == nil
}

// watch calls move on every change to a claim, volume or class, which
// may let a pod waiting for its volumes go on, as kube-scheduler's
// VolumeBinding events do, and returns the caches to wait for.
func (v *volumeSources) watch(move func()) ([]cache.InformerSynced, error) {
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { move() },
		UpdateFunc: func(any, any) { move() },
	}
	infs := []cache.SharedIndexInformer{v.f.Core().V1().PersistentVolumeClaims().Informer(),
		v.f.Core().V1().PersistentVolumes().Informer(), v.f.Storage().V1().StorageClasses().Informer()}
	synced := make([]cache.InformerSynced, 0, len(infs))
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, err
		}
		synced = append(synced, inf.HasSynced)
	}
	return synced, nil
}
