package core

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubegate/kubegate/apiserver"
)

var (
	podSpecDoc   = corev1.PodSpec{}.SwaggerDoc()
	podStatusDoc = corev1.PodStatus{}.SwaggerDoc()
)

var podTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
		{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
		{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
		apiserver.AgeColumn,
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
	row := podRow{reason: podPhaseReason(pod), total: len(pod.Spec.Containers)}
	initSpecs := map[string]*corev1.Container{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		initSpecs[c.Name] = c
		if isSidecar(c) {
			row.total++
		}
	}
	initializing := row.initContainers(pod, initSpecs)
	if !initializing || podConditionTrue(pod, corev1.PodInitialized) {
		row.containers(pod)
	}
	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == "NodeLost":
			row.reason = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			row.reason = "Terminating"
		}
	}
	restartCell := fmt.Sprint(row.restarts)
	if row.restarts != 0 && !row.lastRestart.IsZero() {
		restartCell = fmt.Sprintf("%d (%s ago)", row.restarts, duration.HumanDuration(now.Sub(row.lastRestart)))
	}
	ip := pod.Status.PodIP
	if len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	}
	return []any{pod.Name, fmt.Sprintf("%d/%d", row.ready, row.total), row.reason, restartCell,
		apiserver.Age(pod.CreationTimestamp, now), apiserver.OrNone(ip), apiserver.OrNone(pod.Spec.NodeName), apiserver.OrNone(pod.Status.NominatedNodeName), readinessGatesCell(pod)}
}

// podRow gathers a pod's READY, STATUS and RESTARTS as its containers are
// looked at.
type podRow struct {
	reason       string
	ready, total int
	// restarts and lastRestart count every container; the sidecar ones
	// only init containers that keep running, which are all that counts
	// once the pod is initialized.
	restarts, sidecarRestarts       int32
	lastRestart, lastSidecarRestart time.Time
}

// podPhaseReason is the STATUS a pod's phase, its reason and a scheduling
// gate give, before its containers are looked at.
func podPhaseReason(pod *corev1.Pod) string {
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}
	return reason
}

// restartFinishedAt is when a container last terminated; zero if never.
func restartFinishedAt(cs corev1.ContainerStatus) time.Time {
	if t := cs.LastTerminationState.Terminated; t != nil {
		return t.FinishedAt.Time
	}
	return time.Time{}
}

// initContainers counts the init containers' restarts and running
// sidecars, and reports whether the pod is still initializing: then the
// first init container that has not succeeded gives the STATUS.
func (row *podRow) initContainers(pod *corev1.Pod, initSpecs map[string]*corev1.Container) bool {
	for i, cs := range pod.Status.InitContainerStatuses {
		row.restarts += cs.RestartCount
		if f := restartFinishedAt(cs); f.After(row.lastRestart) {
			row.lastRestart = f
		}
		sidecar := isSidecar(initSpecs[cs.Name])
		if sidecar {
			row.sidecarRestarts += cs.RestartCount
			if f := restartFinishedAt(cs); f.After(row.lastSidecarRestart) {
				row.lastSidecarRestart = f
			}
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode == 0 {
			continue
		}
		if sidecar && cs.Started != nil && *cs.Started {
			if cs.Ready {
				row.ready++
			}
			continue
		}
		row.reason = initReason(cs, i, len(pod.Spec.InitContainers))
		return true
	}
	return false
}

// initReason is the STATUS of a pod held by its i-th of n init
// containers.
func initReason(cs corev1.ContainerStatus, i, n int) string {
	switch t, w := cs.State.Terminated, cs.State.Waiting; {
	case t != nil && t.Reason != "":
		return "Init:" + t.Reason
	case t != nil && t.Signal != 0:
		return fmt.Sprintf("Init:Signal:%d", t.Signal)
	case t != nil:
		return fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
	case w != nil && w.Reason != "" && w.Reason != "PodInitializing":
		return "Init:" + w.Reason
	}
	return fmt.Sprintf("Init:%d/%d", i, n)
}

// containers counts the restarts and ready containers of an initialized
// pod and takes the STATUS from the first waiting or terminated one.
func (row *podRow) containers(pod *corev1.Pod) {
	row.restarts, row.lastRestart = row.sidecarRestarts, row.lastSidecarRestart
	running := false
	failedReason := ""
	for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
		cs := pod.Status.ContainerStatuses[i]
		row.restarts += cs.RestartCount
		if f := restartFinishedAt(cs); f.After(row.lastRestart) {
			row.lastRestart = f
		}
		switch t, w := cs.State.Terminated, cs.State.Waiting; {
		case w != nil && w.Reason != "":
			row.reason = w.Reason
		case t != nil:
			row.reason = terminatedReason(t)
			if t.ExitCode != 0 {
				failedReason = row.reason
			}
		case cs.Ready && cs.State.Running != nil:
			running = true
			row.ready++
		}
	}
	// A container that completed does not make the pod Completed while
	// another still runs.
	if row.reason == "Completed" {
		switch {
		case running && podConditionTrue(pod, corev1.PodReady):
			row.reason = "Running"
		case failedReason != "":
			row.reason = failedReason
		case running:
			row.reason = "NotReady"
		}
	}
}

// terminatedReason is the STATUS a terminated container gives.
func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	}
	return fmt.Sprintf("ExitCode:%d", t.ExitCode)
}

// readinessGatesCell is READINESS GATES: passed/total, or <none>.
func readinessGatesCell(pod *corev1.Pod) string {
	n := len(pod.Spec.ReadinessGates)
	if n == 0 {
		return "<none>"
	}
	passed := 0
	for _, g := range pod.Spec.ReadinessGates {
		if podConditionTrue(pod, g.ConditionType) {
			passed++
		}
	}
	return fmt.Sprintf("%d/%d", passed, n)
}
