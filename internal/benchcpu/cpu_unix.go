//go:build unix

package benchcpu

import (
	"syscall"
	"time"
)

// Process returns the CPU time (user and system) this process has used so
// far, or 0 where the platform does not say.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
