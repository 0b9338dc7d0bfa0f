package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegate/kubegate/controllers"
)

// kind is what the one implementation needs to know of the kind it
// manages. ReplicationControllers are handled as ReplicaSets: read
// converted to apps/v1 ReplicaSets and written back converted to
// ReplicationControllers, as if they were an older version of the same
// kind (docs/kubernetes-behaviour.md, G.2).
type kind struct {
	gvk schema.GroupVersionKind
	// name is the controller's name and its queue's.
	name string
	// component is the source of the events it records.
	component string
	// terminating: status.terminatingReplicas is counted (ReplicaSets
	// only; ReplicationControllers have no such field).
	terminating bool
	informer    cache.SharedIndexInformer
	// get reads one object from the cache.
	get func(namespace, name string) (*appsv1.ReplicaSet, error)
	// list reads the objects of a namespace from the cache.
	list func(namespace string) ([]*appsv1.ReplicaSet, error)
	// fresh reads one object from the API server.
	fresh func(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
	// updateStatus writes rs's status through the status subresource.
	updateStatus func(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	// object is rs as the kind it is, for events.
	object func(rs *appsv1.ReplicaSet) runtime.Object
}

// replicaSetKind is the kind of the "replicaset" controller.
func replicaSetKind(c *controllers.Context) *kind {
	inf := c.Informers.Apps().V1().ReplicaSets()
	lister := inf.Lister()
	client := c.Client.AppsV1()
	return &kind{
		gvk:         appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		name:        "replicaset",
		component:   "replicaset-controller",
		terminating: true,
		informer:    inf.Informer(),
		get:         func(ns, name string) (*appsv1.ReplicaSet, error) { return lister.ReplicaSets(ns).Get(name) },
		list: func(ns string) ([]*appsv1.ReplicaSet, error) {
			return lister.ReplicaSets(ns).List(labels.Everything())
		},
		fresh: func(ctx context.Context, ns, name string) (*appsv1.ReplicaSet, error) {
			return client.ReplicaSets(ns).Get(ctx, name, metav1.GetOptions{})
		},
		updateStatus: func(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
			return client.ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
		},
		object: func(rs *appsv1.ReplicaSet) runtime.Object { return rs },
	}
}

// replicationControllerKind is the kind of the "replicationcontroller"
// controller.
func replicationControllerKind(c *controllers.Context) *kind {
	inf := c.Informers.Core().V1().ReplicationControllers()
	lister := inf.Lister()
	client := c.Client.CoreV1()
	return &kind{
		gvk:       corev1.SchemeGroupVersion.WithKind("ReplicationController"),
		name:      "replicationmanager",
		component: "replication-controller",
		informer:  inf.Informer(),
		get: func(ns, name string) (*appsv1.ReplicaSet, error) {
			rc, err := lister.ReplicationControllers(ns).Get(name)
			if err != nil {
				return nil, err
			}
			return fromRC(rc), nil
		},
		list: func(ns string) ([]*appsv1.ReplicaSet, error) { return listRCs(lister, ns) },
		fresh: func(ctx context.Context, ns, name string) (*appsv1.ReplicaSet, error) {
			rc, err := client.ReplicationControllers(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return fromRC(rc), nil
		},
		updateStatus: func(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
			rc, err := client.ReplicationControllers(rs.Namespace).UpdateStatus(ctx, toRC(rs), metav1.UpdateOptions{})
			if err != nil {
				return nil, err
			}
			return fromRC(rc), nil
		},
		object: func(rs *appsv1.ReplicaSet) runtime.Object { return toRC(rs) },
	}
}

func listRCs(lister corelisters.ReplicationControllerLister, ns string) ([]*appsv1.ReplicaSet, error) {
	rcs, err := lister.ReplicationControllers(ns).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]*appsv1.ReplicaSet, len(rcs))
	for i, rc := range rcs {
		out[i] = fromRC(rc)
	}
	return out, nil
}

// asReplicaSet returns an informer's object (a ReplicaSet or a
// ReplicationController, or a tombstone of one) as a ReplicaSet; nil for
// anything else.
func asReplicaSet(obj any) *appsv1.ReplicaSet {
	obj = controllers.Unwrap(obj)
	switch o := obj.(type) {
	case *appsv1.ReplicaSet:
		return o
	case *corev1.ReplicationController:
		return fromRC(o)
	}
	return nil
}

// fromRC converts a ReplicationController to the ReplicaSet it is
// handled as: its map selector becomes matchLabels.
func fromRC(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: rc.ObjectMeta,
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        rc.Spec.Replicas,
			MinReadySeconds: rc.Spec.MinReadySeconds,
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             rc.Status.Replicas,
			FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas:        rc.Status.ReadyReplicas,
			AvailableReplicas:    rc.Status.AvailableReplicas,
			ObservedGeneration:   rc.Status.ObservedGeneration,
		},
	}
	if rs.Spec.Replicas == nil {
		one := int32(1)
		rs.Spec.Replicas = &one
	}
	if rc.Spec.Selector != nil {
		rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: rc.Spec.Selector}
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetConditionType(c.Type),
			Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
	}
	return rs
}

// toRC converts back what fromRC made.
func toRC(rs *appsv1.ReplicaSet) *corev1.ReplicationController {
	template := rs.Spec.Template
	rc := &corev1.ReplicationController{
		ObjectMeta: rs.ObjectMeta,
		Spec: corev1.ReplicationControllerSpec{
			Replicas:        rs.Spec.Replicas,
			MinReadySeconds: rs.Spec.MinReadySeconds,
			Template:        &template,
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas:             rs.Status.Replicas,
			FullyLabeledReplicas: rs.Status.FullyLabeledReplicas,
			ReadyReplicas:        rs.Status.ReadyReplicas,
			AvailableReplicas:    rs.Status.AvailableReplicas,
			ObservedGeneration:   rs.Status.ObservedGeneration,
		},
	}
	if rs.Spec.Selector != nil {
		rc.Spec.Selector = rs.Spec.Selector.MatchLabels
	}
	for _, c := range rs.Status.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status, LastTransitionTime: c.LastTransitionTime,
			Reason: c.Reason, Message: c.Message})
	}
	return rc
}
