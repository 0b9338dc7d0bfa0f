package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/kubegate/kubegate/test/bench/internal/bench"
)

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

// writeReport prints, per system in the order they first appear, the
// median of every figure over its completed runs, then the time to all
// Running of each system in goalSys as a ratio to each system not in it:
// the ratio of the medians and the median of the ratios within each round.
func writeReport(w io.Writer, results []result, goalSys []string, goal float64) error {
	var names []string
	by := map[string][]result{}
	for _, r := range results {
		if _, ok := by[r.System]; !ok {
			names = append(names, r.System)
		}
		by[r.System] = append(by[r.System], r)
	}
	ok := func(rs []result) []result {
		var out []result
		for _, r := range rs {
			if r.Error == "" && r.RunningSeconds > 0 {
				out = append(out, r)
			}
		}
		return out
	}
	med := func(rs []result, f func(result) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		return bench.Median(xs)
	}
	var procNames []string
	for _, r := range results {
		for k := range r.CPUByProcess {
			if !slices.Contains(procNames, k) {
				procNames = append(procNames, k)
			}
		}
	}
	slices.Sort(procNames)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\t%s\t\n", strings.Join(names, "\t"))
	row := func(label, format string, f func(result) float64) {
		fmt.Fprintf(tw, "%s\t", label)
		for _, n := range names {
			rs := ok(by[n])
			if len(rs) == 0 {
				fmt.Fprint(tw, "-\t")
				continue
			}
			fmt.Fprintf(tw, format+"\t", med(rs, f))
		}
		fmt.Fprintln(tw)
	}
	rowMax := func(label string, f func(result) float64) {
		fmt.Fprintf(tw, "%s\t", label)
		for _, n := range names {
			hi := 0.0
			for _, r := range by[n] {
				hi = max(hi, f(r))
			}
			fmt.Fprintf(tw, "%.0f\t", hi)
		}
		fmt.Fprintln(tw)
	}
	row("seconds to all pods created", "%.1f", func(r result) float64 { return r.CreatedSeconds })
	row("seconds to all pods bound", "%.1f", func(r result) float64 { return r.ScheduledSeconds })
	row("seconds to all pods Running", "%.1f", func(r result) float64 { return r.RunningSeconds })
	row("pods Running per second", "%.0f", func(r result) float64 { return r.PodsPerSecond })
	row("CPU-seconds of the system, create to Running", "%.1f", func(r result) float64 { return r.CPUSeconds })
	for _, p := range procNames {
		fmt.Fprintf(tw, "  of which %s\t", p)
		for _, n := range names {
			rs := ok(by[n])
			if len(rs) == 0 || !slices.ContainsFunc(rs, func(r result) bool { _, has := r.CPUByProcess[p]; return has }) {
				fmt.Fprint(tw, "-\t")
				continue
			}
			fmt.Fprintf(tw, "%.1f\t", med(rs, func(r result) float64 { return r.CPUByProcess[p] }))
		}
		fmt.Fprintln(tw)
	}
	row("CPU-seconds before: start, nodes, idle", "%.1f", func(r result) float64 { return r.StartCPUSeconds })
	row("peak RSS of the system (MiB)", "%.0f", func(r result) float64 { return r.PeakRSSMiB })
	row("machine CPU idle during the run (%)", "%.0f", func(r result) float64 { return r.IdlePct })
	rowMax("highest steal% during a run", func(r result) float64 { return r.StealPct })
	rowMax("highest busy% before a run", func(r result) float64 { return r.BusyPct })
	fmt.Fprintf(tw, "runs completed/all\t")
	for _, n := range names {
		fmt.Fprintf(tw, "%d/%d\t", len(ok(by[n])), len(by[n]))
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
		return err
	}

	var goals []string
	for _, n := range names {
		if slices.Contains(goalSys, n) && len(ok(by[n])) > 0 {
			goals = append(goals, n)
		}
	}
	if len(goals) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\ntime to all pods Running as a ratio (ratio of the medians; by round: median of the ratios within each round)\n")
	for _, gs := range goals {
		g := ok(by[gs])
		for _, n := range names {
			o := ok(by[n])
			if slices.Contains(goalSys, n) || len(o) == 0 {
				continue
			}
			ratio := med(g, func(r result) float64 { return r.RunningSeconds }) / med(o, func(r result) float64 { return r.RunningSeconds })
			var rounds []float64
			for _, a := range g {
				for _, b := range o {
					if a.Round == b.Round {
						rounds = append(rounds, a.RunningSeconds/b.RunningSeconds)
					}
				}
			}
			verdict := "not met"
			if ratio <= goal {
				verdict = "met"
			}
			fmt.Fprintf(w, "%s ÷ %s  %.2f  by round %.2f  goal ≤ %g: %s\n", gs, n, ratio, bench.Median(rounds), goal, verdict)
		}
	}
	return nil
}
