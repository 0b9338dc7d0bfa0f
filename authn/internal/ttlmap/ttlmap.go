// Package ttlmap is a size-bounded map whose entries expire at a time given
// when they are stored. It is safe for concurrent use.
//
// Times are nanoseconds on a clock of the caller's choosing, such as the
// monotonic time since the caller started: a hit then compares two
// integers, not two time.Time values.
//
// The bound is strict: when the map is full, expired entries are swept (at
// most once a second) and, if it is still full, arbitrary live entries are
// evicted. Eviction only costs a later recomputation, never correctness.
package ttlmap

import (
	"sync"
	"time"
)

// sweepEvery is how often, at most, a full map is swept of expired entries.
const sweepEvery = int64(time.Second)

// Map holds at most Size entries.
type Map[K comparable, V any] struct {
	mu        sync.RWMutex
	m         map[K]entry[V]
	size      int
	lastSweep int64
	swept     bool // lastSweep is set
}

type entry[V any] struct {
	v       V
	expires int64
}

// New returns a map holding at most size entries; size must be positive.
func New[K comparable, V any](size int) *Map[K, V] {
	if size <= 0 {
		panic("ttlmap: size must be positive")
	}
	return &Map[K, V]{m: make(map[K]entry[V]), size: size}
}

// Get returns the value stored under k if it has not expired at now.
func (c *Map[K, V]) Get(k K, now int64) (V, bool) {
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if !ok || now >= e.expires {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Set stores v under k until expires. An entry that has already expired at
// now is not stored.
func (c *Map[K, V]) Set(k K, v V, expires, now int64) {
	if now >= expires {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.size {
		c.makeRoom(now)
	}
	c.m[k] = entry[V]{v: v, expires: expires}
}

// makeRoom frees at least one slot. Callers hold c.mu.
func (c *Map[K, V]) makeRoom(now int64) {
	if !c.swept || now-c.lastSweep >= sweepEvery || now < c.lastSweep {
		c.lastSweep, c.swept = now, true
		for k, e := range c.m {
			if now >= e.expires {
				delete(c.m, k)
			}
		}
	}
	for k := range c.m {
		if len(c.m) < c.size {
			break
		}
		delete(c.m, k)
	}
}

// Len returns the number of stored entries, expired or not.
func (c *Map[K, V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
