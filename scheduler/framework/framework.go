package framework

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// DefaultSchedulerName is the scheduler name pods get when they name none.
const DefaultSchedulerName = "default-scheduler"

// WeightedScorer is a score plugin with its weight.
type WeightedScorer struct {
	Plugin ScorePlugin
	Weight int64
}

// Profile is one scheduler configuration: which plugins run and how much
// each score counts.
type Profile struct {
	// SchedulerName is the spec.schedulerName of the pods this profile
	// schedules; "" means DefaultSchedulerName.
	SchedulerName string
	// PercentageOfNodesToScore bounds how many feasible nodes are looked
	// for: 0 means kube-scheduler's adaptive default, 100 means all.
	PercentageOfNodesToScore int32
	// Filters run in order; a node fails at the first that rejects it.
	// Those that also implement PreFilterPlugin get PreFilter first.
	Filters []FilterPlugin
	// Scorers run on the feasible nodes; those that also implement
	// PreScorePlugin get PreScore first.
	Scorers []WeightedScorer
	// PreBinders run, in order, on the chosen node before the binding.
	PreBinders []PreBindPlugin
}

// Framework schedules pods with one Profile. It is not safe for concurrent
// use: Schedule keeps the round-robin start of the node sample between calls.
type Framework struct {
	profile Profile
	// Parallelism is the number of goroutines that filter and score; 0
	// means GOMAXPROCS.
	Parallelism int
	// IntN returns a uniform random int in [0, n), for breaking ties; nil
	// means math/rand/v2.IntN. Tests inject a deterministic source.
	IntN func(n int) int

	// Scratch buffers reused across cycles.
	nextStart int
	active    []FilterPlugin
	verdicts  []verdict
	feasible  []*NodeInfo
	cols      []int64
	norm      []int64
}

// verdict is one node's filter outcome: nil st is a pass.
type verdict struct {
	st     *Status
	plugin string
}

// New returns a framework running profile.
func New(profile Profile) (*Framework, error) {
	if profile.SchedulerName == "" {
		profile.SchedulerName = DefaultSchedulerName
	}
	if p := profile.PercentageOfNodesToScore; p < 0 || p > 100 {
		return nil, fmt.Errorf("percentageOfNodesToScore %d: want 0 to 100", p)
	}
	seen := map[string]bool{}
	for _, ws := range profile.Scorers {
		if ws.Weight <= 0 {
			return nil, fmt.Errorf("score plugin %s: weight %d: want at least 1", ws.Plugin.Name(), ws.Weight)
		}
		if seen[ws.Plugin.Name()] {
			return nil, fmt.Errorf("score plugin %s: enabled twice", ws.Plugin.Name())
		}
		seen[ws.Plugin.Name()] = true
	}
	return &Framework{profile: profile}, nil
}

// Profile returns the framework's profile.
func (f *Framework) Profile() Profile { return f.profile }

// NumFeasibleNodesToFind is how many feasible nodes kube-scheduler looks
// for among n: all of them below 100 nodes or at 100 percent; otherwise
// pct percent of n (adaptive max(5, 50 − n/125) when pct is 0), at least 100.
func NumFeasibleNodesToFind(pct int32, n int) int {
	if n < 100 || pct >= 100 {
		return n
	}
	if pct <= 0 {
		pct = int32(max(5, 50-n/125))
	}
	return max(100, n*int(pct)/100)
}

func (f *Framework) workers() int {
	if f.Parallelism > 0 {
		return f.Parallelism
	}
	return runtime.GOMAXPROCS(0)
}

func (f *Framework) intN(n int) int {
	if f.IntN != nil {
		return f.IntN(n)
	}
	return rand.IntN(n)
}

// Schedule picks a node for pod in snap. The Result is returned even on
// failure, to explain it. The error is a *FitError when no node fits,
// ErrNoNodesAvailable when there are no nodes, or a plugin error. The caller
// may hand the Result back with Release once done with it, so that its
// buffers serve a later call.
func (f *Framework) Schedule(ctx context.Context, snap *Snapshot, pod *v1.Pod) (*Result, error) {
	res := newResult()
	res.Pod = pod.Namespace + "/" + pod.Name
	res.SchedulerName = f.profile.SchedulerName
	res.NumAllNodes = snap.NumNodes()
	for _, ws := range f.profile.Scorers {
		res.Plugins = append(res.Plugins, PluginWeight{Name: ws.Plugin.Name(), Weight: ws.Weight})
	}
	if snap.NumNodes() == 0 {
		return res, ErrNoNodesAvailable
	}
	pi := NewPodInfo(pod)
	state := NewCycleState(snap, pi)

	active, err := f.preFilter(ctx, state, pod, res)
	if err != nil {
		return res, err
	}
	feasible, err := f.findFeasible(ctx, state, pod, active, res)
	if err != nil {
		return res, err
	}
	if len(feasible) == 0 {
		return res, &FitError{Pod: pod, NumAllNodes: res.NumAllNodes, Reasons: res.Histogram()}
	}
	if len(feasible) == 1 {
		res.ScoringSkipped = true
		res.Scores = append(res.Scores, NodeScore{Node: feasible[0].Name()})
		res.SelectedNode = feasible[0].Name()
		return res, nil
	}
	if err := f.score(ctx, state, pod, feasible, res); err != nil {
		return res, err
	}
	res.SelectedNode = res.Scores[f.selectHost(res.Scores)].Node
	return res, nil
}

// preFilter runs the PreFilter plugins and returns the filters to run for
// the pod: all but those whose PreFilter said Skip.
func (f *Framework) preFilter(ctx context.Context, state *CycleState, pod *v1.Pod, res *Result) ([]FilterPlugin, error) {
	active := f.active[:0]
	for _, fp := range f.profile.Filters {
		pf, ok := fp.(PreFilterPlugin)
		if !ok {
			active = append(active, fp)
			continue
		}
		st := pf.PreFilter(ctx, state, pod)
		switch {
		case st.IsSuccess():
			active = append(active, fp)
		case st.IsSkip():
		case st.Code == Error:
			return nil, fmt.Errorf("running PreFilter plugin %s: %s", pf.Name(), st.Message())
		default:
			res.PreFilter = &Rejection{Plugin: pf.Name(), Code: st.Code, Reasons: st.Reasons}
			return nil, &FitError{Pod: pod, NumAllNodes: res.NumAllNodes, PreFilterMsg: st.Message()}
		}
	}
	f.active = active
	return active, nil
}

// runFilters returns a nil status when node passes every filter, or the
// first rejection and the plugin that made it. Statuses are never modified:
// plugins may return shared ones.
func runFilters(ctx context.Context, state *CycleState, pod *v1.Pod, node *NodeInfo, filters []FilterPlugin) verdict {
	for _, fp := range filters {
		if st := fp.Filter(ctx, state, pod, node); !st.IsSuccess() {
			return verdict{st: st, plugin: fp.Name()}
		}
	}
	return verdict{}
}

// findFeasible filters nodes from the rotating start until enough feasible
// nodes are found (NumFeasibleNodesToFind) or every node was tried. Nodes
// are filtered in parallel in waves; a wave is at most as large as the
// number of nodes still wanted (or the number already tried, whichever is
// more), so the result and the next start do not depend on the parallelism.
func (f *Framework) findFeasible(ctx context.Context, state *CycleState, pod *v1.Pod, filters []FilterPlugin, res *Result) ([]*NodeInfo, error) {
	nodes := state.Snapshot.Nodes()
	n := len(nodes)
	want := NumFeasibleNodesToFind(f.profile.PercentageOfNodesToScore, n)
	start := f.nextStart % n
	feasible := f.feasible[:0]
	defer func() {
		// Keep the buffer, not the nodes, for the next cycle.
		f.feasible = feasible[:0]
	}()
	processed := 0
	for processed < n && len(feasible) < want {
		w := min(n-processed, max(want-len(feasible), processed))
		if cap(f.verdicts) < w {
			f.verdicts = make([]verdict, w)
		}
		verdicts := f.verdicts[:w]
		base := start + processed
		f.parallel(w, len(filters), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				verdicts[i] = runFilters(ctx, state, pod, nodes[(base+i)%n], filters)
			}
		})
		for i := 0; i < w && len(feasible) < want; i++ {
			processed++
			node := nodes[(base+i)%n]
			st, plugin := verdicts[i].st, verdicts[i].plugin
			switch {
			case st.IsSuccess():
				feasible = append(feasible, node)
			case st.Code == Error:
				return nil, fmt.Errorf("running Filter plugin %s on node %s: %s", plugin, node.Name(), st.Message())
			default:
				res.Rejected = append(res.Rejected, Rejection{Node: node.Name(), Plugin: plugin, Code: st.Code, Reasons: st.Reasons})
			}
		}
		clear(verdicts)
	}
	f.nextStart = (start + processed) % n
	res.EvaluatedNodes = processed
	res.FeasibleNodes = len(feasible)
	return feasible, nil
}

func (f *Framework) score(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo, res *Result) error {
	scorers := f.profile.Scorers
	for i, ws := range scorers {
		ps, ok := ws.Plugin.(PreScorePlugin)
		if !ok {
			continue
		}
		st := ps.PreScore(ctx, state, pod, nodes)
		switch {
		case st.IsSuccess():
		case st.IsSkip():
			res.Plugins[i].Skipped = true
		default:
			return fmt.Errorf("running PreScore plugin %s: %s", ps.Name(), st.Message())
		}
	}
	m, p := len(nodes), len(scorers)
	activeScorers := 0
	for i := range scorers {
		if !res.Plugins[i].Skipped {
			activeScorers++
		}
	}
	// Plugin i's scores are cols[i*m : (i+1)*m]; a skipped plugin's stay 0.
	if cap(f.cols) < p*m {
		f.cols = make([]int64, p*m)
	}
	cols := f.cols[:p*m]
	clear(cols)
	var mu sync.Mutex
	var firstErr error
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	f.parallel(m, activeScorers, func(lo, hi int) {
		for i, ws := range scorers {
			if res.Plugins[i].Skipped {
				continue
			}
			col := cols[i*m : (i+1)*m]
			if bs, ok := ws.Plugin.(BatchScorePlugin); ok {
				if st := bs.ScoreNodes(ctx, state, pod, nodes[lo:hi], col[lo:hi]); !st.IsSuccess() {
					fail(fmt.Errorf("running Score plugin %s: %s", ws.Plugin.Name(), st.Message()))
					return
				}
				continue
			}
			for j := lo; j < hi; j++ {
				s, st := ws.Plugin.Score(ctx, state, pod, nodes[j])
				if !st.IsSuccess() {
					fail(fmt.Errorf("running Score plugin %s on node %s: %s", ws.Plugin.Name(), nodes[j].Name(), st.Message()))
					return
				}
				col[j] = s
			}
		}
	})
	if firstErr != nil {
		return firstErr
	}
	// Normalise copies of the columns, keeping the raw scores.
	if cap(f.norm) < p*m {
		f.norm = make([]int64, p*m)
	}
	norm := f.norm[:p*m]
	copy(norm, cols)
	for i, ws := range scorers {
		if res.Plugins[i].Skipped {
			continue // its raw and normalised scores stay 0
		}
		col := norm[i*m : (i+1)*m]
		if nz, ok := ws.Plugin.(ScoreNormalizer); ok {
			if st := nz.NormalizeScore(ctx, state, pod, nodes, col); !st.IsSuccess() {
				return fmt.Errorf("running NormalizeScore of plugin %s: %s", ws.Plugin.Name(), st.Message())
			}
		}
		for _, s := range col {
			if s < 0 || s > MaxNodeScore {
				return fmt.Errorf("plugin %q returns an invalid score %d, it should in the range of [0, %d] after normalizing", ws.Plugin.Name(), s, MaxNodeScore)
			}
		}
	}
	// Node j's row is rows[j*2p : (j+1)*2p]: p raw scores, then p
	// normalised ones.
	rows := res.rowBuffer(2 * p * m)
	scores := res.Scores[:0]
	for j, node := range nodes {
		row := rows[2*p*j : 2*p*(j+1) : 2*p*(j+1)]
		scores = append(scores, NodeScore{Node: node.Name(), Raw: row[:p:p], Normalized: row[p:]})
	}
	for i, ws := range scorers {
		if res.Plugins[i].Skipped {
			continue
		}
		raw, nc := cols[i*m:(i+1)*m], norm[i*m:(i+1)*m]
		for j := range scores {
			rows[2*p*j+i], rows[2*p*j+p+i] = raw[j], nc[j]
			scores[j].Total += nc[j] * ws.Weight
		}
	}
	res.Scores = scores
	return nil
}

// selectHost returns the index of the highest total, choosing uniformly
// among ties by reservoir sampling: the k-th tie replaces the pick with
// probability 1/k.
func (f *Framework) selectHost(scores []NodeScore) int {
	best, ties := 0, 1
	for j := 1; j < len(scores); j++ {
		switch {
		case scores[j].Total > scores[best].Total:
			best, ties = j, 1
		case scores[j].Total == scores[best].Total:
			ties++
			if f.intN(ties) == 0 {
				best = j
			}
		}
	}
	return best
}

// parallelMinWork is the number of node×plugin evaluations below which
// one goroutine does the work. An evaluation of a default plugin costs tens
// of nanoseconds, so below this the wake-up of another thread costs about
// as much as it saves, and on a shared machine (the scheduler beside the
// API server) the extra CPU is not free: with 5,000 nodes the default
// sample of 500 nodes × 4 active plugins runs on one goroutine.
const parallelMinWork = 4096

// parallel calls fn over [0, n) split into contiguous chunks, one per
// worker, when n·perItem is large enough to pay for the goroutines.
func (f *Framework) parallel(n, perItem int, fn func(lo, hi int)) {
	w := f.workers()
	if w <= 1 || n*max(perItem, 1) < parallelMinWork || n < 2 {
		fn(0, n)
		return
	}
	w = min(w, n)
	chunk := (n + w - 1) / w
	var wg sync.WaitGroup
	for lo := chunk; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo int) {
			defer wg.Done()
			fn(lo, min(lo+chunk, n))
		}(lo)
	}
	fn(0, min(chunk, n))
	wg.Wait()
}

// IsFitError reports whether err says the pod fits no node.
func IsFitError(err error) bool {
	var fe *FitError
	return errors.As(err, &fe)
}
