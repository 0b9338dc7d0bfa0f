// Package benchcpu adds a "cpu-ns/op" metric to benchmarks: process CPU
// time per iteration. On a shared machine wall time per op grows with the
// load average; CPU time mostly does not, so it is the fairer figure to
// compare across runs. Benchmark tools read the same figure with Process.
package benchcpu

import (
	"testing"
	"time"
)

// Timer measures process CPU time from Start to Report.
type Timer struct{ start time.Duration }

// Start begins measuring.
func Start() Timer { return Timer{start: Process()} }

// Report records CPU time per iteration of b as "cpu-ns/op". Where the
// platform offers no process CPU time it records nothing.
func (c Timer) Report(b *testing.B) {
	if now := Process(); b.N > 0 && now > 0 {
		b.ReportMetric(float64(now-c.start)/float64(b.N), "cpu-ns/op")
	}
}
