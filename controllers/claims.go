package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/storage/ephemeral"
)

// PodClaimIndex is the index of pods by the namespace/name keys of the
// PersistentVolumeClaims they use (their persistentVolumeClaim volumes
// and the claims of their generic ephemeral volumes), which the volume
// controllers share.
const PodClaimIndex = "pod-pvc-index"

// AddPodClaimIndex adds PodClaimIndex to a pod informer, once; the
// informer must not have started.
func AddPodClaimIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[PodClaimIndex]; ok {
		return nil
	}
	return inf.AddIndexers(cache.Indexers{PodClaimIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		var keys []string
		for i := range pod.Spec.Volumes {
			v := &pod.Spec.Volumes[i]
			switch {
			case v.PersistentVolumeClaim != nil:
				keys = append(keys, pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
			case v.Ephemeral != nil:
				keys = append(keys, pod.Namespace+"/"+ephemeral.VolumeClaimName(pod, v))
			}
		}
		return keys, nil
	}})
}

// PodsUsingClaim lists the pods an informer with PodClaimIndex has that
// use the claim namespace/name.
func PodsUsingClaim(inf cache.SharedIndexInformer, namespace, name string) ([]*corev1.Pod, error) {
	objs, err := inf.GetIndexer().ByIndex(PodClaimIndex, namespace+"/"+name)
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// PodTerminated reports whether a pod's containers are done for good:
// it Succeeded or Failed, or it is being deleted and none of its
// containers is still running, as kube's volume controllers judge it.
func PodTerminated(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return true
	}
	if pod.DeletionTimestamp == nil {
		return false
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, s := range list {
			if s.State.Terminated == nil && s.State.Waiting == nil {
				return false
			}
		}
	}
	return true
}
