package scheduler

import (
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"

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
