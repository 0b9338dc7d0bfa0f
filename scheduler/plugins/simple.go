package plugins

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// Reasons the simple filters give, word for word kube-scheduler's.
const (
	ReasonUnschedulable = "node(s) were unschedulable"
	ReasonNodeName      = "node(s) didn't match the requested node name"
	ReasonNodePorts     = "node(s) didn't have free ports for the requested pod ports"
)

var (
	statusUnschedulable = framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonUnschedulable)
	statusNodeName      = framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonNodeName)
	statusNodePorts     = framework.NewStatus(framework.Unschedulable, ReasonNodePorts)
)

// NodeUnschedulable rejects cordoned nodes (spec.unschedulable) unless the
// pod tolerates the node.kubernetes.io/unschedulable:NoSchedule taint.
type NodeUnschedulable struct{}

var _ framework.FilterPlugin = NodeUnschedulable{}

var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// Name implements framework.Plugin.
func (NodeUnschedulable) Name() string { return NameNodeUnschedulable }

// Filter implements framework.FilterPlugin.
func (NodeUnschedulable) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	if !node.Unschedulable || tolerates(pod.Spec.Tolerations, &unschedulableTaint) {
		return nil
	}
	return statusUnschedulable
}

// NodeName rejects every node but the one a pod's spec.nodeName names.
type NodeName struct{}

var _ framework.FilterPlugin = NodeName{}

// Name implements framework.Plugin.
func (NodeName) Name() string { return NameNodeName }

// Filter implements framework.FilterPlugin.
func (NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	if pod.Spec.NodeName == "" || pod.Spec.NodeName == node.Name() {
		return nil
	}
	return statusNodeName
}

// NodePorts rejects nodes where a host port the pod asks for is taken.
type NodePorts struct{}

var (
	_ framework.PreFilterPlugin = NodePorts{}
	_ framework.FilterPlugin    = NodePorts{}
)

const nodePortsKey = "PreFilter" + NameNodePorts

// Name implements framework.Plugin.
func (NodePorts) Name() string { return NameNodePorts }

// PreFilter implements framework.PreFilterPlugin: pods without host ports
// skip the filter.
func (NodePorts) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) *framework.Status {
	ports := framework.HostPorts(pod)
	if len(ports) == 0 {
		return statusSkip
	}
	state.Write(nodePortsKey, ports)
	return nil
}

// Filter implements framework.FilterPlugin.
func (NodePorts) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	ports, ok := state.Read(nodePortsKey).([]framework.HostPort)
	if !ok {
		ports = framework.HostPorts(pod)
	}
	for _, want := range ports {
		for _, used := range node.UsedPorts {
			if want.Conflicts(used) {
				return statusNodePorts
			}
		}
	}
	return nil
}
