package main

import (
	"math"
	"math/bits"
	"time"
)

// The histogram is log-linear, like HdrHistogram: values below subCount
// nanoseconds are exact, and every power of two above is split into
// subCount equal buckets, so a reported percentile is within 1/256 (0.4%)
// of the true value. Memory is fixed (35 KiB) however long the run.
const (
	subBits  = 7
	subCount = 1 << subBits
	// maxExp bounds the range to 2^(maxExp+subBits+1) ns, about 18 minutes;
	// longer values land in the last bucket.
	maxExp     = 33
	numBuckets = (maxExp + 2) * subCount
)

type histogram struct {
	counts   [numBuckets]uint64
	n        uint64
	sum      uint64
	min, max uint64
}

func bucketOf(v uint64) int {
	if v < subCount {
		return int(v)
	}
	e := bits.Len64(v) - subBits - 1 // v>>e is in [subCount, 2*subCount)
	if e > maxExp {
		return numBuckets - 1
	}
	return (e+1)*subCount + int(v>>e) - subCount
}

// bucketRange returns the smallest and largest value bucket i holds.
func bucketRange(i int) (lo, hi uint64) {
	if i < subCount {
		return uint64(i), uint64(i)
	}
	e := uint(i/subCount - 1)
	m := uint64(i%subCount + subCount)
	return m << e, (m+1)<<e - 1
}

func (h *histogram) record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	h.n++
	h.sum += v
}

func (h *histogram) merge(o *histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// quantile returns the value at quantile q (0 < q <= 1): the smallest
// recorded value with at least q of all values at or below it, to within
// the bucket's precision. It returns 0 for an empty histogram.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketRange(i)
			mid := lo + (hi-lo)/2
			return time.Duration(min(max(mid, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}

func (h *histogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}
