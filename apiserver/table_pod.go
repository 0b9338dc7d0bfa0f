package apiserver

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

var (
	podSpecDoc   = corev1.PodSpec{}.SwaggerDoc()
	podStatusDoc = corev1.PodStatus{}.SwaggerDoc()
)

var podTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
		{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
		{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
		ageColumn,
		{Name: "IP", Type: "string", Priority: 1, Description: podStatusDoc["podIP"]},
		{Name: "Node", Type: "string", Priority: 1, Description: podSpecDoc["nodeName"]},
		{Name: "Nominated Node", Type: "string", Priority: 1, Description: podStatusDoc["nominatedNodeName"]},
		{Name: "Readiness Gates", Type: "string", Priority: 1, Description: podSpecDoc["readinessGates"]},
	},
	Cells:      podCells,
	Conditions: podConditions,
}

// podConditions marks the row of a pod that has finished as Completed, so
// that kubectl can leave it out unless asked for all pods (B.5).
func podConditions(obj runtime.Object) []metav1.TableRowCondition {
	switch obj.(*corev1.Pod).Status.Phase {
	case corev1.PodSucceeded:
		return []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue,
			Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	case corev1.PodFailed:
		return []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue,
			Reason: string(corev1.PodFailed), Message: "The pod failed."}}
	}
	return nil
}

// isSidecar reports whether c is an init container that keeps running
// beside the main containers (restartPolicy Always).
func isSidecar(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func podConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podCells computes the READY, STATUS and RESTARTS columns the way kubectl
// shows them (B.5): the phase, overridden by the reason of the first
// failing init container or of a waiting or terminated container, and
// "Terminating" once a pod that has not finished is being deleted. Sidecar
// init containers count as containers of the pod.
func podCells(obj runtime.Object, now time.Time) []any {
	pod := obj.(*corev1.Pod)
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}

	total := len(pod.Spec.Containers)
	initSpecs := map[string]*corev1.Container{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		initSpecs[c.Name] = c
		if isSidecar(c) {
			total++
		}
	}
	// restarts and lastRestart count every container; the sidecar ones
	// only init containers that keep running, which are all that counts
	// once the pod is initialized.
	var restarts, sidecarRestarts int32
	var lastRestart, lastSidecarRestart time.Time
	finishedAt := func(cs corev1.ContainerStatus) time.Time {
		if t := cs.LastTerminationState.Terminated; t != nil {
			return t.FinishedAt.Time
		}
		return time.Time{}
	}
	ready := 0
	initializing := false
	for i, cs := range pod.Status.InitContainerStatuses {
		restarts += cs.RestartCount
		if f := finishedAt(cs); f.After(lastRestart) {
			lastRestart = f
		}
		sidecar := isSidecar(initSpecs[cs.Name])
		if sidecar {
			sidecarRestarts += cs.RestartCount
			if f := finishedAt(cs); f.After(lastSidecarRestart) {
				lastSidecarRestart = f
			}
		}
		t, w := cs.State.Terminated, cs.State.Waiting
		if t != nil && t.ExitCode == 0 {
			continue
		}
		if sidecar && cs.Started != nil && *cs.Started {
			if cs.Ready {
				ready++
			}
			continue
		}
		initializing = true
		switch {
		case t != nil && t.Reason != "":
			reason = "Init:" + t.Reason
		case t != nil && t.Signal != 0:
			reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
		case t != nil:
			reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
		case w != nil && w.Reason != "" && w.Reason != "PodInitializing":
			reason = "Init:" + w.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		break
	}

	if !initializing || podConditionTrue(pod, corev1.PodInitialized) {
		restarts, lastRestart = sidecarRestarts, lastSidecarRestart
		running := false
		failedReason := ""
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := pod.Status.ContainerStatuses[i]
			restarts += cs.RestartCount
			if f := finishedAt(cs); f.After(lastRestart) {
				lastRestart = f
			}
			switch t, w := cs.State.Terminated, cs.State.Waiting; {
			case w != nil && w.Reason != "":
				reason = w.Reason
			case t != nil:
				switch {
				case t.Reason != "":
					reason = t.Reason
				case t.Signal != 0:
					reason = fmt.Sprintf("Signal:%d", t.Signal)
				default:
					reason = fmt.Sprintf("ExitCode:%d", t.ExitCode)
				}
				if t.ExitCode != 0 {
					failedReason = reason
				}
			case cs.Ready && cs.State.Running != nil:
				running = true
				ready++
			}
		}
		// A container that completed does not make the pod Completed while
		// another still runs.
		if reason == "Completed" {
			switch {
			case running && podConditionTrue(pod, corev1.PodReady):
				reason = "Running"
			case failedReason != "":
				reason = failedReason
			case running:
				reason = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == "NodeLost":
			reason = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			reason = "Terminating"
		}
	}

	restartCell := fmt.Sprint(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartCell = fmt.Sprintf("%d (%s ago)", restarts, duration.HumanDuration(now.Sub(lastRestart)))
	}
	ip := pod.Status.PodIP
	if len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if n := len(pod.Spec.ReadinessGates); n > 0 {
		passed := 0
		for _, g := range pod.Spec.ReadinessGates {
			if podConditionTrue(pod, g.ConditionType) {
				passed++
			}
		}
		gates = fmt.Sprintf("%d/%d", passed, n)
	}
	return []any{pod.Name, fmt.Sprintf("%d/%d", ready, total), reason, restartCell,
		age(pod.CreationTimestamp, now), orNone(ip), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), gates}
}
