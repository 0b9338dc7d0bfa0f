package framework

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// ErrNoNodesAvailable is returned when the snapshot has no nodes at all.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// Result records one scheduling attempt: every filter verdict and score,
// enough to explain the pick.
type Result struct {
	// Pod is "namespace/name".
	Pod string
	// SchedulerName is the profile's scheduler name.
	SchedulerName string
	// SelectedNode is the pick; "" when the pod did not fit.
	SelectedNode string
	// NumAllNodes is the number of nodes in the snapshot; EvaluatedNodes
	// how many went through the filters (node sampling stops early on large
	// clusters); FeasibleNodes how many passed.
	NumAllNodes    int
	EvaluatedNodes int
	FeasibleNodes  int
	// Plugins are the score plugins, in the order of each NodeScore's
	// Raw and Normalized columns.
	Plugins []PluginWeight
	// Scores holds one entry per feasible node, in the order filtering
	// found them. When exactly one node is feasible, scoring is skipped
	// (ScoringSkipped) and its Raw and Normalized are nil.
	Scores         []NodeScore
	ScoringSkipped bool
	// Rejected holds one entry per node that failed a filter.
	Rejected []Rejection
	// PreFilter is set when a PreFilter plugin rejected the pod outright.
	PreFilter *Rejection

	// rows backs the Raw and Normalized slices of Scores.
	rows []int64
}

// resultPool holds released Results; their slices keep their capacity, so
// a cycle over hundreds of nodes allocates nothing for its explanation.
var resultPool = sync.Pool{New: func() any { return new(Result) }}

func newResult() *Result {
	r := resultPool.Get().(*Result)
	*r = Result{Plugins: r.Plugins[:0], Scores: r.Scores[:0], Rejected: r.Rejected[:0], rows: r.rows}
	return r
}

// rowBuffer returns a zeroed buffer of n scores, reusing the Result's.
func (r *Result) rowBuffer(n int) []int64 {
	if cap(r.rows) < n {
		r.rows = make([]int64, n)
	}
	r.rows = r.rows[:n]
	clear(r.rows)
	return r.rows
}

// Release hands r back for reuse by a later Schedule. After Release
// neither r nor any slice taken from it (such as a NodeScore's Raw) may be
// used. Calling it is optional: an unreleased Result is simply garbage
// collected.
func (r *Result) Release() {
	// Drop what would pin other objects (node names stay: they belong to
	// live nodes, and are overwritten on reuse).
	clear(r.Rejected)
	r.PreFilter = nil
	resultPool.Put(r)
}

// PluginWeight is a score plugin's name, weight, and whether its PreScore
// skipped it for this pod (then it scores 0 everywhere).
type PluginWeight struct {
	Name    string
	Weight  int64
	Skipped bool
}

// NodeScore is one feasible node's scores. Raw[i] and Normalized[i] are the
// score from Plugins[i] before and after normalisation; the weighted score
// is Normalized[i]·Plugins[i].Weight and Total their sum.
type NodeScore struct {
	Node       string
	Raw        []int64
	Normalized []int64
	Total      int64
}

// Rejection is why a node failed filtering: the first plugin that
// rejected it and that plugin's reasons.
type Rejection struct {
	Node    string
	Plugin  string
	Code    Code
	Reasons []string
}

// Histogram counts nodes per rejection reason (a node rejected for two
// reasons counts once under each).
func (r *Result) Histogram() map[string]int {
	h := make(map[string]int)
	for _, rej := range r.Rejected {
		for _, reason := range rej.Reasons {
			h[reason]++
		}
	}
	return h
}

// FitError is returned when no node fits the pod.
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	// Reasons counts nodes per rejection reason.
	Reasons map[string]int
	// PreFilterMsg is set when a PreFilter plugin rejected the pod, and is
	// used instead of Reasons.
	PreFilterMsg string
}

// Error is kube-scheduler's message: "0/N nodes are available: " and the
// reason histogram as "count reason" strings, sorted as strings and joined
// with ", ", then a period.
func (e *FitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "0/%d nodes are available:", e.NumAllNodes)
	if e.PreFilterMsg != "" {
		fmt.Fprintf(&b, " %s.", e.PreFilterMsg)
		return b.String()
	}
	parts := make([]string, 0, len(e.Reasons))
	for reason, n := range e.Reasons {
		parts = append(parts, fmt.Sprintf("%d %s", n, reason))
	}
	sort.Strings(parts)
	if len(parts) > 0 {
		fmt.Fprintf(&b, " %s.", strings.Join(parts, ", "))
	}
	return b.String()
}
