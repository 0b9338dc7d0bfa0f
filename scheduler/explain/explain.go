// Package explain turns a scheduling attempt (framework.Result) into what
// people read: a node × plugin table, a size-bounded pod annotation, event
// messages, and log lines shaped like kube-scheduler's -v=10 output.
package explain

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// AnnotationKey is the pod annotation the scheduler writes its explanation
// to.
const AnnotationKey = "scheduler.kubegate.io/explain"

// Annotation bounds: the top AnnotationTopNodes feasible nodes are kept in
// full, other feasible nodes only as a count, and rejected nodes as counts
// per reason. Reasons beyond AnnotationMaxReasons (the rarest) are folded
// into "other reasons". The encoded value never exceeds
// MaxAnnotationBytes (16 KiB, well inside the 256 KiB Kubernetes allows for
// all of an object's annotations).
const (
	AnnotationTopNodes   = 5
	AnnotationMaxReasons = 20
	MaxAnnotationBytes   = 16 * 1024
)

// Explanation is a scheduling attempt in a form that survives JSON.
type Explanation struct {
	Pod       string `json:"pod"`
	Scheduler string `json:"scheduler,omitempty"`
	// Node is the pick; empty when the pod did not fit.
	Node string `json:"node,omitempty"`
	// Error is the failure message (for example "0/3 nodes are available:
	// 3 Insufficient cpu.").
	Error     string   `json:"error,omitempty"`
	Nodes     int      `json:"nodes"`
	Evaluated int      `json:"evaluated"`
	Feasible  int      `json:"feasible"`
	Plugins   []Plugin `json:"plugins"`
	// Scores are feasible nodes, best first (ties by name).
	Scores []Score `json:"scores,omitempty"`
	// MoreFeasible counts feasible nodes left out of Scores.
	MoreFeasible int `json:"moreFeasible,omitempty"`
	// Rejected lists rejected nodes one by one; RejectedCounts counts them
	// per reason instead. Either may be set.
	Rejected       []Rejected     `json:"rejected,omitempty"`
	RejectedCounts map[string]int `json:"rejectedCounts,omitempty"`
	// ScoringSkipped: exactly one node was feasible, so none was scored.
	ScoringSkipped bool `json:"scoringSkipped,omitempty"`
}

// Plugin is a score plugin column.
type Plugin struct {
	Name    string `json:"name"`
	Weight  int64  `json:"weight"`
	Skipped bool   `json:"skipped,omitempty"`
}

// Score is one feasible node's row; Raw[i] and Normalized[i] are for
// Plugins[i].
type Score struct {
	Node       string  `json:"node"`
	Raw        []int64 `json:"raw,omitempty"`
	Normalized []int64 `json:"normalized,omitempty"`
	Total      int64   `json:"total"`
}

// Rejected is one node that failed a filter.
type Rejected struct {
	Node    string   `json:"node"`
	Plugin  string   `json:"plugin"`
	Reasons []string `json:"reasons"`
}

// FromResult converts res (and the error Schedule returned with it). With
// top < 0 every node is kept; otherwise the top feasible nodes are kept and
// rejections are counted per reason.
func FromResult(res *framework.Result, err error, top int) *Explanation {
	e := &Explanation{
		Pod: res.Pod, Scheduler: res.SchedulerName, Node: res.SelectedNode,
		Nodes: res.NumAllNodes, Evaluated: res.EvaluatedNodes, Feasible: res.FeasibleNodes,
		ScoringSkipped: res.ScoringSkipped,
	}
	if err != nil {
		e.Error = err.Error()
	}
	for _, p := range res.Plugins {
		e.Plugins = append(e.Plugins, Plugin{Name: p.Name, Weight: p.Weight, Skipped: p.Skipped})
	}
	if top >= 0 {
		e.Scores = topScores(res.Scores, e.Node, top)
		e.MoreFeasible = len(res.Scores) - len(e.Scores)
		if h := res.Histogram(); len(h) > 0 {
			e.RejectedCounts = h
		}
		return e
	}
	e.Scores = topScores(res.Scores, e.Node, len(res.Scores))
	for _, r := range res.Rejected {
		e.Rejected = append(e.Rejected, Rejected{Node: r.Node, Plugin: r.Plugin, Reasons: r.Reasons})
	}
	slices.SortFunc(e.Rejected, func(a, b Rejected) int { return cmp.Compare(a.Node, b.Node) })
	if res.PreFilter != nil {
		e.Rejected = append(e.Rejected, Rejected{Node: "*", Plugin: res.PreFilter.Plugin, Reasons: res.PreFilter.Reasons})
	}
	return e
}

// better orders feasible nodes for display: higher total first, ties by
// name.
func better(a, b *framework.NodeScore) bool {
	if a.Total != b.Total {
		return a.Total > b.Total
	}
	return a.Node < b.Node
}

// topScores returns the n best of scores, best first (by better), with the
// pick, if among them, first even when it won a tie against a node sorting
// earlier. It keeps a sorted list of at most n while passing over scores
// once, so the top few of many nodes cost no full sort. The rows are
// copied: the Result's buffers may be reused.
func topScores(scores []framework.NodeScore, pick string, n int) []Score {
	n = min(n, len(scores))
	if n <= 0 {
		return nil
	}
	if n > maxSelectTop {
		return sortedScores(scores, pick, n)
	}
	best := make([]*framework.NodeScore, 0, n)
	var picked *framework.NodeScore
	if pick != "" {
		for i := range scores {
			if scores[i].Node == pick {
				picked = &scores[i]
				best = append(best, picked)
				break
			}
		}
	}
	head := len(best) // the pick stays in front
	for i := range scores {
		s := &scores[i]
		if s == picked || (len(best) == n && (n == head || !better(s, best[n-1]))) {
			continue
		}
		j := len(best)
		if j == n {
			j-- // drop the last
		} else {
			best = append(best, nil)
		}
		for j > head && better(s, best[j-1]) {
			best[j] = best[j-1]
			j--
		}
		best[j] = s
	}
	return copyScores(best)
}

// maxSelectTop is the largest n topScores selects by insertion; above it
// a full sort is cheaper.
const maxSelectTop = 32

// sortedScores is topScores by sorting every score.
func sortedScores(scores []framework.NodeScore, pick string, n int) []Score {
	all := make([]*framework.NodeScore, len(scores))
	for i := range scores {
		all[i] = &scores[i]
	}
	slices.SortFunc(all, func(a, b *framework.NodeScore) int {
		switch {
		case better(a, b):
			return -1
		case better(b, a):
			return 1
		}
		return 0
	})
	if i := slices.IndexFunc(all, func(s *framework.NodeScore) bool { return s.Node == pick }); i > 0 {
		p := all[i]
		copy(all[1:i+1], all[:i])
		all[0] = p
	}
	return copyScores(all[:n])
}

func copyScores(in []*framework.NodeScore) []Score {
	out := make([]Score, len(in))
	for i, s := range in {
		out[i] = Score{Node: s.Node, Raw: slices.Clone(s.Raw), Normalized: slices.Clone(s.Normalized), Total: s.Total}
	}
	return out
}

// Annotation returns the bounded annotation value for res.
func Annotation(res *framework.Result, err error) (string, error) {
	return EncodeAnnotation(FromResult(res, err, AnnotationTopNodes))
}

// EncodeAnnotation returns the bounded annotation value for e, an
// explanation from FromResult with top AnnotationTopNodes. It sheds detail
// from e until the value fits, so afterwards e is what the annotation says.
func EncodeAnnotation(e *Explanation) (string, error) {
	foldReasons(e.RejectedCounts, AnnotationMaxReasons)
	for {
		b, err := json.Marshal(e)
		if err != nil {
			return "", err
		}
		if len(b) <= MaxAnnotationBytes {
			return string(b), nil
		}
		// Shed detail until it fits: nodes first, then reasons.
		switch {
		case len(e.Scores) > 1:
			e.MoreFeasible += len(e.Scores) - 1
			e.Scores = e.Scores[:1]
		case len(e.RejectedCounts) > 1:
			foldReasons(e.RejectedCounts, len(e.RejectedCounts)/2)
		case len(e.Error) > 1024:
			e.Error = e.Error[:1024]
		default:
			return "", errors.New("explanation does not fit in an annotation")
		}
	}
}

// otherReasons collects the rarest reasons past the bound.
const otherReasons = "other reasons"

// foldReasons keeps the n most common reasons (ties by name) and adds the
// rest up under "other reasons".
func foldReasons(h map[string]int, n int) {
	if len(h) <= n {
		return
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(h[b], h[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	other := 0
	for _, k := range keys[n-1:] {
		other += h[k]
		delete(h, k)
	}
	h[otherReasons] += other
}

// ParseAnnotation decodes an annotation value.
func ParseAnnotation(v string) (*Explanation, error) {
	var e Explanation
	if err := json.Unmarshal([]byte(v), &e); err != nil {
		return nil, fmt.Errorf("decode %s annotation: %w", AnnotationKey, err)
	}
	return &e, nil
}

// MaxEventMessage is the longest event message the API server accepts
// (the note field of events.k8s.io/v1 is limited to 1 KiB).
const MaxEventMessage = 1024

// ScheduledMessage is the Scheduled event's message: kube-scheduler's
// "Successfully assigned ns/name to node", then the winning total and the
// runner-up.
func ScheduledMessage(e *Explanation) string {
	msg := fmt.Sprintf("Successfully assigned %s to %s", e.Pod, e.Node)
	if len(e.Scores) > 1 {
		msg += fmt.Sprintf(" (score %d; next %s %d; %d of %d nodes feasible)", e.Scores[0].Total, e.Scores[1].Node, e.Scores[1].Total, e.Feasible, e.Nodes)
	}
	return truncate(msg, MaxEventMessage)
}

// FailedMessage is the FailedScheduling event's message: the error text.
func FailedMessage(err error) string { return truncate(err.Error(), MaxEventMessage) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
