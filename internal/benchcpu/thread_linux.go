package benchcpu

import "golang.org/x/sys/unix"

// ThreadNanos returns the CPU time, in nanoseconds, the calling thread has
// used (0 where there is no thread CPU clock). Unlike getrusage, the thread
// clock counts the running time slice too, so it is exact enough to compare
// two operations alternated in one loop on a locked OS thread.
func ThreadNanos() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
