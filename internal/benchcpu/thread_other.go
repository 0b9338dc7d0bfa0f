//go:build !linux

package benchcpu

// ThreadNanos returns 0: this platform has no thread CPU clock here.
func ThreadNanos() int64 { return 0 }
