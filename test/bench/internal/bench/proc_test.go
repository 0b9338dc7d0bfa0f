package bench

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// stat is a /proc/PID/stat line with utime 1234 and stime 66 and the
// command name comm.
func stat(pid, comm string) string {
	return pid + " (" + comm + ") S 1 2 2 0 -1 4194560 100 0 0 0 1234 66 0 0 20 0 9 0 500 1000 200 18446744073709551615\n"
}

func TestParseStatTicks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     int64
		wantErr  string
	}{
		{"plain", stat("42", "etcd"), 1300, ""},
		{"name with spaces and parentheses", stat("42", "a) b (c) S 9 9"), 1300, ""},
		{"no name", "42 S 1 2", 0, "no ')'"},
		{"truncated", "42 (etcd) S 1 2 3", 0, "fields after the command name"},
		{"not a number", strings.Replace(stat("42", "x"), " 1234 ", " many ", 1), 0, "utime or stime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseStatTicks(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseStatTicks: got %d, %v; want an error about %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("parseStatTicks = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

const status = "Name:\tkube-apiserver\nVmPeak:\t 2000000 kB\nVmHWM:\t  300000 kB\nVmRSS:\t  250000 kB\nThreads:\t12\n"

func TestParseStatusMemory(t *testing.T) {
	t.Parallel()
	rss, hwm, err := parseStatusMemory(status)
	if err != nil || rss != 250000*1024 || hwm != 300000*1024 {
		t.Errorf("parseStatusMemory = %d, %d, %v; want %d, %d", rss, hwm, err, 250000*1024, 300000*1024)
	}
	for _, bad := range []string{
		"Name:\tzombie\n",                   // a zombie has no Vm lines
		"VmHWM:\t 1 kB\nVmRSS:\t 2 pages\n", // unit
		"VmHWM:\t 1 kB\nVmRSS:\t x kB\n",
	} {
		if _, _, err := parseStatusMemory(bad); err == nil {
			t.Errorf("parseStatusMemory(%q): no error", bad)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	// user nice system idle iowait irq softirq steal guest guest_nice
	got, err := parseProcStat("cpu  100 5 50 800 20 1 4 20 7 0\ncpu0 50 2 25 400 10 0 2 10 3 0\n")
	want := CPUTimes{Total: 1000, Idle: 820, Steal: 20}
	if err != nil || got != want {
		t.Errorf("parseProcStat = %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"", "intr 1 2 3\n", "cpu 1 2 3\n", "cpu 1 2 3 4 5 6 7 x\n"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q): no error", bad)
		}
	}
}

func TestCPUTimesSince(t *testing.T) {
	t.Parallel()
	a := CPUTimes{Total: 1000, Idle: 500, Steal: 10}
	b := CPUTimes{Total: 1200, Idle: 550, Steal: 30}
	steal, idle := b.Since(a)
	if steal != 10 || idle != 25 {
		t.Errorf("since = %v%% stolen, %v%% idle; want 10, 25", steal, idle)
	}
	if steal, idle := a.Since(a); steal != 0 || idle != 0 {
		t.Errorf("since itself = %v, %v; want 0, 0", steal, idle)
	}
}

func TestProcs(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"10/stat":   {Data: []byte(stat("10", "kube-apiserver"))},
		"10/status": {Data: []byte(status)},
		"20/stat":   {Data: []byte(stat("20", "etcd"))},
		"20/status": {Data: []byte("VmHWM:\t 100 kB\nVmRSS:\t 50 kB\n")},
		"stat":      {Data: []byte("cpu  1 2 3 4 5 6 7 8 9 10\n")},
	}
	p := Procs{FS: fsys, PIDs: []int{10, 20}, ClkTck: 100}
	cpu, err := p.CPU()
	if want := 26 * time.Second; err != nil || cpu != want { // 2 × 1300 ticks at 100 Hz
		t.Errorf("cpu = %v, %v; want %v", cpu, err, want)
	}
	rss, peak, err := p.Memory()
	if err != nil || rss != (250000+50)*1024 || peak != (300000+100)*1024 {
		t.Errorf("memory = %d, %d, %v; want the sums", rss, peak, err)
	}
	if m, err := p.Machine(); err != nil || m.Total != 36 {
		t.Errorf("machine = %+v, %v; want a total of 36 ticks", m, err)
	}
	p.PIDs = []int{10, 30}
	if _, err := p.CPU(); err == nil || !strings.Contains(err.Error(), "process 30") {
		t.Errorf("cpu of a process that is gone: %v, want an error naming it", err)
	}
	if _, _, err := p.Memory(); err == nil || !strings.Contains(err.Error(), "process 30") {
		t.Errorf("memory of a process that is gone: %v, want an error naming it", err)
	}
}
