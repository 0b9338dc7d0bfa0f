package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"
)

// Procs reads the CPU time and memory of the server's processes and the
// machine's CPU accounting from a /proc file system.
type Procs struct {
	FS     fs.FS // the root of /proc
	PIDs   []int
	ClkTck int // clock ticks per second of /proc/PID/stat (getconf CLK_TCK)
}

// CPU returns the user and system CPU time the processes have used so far.
func (p Procs) CPU() (time.Duration, error) {
	var ticks int64
	for _, pid := range p.PIDs {
		data, err := fs.ReadFile(p.FS, fmt.Sprintf("%d/stat", pid))
		if err != nil {
			return 0, fmt.Errorf("read CPU time of process %d: %w", pid, err)
		}
		t, err := parseStatTicks(string(data))
		if err != nil {
			return 0, fmt.Errorf("read CPU time of process %d: %w", pid, err)
		}
		ticks += t
	}
	return time.Duration(ticks) * time.Second / time.Duration(p.ClkTck), nil
}

// Memory returns the processes' resident set size now and at its highest,
// in bytes, summed.
func (p Procs) Memory() (rss, peak int64, err error) {
	for _, pid := range p.PIDs {
		data, err := fs.ReadFile(p.FS, fmt.Sprintf("%d/status", pid))
		if err != nil {
			return 0, 0, fmt.Errorf("read memory of process %d: %w", pid, err)
		}
		r, h, err := parseStatusMemory(string(data))
		if err != nil {
			return 0, 0, fmt.Errorf("read memory of process %d: %w", pid, err)
		}
		rss += r
		peak += h
	}
	return rss, peak, nil
}

// Machine returns the machine's CPU time counters so far.
func (p Procs) Machine() (CPUTimes, error) {
	data, err := fs.ReadFile(p.FS, "stat")
	if err != nil {
		return CPUTimes{}, fmt.Errorf("read machine CPU times: %w", err)
	}
	return parseProcStat(string(data))
}

// parseStatTicks returns utime + stime from the text of /proc/PID/stat.
// The command name, in parentheses, may hold spaces and parentheses, so
// the fields are counted from the last ')'.
func parseStatTicks(stat string) (int64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("stat: no ')' after the command name")
	}
	// After the name: state (field 3), ..., utime (14), stime (15).
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the command name, want at least 13", len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("stat: utime or stime: %w", err)
	}
	return utime + stime, nil
}

// parseStatusMemory returns VmRSS and VmHWM, in bytes, from the text of
// /proc/PID/status.
func parseStatusMemory(status string) (rss, hwm int64, err error) {
	var haveRSS, haveHWM bool
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("status: %s %q: want a number of kB", key, strings.TrimSpace(val))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("status: %s: %w", key, err)
		}
		if key == "VmRSS" {
			rss, haveRSS = kb*1024, true
		} else {
			hwm, haveHWM = kb*1024, true
		}
	}
	if !haveRSS || !haveHWM {
		return 0, 0, errors.New("status: no VmRSS or VmHWM line")
	}
	return rss, hwm, nil
}

// CPUTimes are the machine-wide counters of /proc/stat's "cpu" line, in
// clock ticks.
type CPUTimes struct {
	Total, Idle, Steal int64
}

// parseProcStat reads the first "cpu" line of /proc/stat: user nice system
// idle iowait irq softirq steal (guest time is already in user).
func parseProcStat(stat string) (CPUTimes, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return CPUTimes{}, fmt.Errorf("/proc/stat: first line %q: want cpu and at least 8 counters", line)
	}
	var v [8]int64
	for i := range v {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return CPUTimes{}, fmt.Errorf("/proc/stat: counter %d: %w", i+1, err)
		}
		v[i] = n
	}
	var t CPUTimes
	for _, n := range v {
		t.Total += n
	}
	t.Idle = v[3] + v[4]
	t.Steal = v[7]
	return t, nil
}

// Since returns the share of the CPU time from a to b that was stolen by
// the hypervisor and that was idle, in percent.
func (b CPUTimes) Since(a CPUTimes) (stealPct, idlePct float64) {
	d := b.Total - a.Total
	if d <= 0 {
		return 0, 0
	}
	return 100 * float64(b.Steal-a.Steal) / float64(d), 100 * float64(b.Idle-a.Idle) / float64(d)
}

// WaitQuiet waits up to wait for the machine's CPU to be at most busyMax
// percent busy over half a second, and returns the last figure seen, which
// is above busyMax if the machine stayed busy.
func (p Procs) WaitQuiet(busyMax float64, wait time.Duration) (float64, error) {
	deadline := time.Now().Add(wait)
	for {
		a, err := p.Machine()
		if err != nil {
			return 0, err
		}
		time.Sleep(500 * time.Millisecond)
		b, err := p.Machine()
		if err != nil {
			return 0, err
		}
		_, idle := b.Since(a)
		if busy := 100 - idle; busy <= busyMax || time.Now().After(deadline) {
			return busy, nil
		}
	}
}
