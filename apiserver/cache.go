package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegate/kubegate/store"
)

// watchCache holds the decoded objects of one resource, kept by a store
// watch, as kube-apiserver's admission plugins read informers: the create
// path asks it instead of the store. A write shows in it a moment after
// it is answered.
type watchCache[T runtime.Object] struct {
	st         store.Store
	prefix     string
	namespaced bool
	newObject  func() T
	log        *slog.Logger
	done       chan struct{}

	mu sync.RWMutex
	// items: namespace ("" for a cluster-scoped resource) → name → object.
	items map[string]map[string]T
}

// startWatchCache lists the resource and follows it until ctx ends; done
// is closed then.
func startWatchCache[T runtime.Object](ctx context.Context, st store.Store, gvr schema.GroupVersionResource, namespaced bool,
	newObject func() T, log *slog.Logger) (*watchCache[T], error) {
	c := &watchCache[T]{st: st, prefix: Key(gvr, "", ""), namespaced: namespaced, newObject: newObject, log: log,
		done: make(chan struct{}), items: map[string]map[string]T{}}
	rev, err := c.load(ctx)
	if err != nil {
		return nil, err
	}
	go c.follow(ctx, rev)
	return c, nil
}

// split returns the namespace and name of a key under the prefix.
func (c *watchCache[T]) split(key string) (namespace, name string) {
	rest := strings.TrimPrefix(key, c.prefix)
	if !c.namespaced {
		return "", rest
	}
	namespace, name, _ = strings.Cut(rest, "/")
	return namespace, name
}

func (c *watchCache[T]) decode(kv store.KV) (T, error) {
	obj := c.newObject()
	if err := UnmarshalStored(kv.Value, obj); err != nil {
		return obj, fmt.Errorf("%s: %w", kv.Key, err)
	}
	return obj, setResourceVersion(obj, kv.ModRevision)
}

// load lists every object and returns the revision of the list.
func (c *watchCache[T]) load(ctx context.Context) (int64, error) {
	items := map[string]map[string]T{}
	opts := store.ListOptions{}
	for {
		res, err := c.st.List(ctx, c.prefix, opts)
		if err != nil {
			return 0, fmt.Errorf("list %s: %w", c.prefix, err)
		}
		for _, kv := range res.KVs {
			obj, err := c.decode(kv)
			if err != nil {
				c.log.Warn("cache: undecodable object left out", "err", err)
				continue
			}
			ns, name := c.split(kv.Key)
			if items[ns] == nil {
				items[ns] = map[string]T{}
			}
			items[ns][name] = obj
		}
		if !res.More || len(res.KVs) == 0 {
			c.mu.Lock()
			c.items = items
			c.mu.Unlock()
			return res.Revision, nil
		}
		opts.Revision, opts.Continue = res.Revision, res.KVs[len(res.KVs)-1].Key
	}
}

// follow applies events until ctx ends, listing again when the watch
// breaks.
func (c *watchCache[T]) follow(ctx context.Context, rev int64) {
	defer close(c.done)
	for ctx.Err() == nil {
		w, err := c.st.Watch(ctx, c.prefix, rev)
		if err == nil {
			for ev := range w.ResultChan() {
				c.apply(ev)
			}
			err = w.Err()
			w.Stop()
		}
		if ctx.Err() != nil || errors.Is(err, store.ErrClosed) {
			return
		}
		c.log.Warn("cache: watch ended; listing again", "prefix", c.prefix, "err", err)
		if rev, err = c.relist(ctx); err != nil {
			return
		}
	}
}

// relist loads the cache again, as often as it takes, and returns the
// revision to watch from: watching from a failed list's revision (0, now)
// would lose every write in between for good. It fails only when ctx ends.
func (c *watchCache[T]) relist(ctx context.Context) (int64, error) {
	wait := 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(wait):
		}
		rev, err := c.load(ctx)
		if err == nil {
			return rev, nil
		}
		c.log.Warn("cache: list failed; trying again", "prefix", c.prefix, "err", err, "in", wait)
		wait = min(2*wait, 5*time.Second)
	}
}

func (c *watchCache[T]) apply(ev store.Event) {
	if ev.Type != store.Added && ev.Type != store.Modified && ev.Type != store.Deleted {
		return
	}
	ns, name := c.split(ev.KV.Key)
	if ev.Type == store.Deleted {
		c.mu.Lock()
		delete(c.items[ns], name)
		if len(c.items[ns]) == 0 {
			delete(c.items, ns)
		}
		c.mu.Unlock()
		return
	}
	obj, err := c.decode(ev.KV)
	if err != nil {
		c.log.Warn("cache: undecodable object left out", "err", err)
		return
	}
	c.mu.Lock()
	if c.items[ns] == nil {
		c.items[ns] = map[string]T{}
	}
	c.items[ns][name] = obj
	c.mu.Unlock()
}

// get returns the cached object, if it has it.
func (c *watchCache[T]) get(namespace, name string) (T, bool) {
	c.mu.RLock()
	obj, ok := c.items[namespace][name]
	c.mu.RUnlock()
	return obj, ok
}

// fetch returns the object from the cache, or from the store when the
// cache does not have it yet; store.ErrNotFound when neither does.
func (c *watchCache[T]) fetch(ctx context.Context, namespace, name string) (T, error) {
	if obj, ok := c.get(namespace, name); ok {
		return obj, nil
	}
	key := c.prefix + name
	if c.namespaced {
		key = c.prefix + namespace + "/" + name
	}
	kv, err := c.st.Get(ctx, key)
	if err != nil {
		var zero T
		return zero, err
	}
	return c.decode(kv)
}

// list returns the cached objects of namespace, by name; nil when there
// are none.
func (c *watchCache[T]) list(namespace string) []T {
	c.mu.RLock()
	defer c.mu.RUnlock()
	m := c.items[namespace]
	if len(m) == 0 {
		return nil
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]T, len(names))
	for i, name := range names {
		out[i] = m[name]
	}
	return out
}
