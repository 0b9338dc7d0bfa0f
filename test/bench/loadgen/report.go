package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/kubegate/kubegate/test/bench/internal/bench"
)

// cell is every run of one system in one scenario.
type cell struct {
	label string
	runs  []result
}

// summary is the medians of a cell's undisturbed runs.
type summary struct {
	label              string
	runs, used         int     // all runs; those the figures stand on
	rps, p50, p99      float64 // medians; latencies in µs
	errors             uint64  // every failed attempt, warm-up included
	busyPct            float64 // highest "busy_pct" tag: CPU use seen before a run
	stealPct           float64 // highest "steal_pct" tag: CPU time stolen by the hypervisor during a run
	idlePct            float64 // median "idle_pct" tag: CPU time no process used during a run
	cpuUs              float64 // median "cpu_us_per_req" tag: the system's CPU per request
	allCPUUs           float64 // median of the system's, the backend's and the load generator's CPU per request
	hasBusy, emptyRuns bool
	hasSteal, hasIdle  bool
	hasCPU, hasAllCPU  bool
	roundRPS           map[string]float64 // req/s by the "round" tag
	roundCPU           map[string]float64 // CPU per request by the "round" tag
}

// roundRatio returns the median, over the rounds both ran, of a's figure
// divided by b's (req/s, or CPU per request), each given by round. The
// systems' runs of one round are next to each other in time, so this
// ratio holds better than the ratio of medians when the machine's speed
// drifts during a long run; "-" when they share no round.
func roundRatio(a, b map[string]float64) string {
	var rs []float64
	for round, x := range a {
		if y, ok := b[round]; ok && y > 0 {
			rs = append(rs, x/y)
		}
	}
	if len(rs) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", bench.Median(rs))
}

// tag returns r's tag key as a number, and whether it holds one.
func (r result) tag(key string) (float64, bool) {
	v, err := strconv.ParseFloat(r.Tags[key], 64)
	return v, err == nil
}

// disturbed reports whether the hypervisor stole more than stealMax % of
// the CPU time during r; a negative stealMax disturbs nothing.
func disturbed(r result, stealMax float64) bool {
	v, ok := r.tag("steal_pct")
	return stealMax >= 0 && ok && v > stealMax
}

// summarise sums up c's runs, leaving out those disturbed at stealMax
// unless every run was; errors count in every run.
func summarise(c *cell, stealMax float64) summary {
	s := summary{label: c.label, runs: len(c.runs)}
	var rps, p50, p99, cpu, all, idle []float64
	s.roundRPS, s.roundCPU = map[string]float64{}, map[string]float64{}
	runs := slices.DeleteFunc(slices.Clone(c.runs), func(r result) bool { return disturbed(r, stealMax) })
	if len(runs) == 0 {
		runs = c.runs
	}
	s.used = len(runs)
	for _, r := range c.runs {
		s.errors += r.Errors + r.WarmupErrors
		if r.OK == 0 {
			s.emptyRuns = true
		}
	}
	for _, r := range runs {
		if round := r.Tags["round"]; round != "" {
			s.roundRPS[round] = r.RPS
		}
		rps = append(rps, r.RPS)
		p50 = append(p50, r.P50us)
		p99 = append(p99, r.P99us)
		if v, ok := r.tag("busy_pct"); ok {
			s.hasBusy = true
			s.busyPct = max(s.busyPct, v)
		}
		if v, ok := r.tag("steal_pct"); ok {
			s.hasSteal = true
			s.stealPct = max(s.stealPct, v)
		}
		if v, ok := r.tag("idle_pct"); ok {
			idle = append(idle, v)
		}
		if v, ok := r.tag("cpu_us_per_req"); ok {
			s.hasCPU = true
			cpu = append(cpu, v)
			if round := r.Tags["round"]; round != "" {
				s.roundCPU[round] = v
			}
			backend, ok := r.tag("backend_cpu_us_per_req")
			if n := r.Requests + r.WarmupRequests; ok && r.CPUSeconds > 0 && n > 0 {
				all = append(all, v+backend+r.CPUSeconds*1e6/float64(n))
			}
		}
	}
	s.hasIdle, s.idlePct = len(idle) > 0, bench.Median(idle)
	s.cpuUs = bench.Median(cpu)
	s.hasAllCPU = len(all) > 0 && len(all) == len(cpu)
	s.allCPUUs = bench.Median(all)
	s.rps, s.p50, s.p99 = bench.Median(rps), bench.Median(p50), bench.Median(p99)
	return s
}

func fmtUs(us float64) string {
	switch {
	case us < 1000:
		return fmt.Sprintf("%.0fµs", us)
	case us < 1e6:
		return fmt.Sprintf("%.2fms", us/1000)
	}
	return fmt.Sprintf("%.2fs", us/1e6)
}

// runReport prints, per scenario, each system's median req/s, p50 and p99
// over its runs (leaving out those during which the hypervisor stole more
// than stealMax % of the CPU time, unless all were; negative: none), its
// median CPU per request (the "cpu_us_per_req" tag,
// when recorded) and that of the whole machine (adding the
// "backend_cpu_us_per_req" tag and the load generator's own CPU), its total
// errors, the highest CPU use seen before a run and stolen during one, the
// median CPU time left idle during a run (the "idle_pct" tag), and its
// ratios against refs: of the medians (req/s, p99, CPU per request), and
// the median of the ratios within each round (req/s, CPU per request). It
// returns 1 when any run had an error or no successful request.
func runReport(path string, refs []string, stealMax float64, stdout, stderr io.Writer) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return 2
	}
	defer f.Close()
	results, err := readResults(f)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: read %s: %v\n", path, err)
		return 2
	}
	if len(results) == 0 {
		fmt.Fprintf(stderr, "loadgen: read %s: no results\n", path)
		return 1
	}
	if err := writeReport(stdout, results, refs, stealMax); err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return 1
	}
	return 0
}

func readResults(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
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

// writeReport writes the tables and returns an error naming the systems and
// scenarios that had errors or empty runs.
func writeReport(w io.Writer, results []result, refs []string, stealMax float64) error {
	var scenarios []string
	cells := map[string][]*cell{}
	for _, r := range results {
		if _, ok := cells[r.Scenario]; !ok {
			scenarios = append(scenarios, r.Scenario)
		}
		i := slices.IndexFunc(cells[r.Scenario], func(c *cell) bool { return c.label == r.Label })
		if i < 0 {
			cells[r.Scenario] = append(cells[r.Scenario], &cell{label: r.Label})
			i = len(cells[r.Scenario]) - 1
		}
		cells[r.Scenario][i].runs = append(cells[r.Scenario][i].runs, r)
	}
	if stealMax >= 0 {
		fmt.Fprintf(w, "runs: used/all; a run during which over %g%% of the CPU time was stolen is left out of the figures, unless all of a system's were\n", stealMax)
	}
	var failures []string
	for _, sc := range scenarios {
		first := cells[sc][0].runs[0]
		fmt.Fprintf(w, "\n%s: %s, %d conns (medians of runs)\n", sc, first.Mode, first.Conns)
		sums := map[string]summary{}
		for _, c := range cells[sc] {
			sums[c.label] = summarise(c, stealMax)
		}
		var present []string
		for _, ref := range refs {
			if _, ok := sums[ref]; ok {
				present = append(present, ref)
			}
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		header := "system\truns\treq/s\tp50\tp99\tcpu/req\tall cpu/req\terrors\tbusy%\tsteal%\tidle%\t"
		for _, ref := range present {
			header += "req/s ÷ " + ref + "\t"
		}
		for _, ref := range present {
			header += "by round ÷ " + ref + "\t"
		}
		for _, ref := range present {
			header += "p99 ÷ " + ref + "\t"
		}
		for _, ref := range present {
			header += "cpu/req ÷ " + ref + "\t"
		}
		for _, ref := range present {
			header += "cpu by round ÷ " + ref + "\t"
		}
		fmt.Fprintln(tw, header)
		for _, c := range cells[sc] {
			s := sums[c.label]
			busy := "-"
			if s.hasBusy {
				busy = fmt.Sprintf("%.0f", s.busyPct)
			}
			steal := "-"
			if s.hasSteal {
				steal = fmt.Sprintf("%.0f", s.stealPct)
			}
			idle := "-"
			if s.hasIdle {
				idle = fmt.Sprintf("%.0f", s.idlePct)
			}
			cpu := "-"
			if s.hasCPU {
				cpu = fmtUs(s.cpuUs)
			}
			all := "-"
			if s.hasAllCPU {
				all = fmtUs(s.allCPUUs)
			}
			runs := strconv.Itoa(s.runs)
			if s.used < s.runs {
				runs = fmt.Sprintf("%d/%d", s.used, s.runs)
			}
			line := fmt.Sprintf("%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t", s.label, runs, s.rps, fmtUs(s.p50), fmtUs(s.p99), cpu, all, s.errors, busy, steal, idle)
			for _, ref := range present {
				line += ratio(s.rps, sums[ref].rps) + "\t"
			}
			for _, ref := range present {
				line += roundRatio(s.roundRPS, sums[ref].roundRPS) + "\t"
			}
			for _, ref := range present {
				line += ratio(s.p99, sums[ref].p99) + "\t"
			}
			for _, ref := range present {
				cpuRatio := "-"
				if s.hasCPU && sums[ref].hasCPU {
					cpuRatio = ratio(s.cpuUs, sums[ref].cpuUs)
				}
				line += cpuRatio + "\t"
			}
			for _, ref := range present {
				line += roundRatio(s.roundCPU, sums[ref].roundCPU) + "\t"
			}
			fmt.Fprintln(tw, line)
			if s.errors > 0 || s.emptyRuns {
				failures = append(failures, fmt.Sprintf("%s/%s: %d errors", sc, s.label, s.errors))
			}
		}
		tw.Flush()
	}
	if len(failures) > 0 {
		return fmt.Errorf("runs with errors or no successful request: %v", failures)
	}
	return nil
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}
