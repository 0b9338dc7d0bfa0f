package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/kubegate/kubegate/test/bench/internal/bench"
)

// goalSystem is the system the project's goals are stated for, each as a
// ratio to goalRef (kube-apiserver on etcd); against another reference (a
// kubegate built from another commit) the ratios carry no verdict.
const (
	goalSystem = "kubegate-up"
	goalRef    = "kube"
)

// system is every run of one system, and the runs its figures stand on.
type system struct {
	name      string
	runs      []result
	used      []result // runs not disturbed, or every run if all were
	errors    int64
	missed    int
	stealPct  float64 // highest of the used runs
	busyPct   float64 // highest of the used runs
	encodings []string
}

// readResults reads one result per non-empty line.
func readResults(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var res result
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// group sorts the results by system, the reference first and the others in
// the order they first appear, leaving out of the figures the runs with
// more than stealMax % of CPU time stolen unless every run of the system
// was; a negative stealMax keeps every run.
func group(results []result, ref string, stealMax float64) []*system {
	var systems []*system
	by := map[string]*system{}
	for _, r := range results {
		s := by[r.System]
		if s == nil {
			s = &system{name: r.System}
			by[r.System] = s
			systems = append(systems, s)
		}
		s.runs = append(s.runs, r)
	}
	for _, s := range systems {
		for _, r := range s.runs {
			s.errors += r.Errors
			s.missed += r.Watch.Missed
			if stealMax < 0 || r.StealPct <= stealMax {
				s.used = append(s.used, r)
			}
			if r.ListEncoding != "" && !slices.Contains(s.encodings, r.ListEncoding) {
				s.encodings = append(s.encodings, r.ListEncoding)
			}
		}
		if len(s.used) == 0 {
			s.used = s.runs
		}
		for _, r := range s.used {
			s.stealPct = max(s.stealPct, r.StealPct)
			s.busyPct = max(s.busyPct, r.BusyPct)
		}
	}
	slices.SortStableFunc(systems, func(a, b *system) int {
		switch {
		case a.name == ref && b.name != ref:
			return -1
		case b.name == ref && a.name != ref:
			return 1
		}
		return 0
	})
	return systems
}

// figure is one row of the table: a number read from each run.
type figure struct {
	name   string
	format string // for the median
	get    func(result) (float64, bool)
}

// create returns a run's create phase with n clients.
func create(r result, n int) (createPhase, bool) {
	for _, p := range r.Creates {
		if p.Clients == n && p.Pods > 0 {
			return p, true
		}
	}
	return createPhase{}, false
}

func always(v float64) (float64, bool) { return v, true }

// positive is v, and whether it was measured (a run that skipped a phase
// leaves it 0).
func positive(v float64) (float64, bool) { return v, v > 0 }

// objects names what the runs created and listed: pods, or custom
// resources.
type objects struct {
	one, many string // "pod", "pods"
	protobuf  bool   // listed in protobuf too
}

// objectsOf returns what results created: custom resources if any run's
// were.
func objectsOf(results []result) objects {
	for _, r := range results {
		if r.Kind == kindCR {
			return objects{one: "custom-resource", many: "custom resources"}
		}
	}
	return objects{one: "pod", many: "pods", protobuf: true}
}

// figures are the table's rows for runs that first created pods objects
// with fill clients and then had timed create phases with these client
// counts.
func figures(clients []int, pods, fill int, o objects) []figure {
	fs := []figure{
		{fmt.Sprintf("%s creates/s, first %d %s, %d clients", o.one, pods, o.many, fill), "%.0f", func(r result) (float64, bool) { return positive(r.Fill.PerSecond) }},
	}
	for _, n := range clients {
		fs = append(fs, figure{fmt.Sprintf("%s creates/s, %d clients", o.one, n), "%.0f", func(r result) (float64, bool) {
			p, ok := create(r, n)
			return p.PerSecond, ok
		}})
	}
	fs = append(fs, figure{fmt.Sprintf("server CPU µs per create, first %d %s", pods, o.many), "%.0f", func(r result) (float64, bool) { return positive(r.Fill.CPUusPerOp) }})
	for _, n := range clients {
		fs = append(fs, figure{fmt.Sprintf("server CPU µs per create, %d clients", n), "%.0f", func(r result) (float64, bool) {
			p, ok := create(r, n)
			return p.CPUusPerOp, ok
		}})
	}
	fs = append(fs, figure{fmt.Sprintf("LIST %d %s, JSON (ms)", pods, o.many), "%.0f", func(r result) (float64, bool) { return positive(r.ListJSONMedian) }})
	if o.protobuf {
		fs = append(fs, figure{fmt.Sprintf("LIST %d %s, protobuf (ms)", pods, o.many), "%.0f", func(r result) (float64, bool) { return positive(r.ListProtoMedian) }})
	}
	fs = append(fs, figure{"server CPU per LIST, JSON (ms)", "%.1f", func(r result) (float64, bool) { return positive(r.ListJSONCPUms) }})
	if o.protobuf {
		fs = append(fs, figure{"server CPU per LIST, protobuf (ms)", "%.1f", func(r result) (float64, bool) { return positive(r.ListProtoCPUms) }})
	}
	fs = append(fs, figure{"first LIST, JSON (ms)", "%.0f", func(r result) (float64, bool) { return positive(r.ListJSONFirst) }})
	if o.protobuf {
		fs = append(fs, figure{"first LIST, protobuf (ms)", "%.0f", func(r result) (float64, bool) { return positive(r.ListProtoFirst) }})
	}
	fs = append(fs, figure{"LIST JSON on the wire (MiB)", "%.1f", func(r result) (float64, bool) { return positive(float64(r.ListJSONBytes) / (1 << 20)) }})
	if o.protobuf {
		fs = append(fs, figure{"LIST protobuf on the wire (MiB)", "%.1f", func(r result) (float64, bool) { return positive(float64(r.ListProtoBytes) / (1 << 20)) }})
	}
	return append(fs,
		figure{"watch delay p50 (ms)", "%.2f", func(r result) (float64, bool) { return r.Watch.P50ms, r.Watch.Watchers > 0 }},
		figure{"watch delay p99 (ms)", "%.2f", func(r result) (float64, bool) { return r.Watch.P99ms, r.Watch.Watchers > 0 }},
		figure{fmt.Sprintf("RSS after %d %s (MiB)", pods, o.many), "%.0f", func(r result) (float64, bool) { return positive(r.RSSMiB) }},
		figure{o.many + " created per run", "%.0f", func(r result) (float64, bool) { return always(float64(podsCreated(r))) }},
		figure{"server CPU-seconds per run", "%.1f", func(r result) (float64, bool) { return always(r.CPUSeconds) }},
		figure{"server CPU-seconds to start", "%.1f", func(r result) (float64, bool) { return always(r.StartCPUSeconds) }},
		figure{"run wall seconds", "%.0f", func(r result) (float64, bool) { return always(r.Seconds) }},
	)
}

// podsCreated returns the pods a run created: a system that creates faster
// creates more in the timed phases, and spends more CPU on them.
func podsCreated(r result) int64 {
	n := r.Fill.Pods + int64(r.Watch.Events)
	for _, p := range r.Creates {
		n += p.Pods
	}
	return n
}

// medianOf returns the median of f over runs, and whether any run had it.
func medianOf(runs []result, f func(result) (float64, bool)) (float64, bool) {
	var xs []float64
	for _, r := range runs {
		if v, ok := f(r); ok {
			xs = append(xs, v)
		}
	}
	return bench.Median(xs), len(xs) > 0
}

// byRound returns the median over the rounds both systems ran of a's
// figure divided by b's: their runs in one round are next to each other
// in time, so this holds better than the ratio of medians when the
// machine's speed drifts.
func byRound(a, b *system, f func(result) (float64, bool)) (float64, bool) {
	var rs []float64
	for _, x := range a.used {
		for _, y := range b.used {
			if x.Round != y.Round {
				continue
			}
			vx, ok1 := f(x)
			vy, ok2 := f(y)
			if ok1 && ok2 && vy > 0 {
				rs = append(rs, vx/vy)
			}
		}
	}
	return bench.Median(rs), len(rs) > 0
}

// goal is one of the project's goals, a bound on a ratio to the reference.
type goal struct {
	what   string
	f      func(result) (float64, bool)
	bound  float64
	atMost bool // the ratio must be at most bound, else at least
}

func (g goal) met(ratio float64) bool {
	if g.atMost {
		return ratio <= g.bound
	}
	return ratio >= g.bound
}

func (g goal) String() string {
	if g.atMost {
		return "≤ " + strconv.FormatFloat(g.bound, 'f', -1, 64)
	}
	return "≥ " + strconv.FormatFloat(g.bound, 'f', -1, 64)
}

// summary writes the table and the ratios.
func summary(w io.Writer, results []result, ref string, stealMax float64) {
	var b bytes.Buffer
	writeSummary(&b, results, ref, stealMax)
	// tabwriter pads the last cell of a row; drop the padding.
	for line := range strings.Lines(b.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}

func writeSummary(w io.Writer, results []result, ref string, stealMax float64) {
	systems := group(results, ref, stealMax)
	var clients []int
	pods, fill := 0, 0
	for _, r := range results {
		for _, p := range r.Creates {
			if !slices.Contains(clients, p.Clients) {
				clients = append(clients, p.Clients)
			}
		}
		pods, fill = max(pods, r.Pods), max(fill, r.Fill.Clients)
	}
	slices.Sort(clients)
	o := objectsOf(results)
	rows := figures(clients, pods, fill, o)
	// The numbers align right; the row names, padded to one width, left.
	width := len("failed requests, missed events")
	for _, f := range rows {
		width = max(width, utf8.RuneCountInString(f.name))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%*s\t", width, "")
	for _, s := range systems {
		fmt.Fprintf(tw, "%s\t", s.name)
	}
	fmt.Fprintln(tw)
	row := func(name string, cell func(*system) string) {
		fmt.Fprintf(tw, "%s%*s\t", name, width-utf8.RuneCountInString(name), "")
		for _, s := range systems {
			fmt.Fprintf(tw, "%s\t", cell(s))
		}
		fmt.Fprintln(tw)
	}
	for _, f := range rows {
		row(f.name, func(s *system) string {
			v, ok := medianOf(s.used, f.get)
			if !ok {
				return "-"
			}
			return fmt.Sprintf(f.format, v)
		})
	}
	row("LIST answers encoded", func(s *system) string {
		if len(s.encodings) == 0 {
			return "identity"
		}
		return strings.Join(s.encodings, ",")
	})
	row("runs used/all", func(s *system) string { return fmt.Sprintf("%d/%d", len(s.used), len(s.runs)) })
	row("highest steal% / busy%", func(s *system) string { return fmt.Sprintf("%.0f / %.0f", s.stealPct, s.busyPct) })
	row("failed requests, missed events", func(s *system) string { return fmt.Sprintf("%d, %d", s.errors, s.missed) })
	tw.Flush()

	var rs *system
	for _, s := range systems {
		if s.name == ref {
			rs = s
		}
	}
	if rs == nil {
		fmt.Fprintf(w, "\nno runs of %s, the reference: no ratios\n", ref)
		return
	}
	first := 16
	if len(clients) > 0 && !slices.Contains(clients, 16) {
		first = clients[0]
	}
	// The goals of LIST times are stated for pods; for custom resources,
	// creates and memory.
	listGoal := 0.7
	if !o.protobuf {
		listGoal = 0
	}
	goals := []goal{
		{fmt.Sprintf("%s creates/s at %d clients", o.one, first), func(r result) (float64, bool) {
			p, ok := create(r, first)
			return p.PerSecond, ok
		}, 3, false},
		{fmt.Sprintf("LIST %d %s time, JSON", pods, o.many), func(r result) (float64, bool) { return positive(r.ListJSONMedian) }, listGoal, true},
	}
	if o.protobuf {
		goals = append(goals, goal{fmt.Sprintf("LIST %d %s time, protobuf", pods, o.many), func(r result) (float64, bool) { return positive(r.ListProtoMedian) }, 0.7, true})
	}
	goals = append(goals, goal{"server CPU per LIST, JSON", func(r result) (float64, bool) { return positive(r.ListJSONCPUms) }, 0, true})
	if o.protobuf {
		goals = append(goals, goal{"server CPU per LIST, protobuf", func(r result) (float64, bool) { return positive(r.ListProtoCPUms) }, 0, true})
	}
	goals = append(goals,
		goal{fmt.Sprintf("RSS after %d %s", pods, o.many), func(r result) (float64, bool) { return positive(r.RSSMiB) }, 0.3, true},
		goal{fmt.Sprintf("server CPU per create at %d clients", first), func(r result) (float64, bool) {
			p, ok := create(r, first)
			return p.CPUusPerOp, ok
		}, 0, true},
		goal{"server CPU-seconds per run", func(r result) (float64, bool) { return positive(r.CPUSeconds) }, 0, true},
	)
	fmt.Fprintf(w, "\nratios to %s (ratio of the medians; by round: median of the ratios within each round)\n", ref)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range systems {
		if s == rs {
			continue
		}
		for _, g := range goals {
			a, ok1 := medianOf(s.used, g.f)
			b, ok2 := medianOf(rs.used, g.f)
			if !ok1 || !ok2 || b == 0 {
				fmt.Fprintf(tw, "%s ÷ %s\t%s\t-\t\n", s.name, ref, g.what)
				continue
			}
			ratio := a / b
			rr := "-"
			if v, ok := byRound(s, rs, g.f); ok {
				rr = fmt.Sprintf("%.2f", v)
			}
			verdict := ""
			if s.name == goalSystem && ref == goalRef && g.bound > 0 {
				verdict = "goal " + g.String() + ": "
				if g.met(ratio) {
					verdict += "met"
				} else {
					verdict += "not met"
				}
			}
			fmt.Fprintf(tw, "%s ÷ %s\t%s\t%.2f\tby round %s\t%s\n", s.name, ref, g.what, ratio, rr, verdict)
		}
	}
	tw.Flush()
}

// runReport prints the summary of the results in file; it returns 1 if
// any run had a failed request or a missed watch event.
func runReport(file, ref string, stealMax float64, stdout, stderr io.Writer) int {
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintf(stderr, "apiload: %v\n", err)
		return 2
	}
	defer f.Close()
	results, err := readResults(f)
	if err != nil {
		fmt.Fprintf(stderr, "apiload: read %s: %v\n", file, err)
		return 2
	}
	if len(results) == 0 {
		fmt.Fprintf(stderr, "apiload: %s holds no results\n", file)
		return 1
	}
	summary(stdout, results, ref, stealMax)
	for _, r := range results {
		if r.Errors > 0 || r.Watch.Missed > 0 {
			return 1
		}
	}
	return 0
}
