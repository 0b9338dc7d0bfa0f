package nodesim

import (
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The pod statuses a kubelet reports on the way: ContainerCreating,
// Running, and terminated after a delete. Each starts from the pod's
// current status, so qosClass, nominatedNodeName and conditions set by
// others stay.

// creatingStatus: Pending on the node, the containers being created.
func creatingStatus(pod *corev1.Pod, n *node, now metav1.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	st.Phase = corev1.PodPending
	setHost(&st, n, now)
	waiting := "ContainerCreating"
	if len(pod.Spec.InitContainers) > 0 {
		waiting = "PodInitializing"
	}
	st.InitContainerStatuses = statuses(pod, pod.Spec.InitContainers, st.InitContainerStatuses, func(c corev1.Container, cs *corev1.ContainerStatus) {
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
	})
	st.ContainerStatuses = statuses(pod, pod.Spec.Containers, st.ContainerStatuses, func(c corev1.Container, cs *corev1.ContainerStatus) {
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}}
	})
	c := &st.Conditions
	setCondition(c, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", "", now)
	if names := containerNames(pod.Spec.InitContainers); names != "" {
		setCondition(c, corev1.PodInitialized, corev1.ConditionFalse, "ContainersNotInitialized", "containers with incomplete status: ["+names+"]", now)
	} else {
		setCondition(c, corev1.PodInitialized, corev1.ConditionTrue, "", "", now)
	}
	msg := "containers with unready status: [" + containerNames(pod.Spec.Containers) + "]"
	setCondition(c, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", msg, now)
	setCondition(c, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", msg, now)
	setScheduled(c, now)
	return st
}

// runningStatus: Running with ip, every container started and ready, init
// containers completed (sidecars, restartPolicy Always, running).
func runningStatus(pod *corev1.Pod, n *node, ip netip.Addr, now metav1.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	st.Phase = corev1.PodRunning
	setHost(&st, n, now)
	st.PodIP = ip.String()
	st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	running := func(c corev1.Container, cs *corev1.ContainerStatus) {
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
		cs.Ready, cs.Started = true, ptr.To(true)
	}
	st.InitContainerStatuses = statuses(pod, pod.Spec.InitContainers, st.InitContainerStatuses, func(c corev1.Container, cs *corev1.ContainerStatus) {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			running(c, cs)
			return
		}
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed",
			StartedAt: now, FinishedAt: now, ContainerID: cs.ContainerID}}
		cs.Ready, cs.Started = true, ptr.To(false)
	})
	st.ContainerStatuses = statuses(pod, pod.Spec.Containers, st.ContainerStatuses, running)
	c := &st.Conditions
	setCondition(c, corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", "", now)
	setCondition(c, corev1.PodInitialized, corev1.ConditionTrue, "", "", now)
	setCondition(c, corev1.PodReady, corev1.ConditionTrue, "", "", now)
	setCondition(c, corev1.ContainersReady, corev1.ConditionTrue, "", "", now)
	setScheduled(c, now)
	return st
}

// terminatedStatus: every container exited 0 after its stop signal; the
// pod Succeeded.
func terminatedStatus(pod *corev1.Pod, n *node, now metav1.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	st.Phase = corev1.PodSucceeded
	setHost(&st, n, now)
	stop := func(c corev1.Container, cs *corev1.ContainerStatus) {
		if cs.State.Terminated != nil {
			return
		}
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed",
			StartedAt: started, FinishedAt: now, ContainerID: cs.ContainerID}}
		cs.Ready, cs.Started = false, ptr.To(false)
	}
	st.InitContainerStatuses = statuses(pod, pod.Spec.InitContainers, st.InitContainerStatuses, stop)
	st.ContainerStatuses = statuses(pod, pod.Spec.Containers, st.ContainerStatuses, stop)
	c := &st.Conditions
	setCondition(c, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", "", now)
	setCondition(c, corev1.PodReady, corev1.ConditionFalse, "PodCompleted", "", now)
	setCondition(c, corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted", "", now)
	return st
}

func setHost(st *corev1.PodStatus, n *node, now metav1.Time) {
	st.HostIP = n.hostIP.String()
	st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	if st.StartTime == nil {
		st.StartTime = &now
	}
}

// statuses is one status per container, in spec order, each starting from
// the old status of that name (or a fresh one) and passed to set.
func statuses(pod *corev1.Pod, cs []corev1.Container, old []corev1.ContainerStatus, set func(corev1.Container, *corev1.ContainerStatus)) []corev1.ContainerStatus {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(cs))
	for i, c := range cs {
		s := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: imageID(c.Image),
			ContainerID: containerID(pod.UID, c.Name), Started: ptr.To(false)}
		for _, o := range old {
			if o.Name == c.Name {
				s.State = o.State
				s.RestartCount = o.RestartCount
			}
		}
		set(c, &s)
		out[i] = s
	}
	return out
}

func containerNames(cs []corev1.Container) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, " ")
}

// setCondition sets condition t, keeping its transition time when its
// status does not change.
func setCondition(conds *[]corev1.PodCondition, t corev1.PodConditionType, status corev1.ConditionStatus, reason, msg string, now metav1.Time) {
	for i := range *conds {
		c := &(*conds)[i]
		if c.Type == t {
			if c.Status != status {
				c.LastTransitionTime = now
			}
			c.Status, c.Reason, c.Message = status, reason, msg
			return
		}
	}
	*conds = append(*conds, corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: now})
}

// setScheduled makes PodScheduled True: the pod is bound. A True
// condition set by the binding is left as it is.
func setScheduled(conds *[]corev1.PodCondition, now metav1.Time) {
	for _, c := range *conds {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return
		}
	}
	setCondition(conds, corev1.PodScheduled, corev1.ConditionTrue, "", "", now)
}
