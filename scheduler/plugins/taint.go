package plugins

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// TaintToleration rejects nodes with a NoSchedule or NoExecute taint the
// pod does not tolerate, and scores nodes by how few PreferNoSchedule
// taints the pod does not tolerate.
type TaintToleration struct{}

var (
	_ framework.FilterPlugin    = TaintToleration{}
	_ framework.PreScorePlugin  = TaintToleration{}
	_ framework.ScorePlugin     = TaintToleration{}
	_ framework.ScoreNormalizer = TaintToleration{}

	_ framework.BatchScorePlugin = TaintToleration{}
)

const taintPreScoreKey = "PreScore" + NameTaintToleration

// Name implements framework.Plugin.
func (TaintToleration) Name() string { return NameTaintToleration }

// Filter implements framework.FilterPlugin. The reason names the first
// untolerated taint, as "node(s) had untolerated taint {key: value}".
func (TaintToleration) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	if t, ok := untoleratedTaint(node.Taints, pod.Spec.Tolerations); ok {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable,
			fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value))
	}
	return nil
}

// PreScore implements framework.PreScorePlugin: it keeps the tolerations
// that apply to PreferNoSchedule taints.
func (TaintToleration) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	var prefer []v1.Toleration
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			prefer = append(prefer, t)
		}
	}
	state.Write(taintPreScoreKey, prefer)
	return nil
}

// Score implements framework.ScorePlugin: the raw score is the number of
// untolerated PreferNoSchedule taints.
func (TaintToleration) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	prefer, _ := state.Read(taintPreScoreKey).([]v1.Toleration)
	return untoleratedPreferred(prefer, node), nil
}

// ScoreNodes implements framework.BatchScorePlugin.
func (TaintToleration) ScoreNodes(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodes []*framework.NodeInfo, scores []int64) *framework.Status {
	prefer, _ := state.Read(taintPreScoreKey).([]v1.Toleration)
	for i, node := range nodes {
		scores[i] = untoleratedPreferred(prefer, node)
	}
	return nil
}

func untoleratedPreferred(prefer []v1.Toleration, node *framework.NodeInfo) int64 {
	var n int64
	for i := range node.Taints {
		t := &node.Taints[i]
		if t.Effect == v1.TaintEffectPreferNoSchedule && !tolerates(prefer, t) {
			n++
		}
	}
	return n
}

// NormalizeScore implements framework.ScoreNormalizer: reversed, so the
// node with the fewest untolerated taints scores 100.
func (TaintToleration) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, _ []*framework.NodeInfo, scores []int64) *framework.Status {
	framework.DefaultNormalizeScore(true, scores)
	return nil
}
