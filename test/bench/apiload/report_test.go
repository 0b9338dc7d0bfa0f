package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/internal/testgolden"
)

// fakeRun returns a result of system in round whose figures are scaled by f.
func fakeRun(system string, round int, f, steal float64) result {
	return result{
		System: system, Round: round,
		Fill: createPhase{Clients: 64, Pods: 10000, PerSecond: 700 * f, CPUusPerOp: 1900 / f},
		Creates: []createPhase{
			{Clients: 16, Pods: 6000, Seconds: 6000 / (500 * f), PerSecond: 500 * f, CPUusPerOp: 2000 / f},
			{Clients: 64, Pods: 6000, Seconds: 6000 / (600 * f), PerSecond: 600 * f, CPUusPerOp: 1800 / f},
		},
		Pods:           10000,
		ListJSONMedian: 800 / f, ListProtoMedian: 400 / f, ListJSONFirst: 900 / f, ListProtoFirst: 450 / f,
		ListJSONCPUms: 700 / f, ListProtoCPUms: 300 / f,
		ListJSONBytes: 21 << 20, ListProtoBytes: 12 << 20,
		RSSMiB:          1000 / f,
		Watch:           watchPhase{Watchers: 100, Events: 100, P50ms: 2 / f, P99ms: 20 / f},
		StartCPUSeconds: 10 / f, CPUSeconds: 40 / f, Seconds: 30 / f,
		BusyPct: 5, StealPct: steal,
	}
}

// fakeResults are three rounds of three systems: kubegate-up's second run
// was disturbed (left out), kubegate-etcd's every run was (all kept) and
// one of its runs failed requests.
func fakeResults() []result {
	var rs []result
	for round := 1; round <= 3; round++ {
		drift := 1 + 0.1*float64(round) // the machine gets faster
		up := fakeRun("kubegate-up", round, 4*drift, 0)
		if round == 2 {
			up = fakeRun("kubegate-up", round, 1, 40)
		}
		etcd := fakeRun("kubegate-etcd", round, 2*drift, 20)
		if round == 3 {
			etcd.Errors, etcd.ErrorKinds = 2, map[string]int64{"timeout": 2}
		}
		kube := fakeRun("kube", round, drift, 0)
		kube.ListEncoding = "gzip"
		rs = append(rs, up, etcd, kube)
	}
	return rs
}

func TestSummaryGolden(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	summary(&b, fakeResults(), "kube", 10)
	testgolden.Check(t, filepath.Join("testdata", "report.golden"), b.Bytes())
}

func TestGroup(t *testing.T) {
	t.Parallel()
	systems := group(fakeResults(), "kube", 10)
	var names []string
	for _, s := range systems {
		names = append(names, s.name)
	}
	if got, want := strings.Join(names, " "), "kube kubegate-up kubegate-etcd"; got != want {
		t.Errorf("order = %s, want %s (the reference first, then as they appear)", got, want)
	}
	for _, tc := range []struct {
		i, used, runs int
		errors        int64
	}{{0, 3, 3, 0}, {1, 2, 3, 0}, {2, 3, 3, 2}} {
		s := systems[tc.i]
		if len(s.used) != tc.used || len(s.runs) != tc.runs || s.errors != tc.errors {
			t.Errorf("%s: used %d of %d runs, %d errors; want %d of %d, %d", s.name, len(s.used), len(s.runs), s.errors, tc.used, tc.runs, tc.errors)
		}
	}
	if s := group(fakeResults(), "kube", -1)[1]; len(s.used) != 3 {
		t.Errorf("steal-max -1: %s used %d runs, want all 3", s.name, len(s.used))
	}
}

func TestByRound(t *testing.T) {
	t.Parallel()
	systems := group(fakeResults(), "kube", 10)
	f := func(r result) (float64, bool) {
		p, ok := create(r, 16)
		return p.PerSecond, ok
	}
	// kubegate-up runs 4× kube in rounds 1 and 3; round 2 is left out.
	if got, ok := byRound(systems[1], systems[0], f); !ok || got != 4 {
		t.Errorf("byRound = %v, %v; want 4", got, ok)
	}
}

func TestReadResults(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	for _, r := range fakeResults()[:2] {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteString("\n\n")
	}
	got, err := readResults(&b)
	if err != nil || len(got) != 2 || got[1].System != "kubegate-etcd" || got[0].Creates[1].Clients != 64 {
		t.Fatalf("readResults = %d results, %v; want the 2 written", len(got), err)
	}
	if _, err := readResults(strings.NewReader("{\"system\":\"kube\"}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("readResults of a bad line: %v, want an error naming line 2", err)
	}
}

func TestRealMainFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{},                                    // no kubeconfig
		{"-kubeconfig", "x"},                  // no pids
		{"-kubeconfig", "x", "-pids", "1,-2"}, // bad pid
		{"-kubeconfig", "x", "-pids", "1", "-clients", "16,"},
		{"-kubeconfig", "x", "-pids", "1", "-pods", "0"},
		{"-kubeconfig", "x", "-pids", "1", "extra"},
	} {
		var out, errb bytes.Buffer
		if code := realMain(args, &out, &errb); code != 2 {
			t.Errorf("realMain(%q) = %d, want 2; stderr %s", args, code, errb.String())
		}
	}
}

func TestIntList(t *testing.T) {
	t.Parallel()
	var l intList
	if err := l.Set("16, 64"); err != nil || l.String() != "16,64" {
		t.Errorf("Set(16, 64) = %v, %v; want 16,64", l, err)
	}
	for _, bad := range []string{"", "0", "a", "16,,64"} {
		if err := l.Set(bad); err == nil {
			t.Errorf("Set(%q): no error", bad)
		}
	}
}
