package main

import (
	"math"
	"slices"
	"time"
)

// quantile returns the nearest-rank value at q (0 < q <= 1) of sorted: the
// smallest value with at least q of all values at or below it, or 0 for an
// empty slice. Every recorded delay is kept, so the figure is exact.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// perSecond returns n per second of d, or 0 when d is not positive.
func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// delays returns, for every watcher and every pod it saw, the time from the
// create's response to the watcher's ADDED event, sorted, and the number of
// (watcher, pod) pairs with no event. A watcher that had the event before
// the creator had the response counts a negative delay: a server may send
// the event before it answers the create.
func delays(created map[string]time.Time, seen []map[string]time.Time) (sorted []time.Duration, missed int) {
	for _, w := range seen {
		for name, at := range created {
			t, ok := w[name]
			if !ok {
				missed++
				continue
			}
			sorted = append(sorted, t.Sub(at))
		}
	}
	slices.Sort(sorted)
	return sorted, missed
}
