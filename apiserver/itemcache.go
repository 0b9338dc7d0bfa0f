package apiserver

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// itemCache holds the JSON encodings of list items, as a LIST writes them,
// so that a LIST of objects that have not changed since the last one
// copies them instead of decoding and encoding each again
// (docs/architecture.md, "Data flow"). An entry is an object at one
// revision served as one resource, and an object never changes at a
// revision, so an entry is never stale: a newer revision simply misses.
//
// Memory is bounded by two generations: entries go into the current one,
// and when it holds half the budget it becomes the previous one, dropping
// what was previous; a hit in the previous generation moves the entry
// forward. Entries of deleted or changed objects age out that way.
type itemCache struct {
	budget int // bytes, both generations together, keys and overhead included

	mu        sync.Mutex
	cur, prev map[itemKey][]byte
	curBytes  int
}

type itemKey struct {
	gvr schema.GroupVersionResource
	key string
	rev int64
	// served is, for a kind served unstructured (a custom resource), the
	// resource as installed: such an object is read pruned and defaulted
	// by its definition's current schema, so its encoding at a revision
	// holds only while the same definition serves it. nil for typed kinds.
	served *Resource
}

// itemCacheBytes bounds the cached encodings: about 30,000 small pods.
const itemCacheBytes = 64 << 20

func newItemCache(budget int) *itemCache {
	return &itemCache{budget: budget, cur: map[itemKey][]byte{}}
}

// get returns the cached encoding of k, or nil.
func (c *itemCache) get(k itemKey) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.cur[k]; ok {
		return b
	}
	b, ok := c.prev[k]
	if ok {
		delete(c.prev, k)
		c.addLocked(k, b)
	}
	return b
}

// itemOverhead is about what an entry costs besides its key's and its
// encoding's bytes: the map slot, the key's and the slice's headers.
const itemOverhead = 96

func itemCost(k itemKey, b []byte) int { return len(b) + len(k.key) + itemOverhead }

// put caches b, which the caller no longer changes, as k's encoding.
func (c *itemCache) put(k itemKey, b []byte) {
	if itemCost(k, b) > c.budget/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cur[k]; !ok {
		c.addLocked(k, b)
	}
}

func (c *itemCache) addLocked(k itemKey, b []byte) {
	cost := itemCost(k, b)
	if c.curBytes+cost > c.budget/2 {
		c.prev, c.cur, c.curBytes = c.cur, map[itemKey][]byte{}, 0
	}
	c.cur[k] = b
	c.curBytes += cost
}
