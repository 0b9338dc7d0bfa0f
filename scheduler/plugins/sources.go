package plugins

import (
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Objects is a SpreadSources over fixed lists, for offline scheduling and
// tests.
type Objects struct {
	ServiceList               []*v1.Service
	ReplicationControllerList []*v1.ReplicationController
	ReplicaSetList            []*appsv1.ReplicaSet
	StatefulSetList           []*appsv1.StatefulSet
	ClaimList                 []*v1.PersistentVolumeClaim
	VolumeList                []*v1.PersistentVolume
	ClassList                 []*storagev1.StorageClass
}

var (
	_ SpreadSources = (*Objects)(nil)
	_ VolumeSources = (*Objects)(nil)
)

// Claim implements VolumeSources.
func (o *Objects) Claim(namespace, name string) (*v1.PersistentVolumeClaim, bool) {
	for _, x := range o.ClaimList {
		if x.Namespace == namespace && x.Name == name {
			return x, true
		}
	}
	return nil, false
}

// Volume implements VolumeSources.
func (o *Objects) Volume(name string) (*v1.PersistentVolume, bool) {
	for _, x := range o.VolumeList {
		if x.Name == name {
			return x, true
		}
	}
	return nil, false
}

// Volumes implements VolumeSources.
func (o *Objects) Volumes() []*v1.PersistentVolume { return o.VolumeList }

// Class implements VolumeSources.
func (o *Objects) Class(name string) (*storagev1.StorageClass, bool) {
	for _, x := range o.ClassList {
		if x.Name == name {
			return x, true
		}
	}
	return nil, false
}

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
