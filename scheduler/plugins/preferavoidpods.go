package plugins

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// NameNodePreferAvoidPods is the pre-1.22 scorer (NodePreferAvoidPodsPriority,
// weight 10000 in the old defaults). It is not in the default profile;
// profiles can enable it to reproduce old decisions.
const NameNodePreferAvoidPods = "NodePreferAvoidPods"

// NodePreferAvoidPods scores 0 on nodes whose
// scheduler.alpha.kubernetes.io/preferAvoidPods annotation names the pod's
// controlling ReplicationController or ReplicaSet, and 100 elsewhere.
type NodePreferAvoidPods struct{}

var _ framework.ScorePlugin = NodePreferAvoidPods{}

// Name implements framework.Plugin.
func (NodePreferAvoidPods) Name() string { return NameNodePreferAvoidPods }

// Score implements framework.ScorePlugin.
func (NodePreferAvoidPods) Score(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	owner := metav1.GetControllerOfNoCopy(pod)
	raw := node.Node.Annotations[v1.PreferAvoidPodsAnnotationKey]
	if owner == nil || (owner.Kind != "ReplicationController" && owner.Kind != "ReplicaSet") || raw == "" {
		return framework.MaxNodeScore, nil
	}
	var avoid v1.AvoidPods
	if err := json.Unmarshal([]byte(raw), &avoid); err != nil {
		return framework.MaxNodeScore, nil
	}
	for _, e := range avoid.PreferAvoidPods {
		if c := e.PodSignature.PodController; c != nil && c.Kind == owner.Kind && c.UID == owner.UID {
			return 0, nil
		}
	}
	return framework.MaxNodeScore, nil
}
