package plugins

import (
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
)

// Objects is a SpreadSources over fixed lists, for offline scheduling and
// tests.
type Objects struct {
	ServiceList               []*v1.Service
	ReplicationControllerList []*v1.ReplicationController
	ReplicaSetList            []*appsv1.ReplicaSet
	StatefulSetList           []*appsv1.StatefulSet
}

var _ SpreadSources = (*Objects)(nil)

// Services implements SpreadSources.
func (o *Objects) Services(namespace string) []*v1.Service {
	var out []*v1.Service
	for _, s := range o.ServiceList {
		if s.Namespace == namespace {
			out = append(out, s)
		}
	}
	return out
}

// ReplicationController implements SpreadSources.
func (o *Objects) ReplicationController(namespace, name string) *v1.ReplicationController {
	for _, x := range o.ReplicationControllerList {
		if x.Namespace == namespace && x.Name == name {
			return x
		}
	}
	return nil
}

// ReplicaSet implements SpreadSources.
func (o *Objects) ReplicaSet(namespace, name string) *appsv1.ReplicaSet {
	for _, x := range o.ReplicaSetList {
		if x.Namespace == namespace && x.Name == name {
			return x
		}
	}
	return nil
}

// StatefulSet implements SpreadSources.
func (o *Objects) StatefulSet(namespace, name string) *appsv1.StatefulSet {
	for _, x := range o.StatefulSetList {
		if x.Namespace == namespace && x.Name == name {
			return x
		}
	}
	return nil
}
