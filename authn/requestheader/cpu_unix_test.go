//go:build unix

package requestheader_test

import (
	"syscall"
	"testing"
	"time"
)

// cpuTimer reports "cpu-ns/op": process CPU time per iteration. On a
// shared machine wall time per op grows with the load average; CPU time
// mostly does not, so it is the fairer figure to compare.
type cpuTimer struct{ start time.Duration }

func startCPU() cpuTimer { return cpuTimer{start: processCPU()} }

func (c cpuTimer) report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(processCPU()-c.start)/float64(b.N), "cpu-ns/op")
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
