// Package framework is kube-scheduler's filter-and-score model over an
// in-memory Snapshot: plugin interfaces, a Profile of enabled plugins and
// weights, and Framework.Schedule, which filters a sample of the nodes,
// scores the feasible ones, and picks one, recording every verdict and
// score in a Result so the decision can be explained.
package framework

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// MaxNodeScore is the highest score a plugin may give after normalisation.
const MaxNodeScore int64 = 100

// Code is a plugin result.
type Code int

// Status codes, as in kube-scheduler.
const (
	Success Code = iota
	// Unschedulable: the pod does not fit the node now; it may later.
	Unschedulable
	// UnschedulableAndUnresolvable: nothing short of changing the node or
	// the pod will make it fit.
	UnschedulableAndUnresolvable
	// Error: the plugin failed; the scheduling attempt fails.
	Error
	// Skip: from PreFilter or PreScore, the plugin has nothing to do for
	// this pod; its Filter or Score is not called.
	Skip
)

func (c Code) String() string {
	switch c {
	case Success:
		return "Success"
	case Unschedulable:
		return "Unschedulable"
	case UnschedulableAndUnresolvable:
		return "UnschedulableAndUnresolvable"
	case Error:
		return "Error"
	case Skip:
		return "Skip"
	}
	return "Unknown"
}

// Status is a plugin's verdict. A nil *Status is Success. The framework
// never modifies a status, so plugins may return shared ones.
type Status struct {
	Code    Code
	Reasons []string
}

// NewStatus returns a status with code and reasons.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{Code: code, Reasons: reasons}
}

// IsSuccess reports whether s is nil or Success.
func (s *Status) IsSuccess() bool { return s == nil || s.Code == Success }

// IsSkip reports whether s is Skip.
func (s *Status) IsSkip() bool { return s != nil && s.Code == Skip }

// Message joins the reasons with ", ".
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.Reasons, ", ")
}

// CycleState carries data between one pod's extension points. Plugins write
// it in PreFilter and PreScore (which run one at a time) and only read it in
// Filter and Score (which run in parallel).
type CycleState struct {
	// Snapshot is the cluster being scheduled onto.
	Snapshot *Snapshot
	// Pod is the pod being scheduled, parsed.
	Pod  *PodInfo
	data map[string]any
}

// NewCycleState returns the state for scheduling pod onto snap.
func NewCycleState(snap *Snapshot, pod *PodInfo) *CycleState {
	return &CycleState{Snapshot: snap, Pod: pod, data: make(map[string]any, 8)}
}

// Read returns what was written under key, or nil.
func (c *CycleState) Read(key string) any { return c.data[key] }

// Write stores v under key.
func (c *CycleState) Write(key string, v any) { c.data[key] = v }

// Plugin is anything with a name.
type Plugin interface {
	Name() string
}

// PreFilterPlugin computes per-pod state before filtering. Skip means the
// plugin's Filter is not called for this pod; a failure rejects the pod
// on every node with the status's message.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *v1.Pod) *Status
}

// FilterPlugin decides whether pod fits node.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *v1.Pod, node *NodeInfo) *Status
}

// PreBindPlugin runs once a node is chosen, before the pod is bound to
// it: it writes what the binding needs (the pod's volumes, bound or to be
// provisioned for the node) and may wait for it. A failure sends the pod
// back to the queue unbound, as a failed binding does.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, pod *v1.Pod, node *v1.Node) *Status
}

// PreScorePlugin computes per-pod state before scoring, given the
// feasible nodes. Skip means the plugin's Score is not called for this pod
// and the plugin adds nothing.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status
}

// ScorePlugin ranks a feasible node. Without NormalizeScore the score must
// already be in 0..MaxNodeScore.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *v1.Pod, node *NodeInfo) (int64, *Status)
}

// BatchScorePlugin is a score plugin that can also score many nodes in
// one call, saving a call and a CycleState lookup per node. The framework
// calls ScoreNodes instead of Score when a plugin has it; scores[i] is the
// score of nodes[i] and must equal what Score returns for it. A failure
// fails the whole cycle, as a failed Score does.
type BatchScorePlugin interface {
	ScorePlugin
	ScoreNodes(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo, scores []int64) *Status
}

// ScoreNormalizer is implemented by score plugins whose raw scores need
// mapping into 0..MaxNodeScore. scores[i] belongs to nodes[i].
type ScoreNormalizer interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo, scores []int64) *Status
}

// DefaultNormalizeScore maps each score s to MaxNodeScore·s/max, or with
// reverse to MaxNodeScore − MaxNodeScore·s/max. When every score is 0 they
// all become MaxNodeScore with reverse and stay 0 without.
func DefaultNormalizeScore(reverse bool, scores []int64) {
	var hi int64
	for _, s := range scores {
		hi = max(hi, s)
	}
	if hi == 0 {
		if reverse {
			for i := range scores {
				scores[i] = MaxNodeScore
			}
		}
		return
	}
	for i, s := range scores {
		s = MaxNodeScore * s / hi
		if reverse {
			s = MaxNodeScore - s
		}
		scores[i] = s
	}
}
