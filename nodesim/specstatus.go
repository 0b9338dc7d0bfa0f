package nodesim

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// What a kubelet reports of a running pod's spec as it changes (G.13):
// the ephemeral containers added to it (kubectl debug), each started at
// once and running, and the resources of its containers, applied in place
// as soon as a resize asks for them, with no resize left pending or in
// progress.

// withSpec returns st, a running pod's status, with its ephemeral
// containers running and its containers' resources those of the spec,
// and whether that changed anything.
func withSpec(pod *corev1.Pod, st corev1.PodStatus, now metav1.Time) (corev1.PodStatus, bool) {
	out := *st.DeepCopy()
	out.EphemeralContainerStatuses = ephemeralStatuses(pod, out.EphemeralContainerStatuses, now)
	applyResources(pod.Spec.InitContainers, out.InitContainerStatuses)
	applyResources(pod.Spec.Containers, out.ContainerStatuses)
	conds := out.Conditions[:0:0]
	for _, c := range out.Conditions {
		if c.Type != corev1.PodResizePending && c.Type != corev1.PodResizeInProgress {
			conds = append(conds, c)
		}
	}
	if len(conds) != len(out.Conditions) {
		out.Conditions = conds
	}
	return out, !apiequality.Semantic.DeepEqual(out, st)
}

// ephemeralStatuses is one running status per ephemeral container, in
// spec order, keeping the start of those already reported.
func ephemeralStatuses(pod *corev1.Pod, old []corev1.ContainerStatus, now metav1.Time) []corev1.ContainerStatus {
	if len(pod.Spec.EphemeralContainers) == 0 {
		return old
	}
	out := make([]corev1.ContainerStatus, len(pod.Spec.EphemeralContainers))
	for i, ec := range pod.Spec.EphemeralContainers {
		s := corev1.ContainerStatus{Name: ec.Name, Image: ec.Image, ImageID: imageID(ec.Image),
			ContainerID: containerID(pod.UID, ec.Name), Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}
		for _, o := range old {
			if o.Name == ec.Name {
				s = o
			}
		}
		out[i] = s
	}
	return out
}

// applyResources reports, on the status of each running container, the
// cpu and memory its spec asks for, as a kubelet that resized it does.
func applyResources(cs []corev1.Container, statuses []corev1.ContainerStatus) {
	for i := range statuses {
		s := &statuses[i]
		if s.State.Running == nil {
			continue
		}
		for _, c := range cs {
			if c.Name == s.Name {
				s.Resources = containerResources(c)
				s.AllocatedResources = s.Resources.Requests
			}
		}
	}
}

// containerResources is the cpu and memory of c's requests and limits.
func containerResources(c corev1.Container) *corev1.ResourceRequirements {
	pick := func(l corev1.ResourceList) corev1.ResourceList {
		var out corev1.ResourceList
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := l[name]; ok {
				if out == nil {
					out = corev1.ResourceList{}
				}
				out[name] = q.DeepCopy()
			}
		}
		return out
	}
	return &corev1.ResourceRequirements{Requests: pick(c.Resources.Requests), Limits: pick(c.Resources.Limits)}
}
