package nodesim

import (
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The pod statuses a kubelet reports on the way: ContainerCreating,
// Running (ready or not), restarted, and exited (on its own or after a
// delete). Each starts from the pod's
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

// runningStatus: Running with ip, every container started, init
// containers completed (sidecars, restartPolicy Always, running). The
// containers are ready, and the pod Ready, if ready.
func runningStatus(pod *corev1.Pod, n *node, ip netip.Addr, ready bool, now metav1.Time) corev1.PodStatus {
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
		cs.Ready, cs.Started = ready, ptr.To(true)
	}
	st.InitContainerStatuses = statuses(pod, pod.Spec.InitContainers, st.InitContainerStatuses, func(c corev1.Container, cs *corev1.ContainerStatus) {
		if isSidecar(c) {
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
	setReady(c, pod, ready, now)
	setScheduled(c, now)
	return st
}

// readinessStatus: a Running pod's containers and Ready conditions made
// ready or not.
func readinessStatus(pod *corev1.Pod, ready bool, now metav1.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	set := func(c corev1.Container, cs *corev1.ContainerStatus) {
		if cs.State.Running != nil {
			cs.Ready, cs.Started = ready, ptr.To(true)
		}
	}
	st.InitContainerStatuses = statuses(pod, pod.Spec.InitContainers, st.InitContainerStatuses, func(c corev1.Container, cs *corev1.ContainerStatus) {
		if isSidecar(c) {
			set(c, cs)
		}
	})
	st.ContainerStatuses = statuses(pod, pod.Spec.Containers, st.ContainerStatuses, set)
	setReady(&st.Conditions, pod, ready, now)
	return st
}

// restartedStatus: the containers exited with code and the kubelet
// started them again: each has one more restart, the exit as its last
// state, and runs from now, ready if ready.
func restartedStatus(pod *corev1.Pod, code int32, ready bool, now metav1.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	reason := exitReason(code)
	st.ContainerStatuses = statuses(pod, pod.Spec.Containers, st.ContainerStatuses, func(c corev1.Container, cs *corev1.ContainerStatus) {
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code,
			Reason: reason, StartedAt: started, FinishedAt: now, ContainerID: cs.ContainerID}}
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		cs.RestartCount++
		cs.Ready, cs.Started = ready, ptr.To(true)
	})
	setReady(&st.Conditions, pod, ready, now)
	return st
}

// exitedStatus: every container still running exited with code (init
// containers that keep running, sidecars, with 0); the pod Succeeded if
// code is 0, and Failed otherwise. It is also what a pod being deleted
// ends with (code 0: its containers stop on their signal).
func exitedStatus(pod *corev1.Pod, n *node, code int32, now metav1.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	st.Phase = corev1.PodSucceeded
	if code != 0 {
		st.Phase = corev1.PodFailed
	}
	setHost(&st, n, now)
	stop := func(code int32) func(c corev1.Container, cs *corev1.ContainerStatus) {
		return func(c corev1.Container, cs *corev1.ContainerStatus) {
			if cs.State.Terminated != nil {
				return
			}
			started := now
			if cs.State.Running != nil {
				started = cs.State.Running.StartedAt
			}
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: exitReason(code),
				StartedAt: started, FinishedAt: now, ContainerID: cs.ContainerID}}
			cs.Ready, cs.Started = false, ptr.To(false)
		}
	}
	st.InitContainerStatuses = statuses(pod, pod.Spec.InitContainers, st.InitContainerStatuses, stop(0))
	st.ContainerStatuses = statuses(pod, pod.Spec.Containers, st.ContainerStatuses, stop(code))
	for i := range st.EphemeralContainerStatuses {
		stop(code)(corev1.Container{}, &st.EphemeralContainerStatuses[i])
	}
	c := &st.Conditions
	reason := "PodCompleted"
	if st.Phase == corev1.PodFailed {
		reason = "PodFailed"
	}
	setCondition(c, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", "", now)
	setCondition(c, corev1.PodReady, corev1.ConditionFalse, reason, "", now)
	setCondition(c, corev1.ContainersReady, corev1.ConditionFalse, reason, "", now)
	return st
}

// exitReason is the kubelet's reason for a container that exited with
// code.
func exitReason(code int32) string {
	if code == 0 {
		return "Completed"
	}
	return "Error"
}

func isSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// setReady sets the ContainersReady and Ready conditions of a running
// pod.
func setReady(c *[]corev1.PodCondition, pod *corev1.Pod, ready bool, now metav1.Time) {
	if ready {
		setCondition(c, corev1.PodReady, corev1.ConditionTrue, "", "", now)
		setCondition(c, corev1.ContainersReady, corev1.ConditionTrue, "", "", now)
		return
	}
	msg := "containers with unready status: [" + containerNames(pod.Spec.Containers) + "]"
	setCondition(c, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", msg, now)
	setCondition(c, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", msg, now)
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
