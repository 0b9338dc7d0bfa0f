package bolt

import (
	"context"
	"fmt"
	"runtime"

	bolt "go.etcd.io/bbolt"

	"github.com/kubegate/kubegate/store"
)

type opKind uint8

const (
	opCreate opKind = iota
	opUpdate
	opDelete
	opCompact
)

// op is one write request to the writer goroutine.
type op struct {
	kind  opKind
	key   string
	value []byte
	rev   int64 // expected ModRevision, or the compaction revision
	done  chan result
}

type result struct {
	rev  int64
	prev store.KV
	err  error
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if err := store.CheckKey("create", key); err != nil {
		return 0, err
	}
	r := s.submit(ctx, &op{kind: opCreate, key: key, value: clone(value)})
	return r.rev, r.err
}

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, key string, value []byte, expectedModRevision int64) (int64, error) {
	if err := store.CheckKey("update", key); err != nil {
		return 0, err
	}
	r := s.submit(ctx, &op{kind: opUpdate, key: key, value: clone(value), rev: expectedModRevision})
	return r.rev, r.err
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string, expectedModRevision int64) (store.KV, int64, error) {
	if err := store.CheckKey("delete", key); err != nil {
		return store.KV{}, 0, err
	}
	r := s.submit(ctx, &op{kind: opDelete, key: key, rev: expectedModRevision})
	return r.prev, r.rev, r.err
}

// Compact implements store.Store. The store also compacts by itself after
// every write (see the package doc).
func (s *Store) Compact(ctx context.Context, rev int64) error {
	return s.submit(ctx, &op{kind: opCompact, rev: rev}).err
}

// clone copies a value the store keeps, so the caller may reuse its buffer;
// nil becomes empty.
func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }

// submit hands o to the writer and waits for its result.
func (s *Store) submit(ctx context.Context, o *op) result {
	if s.closed.Load() {
		return result{err: store.ErrClosed}
	}
	o.done = make(chan result, 1)
	select {
	case s.ops <- o:
	case <-s.quit:
		return result{err: store.ErrClosed}
	case <-ctx.Done():
		return result{err: ctx.Err()}
	}
	select {
	case r := <-o.done:
		return r
	case <-ctx.Done():
		// The write may still be applied; the caller reads to find out.
		return result{err: ctx.Err()}
	case <-s.writerDone:
		select {
		case r := <-o.done:
			return r
		default:
			return result{err: store.ErrClosed}
		}
	}
}

// batchYields is how often the writer yields the processor to let more
// requests join a batch when the previous commit had company (see writer).
const batchYields = 2

// writer applies every waiting request in one transaction, commits (with
// fsync unless NoSync), publishes the events, then answers the callers.
func (s *Store) writer() {
	defer close(s.writerDone)
	batch := make([]*op, 0, maxBatch)
	last := 0 // size of the previous batch
	for {
		select {
		case o := <-s.ops:
			batch = append(batch[:0], o)
		case <-s.quit:
			for {
				select {
				case o := <-s.ops:
					o.done <- result{err: store.ErrClosed}
				default:
					return
				}
			}
		}
		batch = s.fill(batch)
		// With concurrent writers (the previous batch had more than one
		// request), let the goroutines that are ready to run go first: the
		// ones about to submit a write join this transaction instead of
		// paying for one of their own. A commit costs two fsyncs and
		// bbolt's page work whatever its size, so on a busy server this
		// saves more CPU than anything else here; on an idle one a yield
		// returns at once, and a lone writer never waits for it.
		for i := 0; i < batchYields && last > 1 && len(batch) < maxBatch; i++ {
			runtime.Gosched()
			batch = s.fill(batch)
		}
		last = len(batch)
		s.commit(batch)
	}
}

// fill appends the requests that are waiting, up to maxBatch in all.
func (s *Store) fill(batch []*op) []*op {
	for len(batch) < maxBatch {
		select {
		case o := <-s.ops:
			batch = append(batch, o)
		default:
			return batch
		}
	}
	return batch
}

func (s *Store) commit(batch []*op) {
	results := make([]result, len(batch))
	events := make([]store.Event, 0, len(batch))
	var m meta
	err := s.db.Update(func(tx *bolt.Tx) error {
		w := txWriter{kv: tx.Bucket(bucketKV), events: tx.Bucket(bucketEvents), meta: readMeta(tx)}
		// Events are appended in key order: fill pages completely.
		w.events.FillPercent = 1
		for i, o := range batch {
			var ev *store.Event
			var err error
			results[i], ev, err = w.apply(o)
			if err != nil {
				return err
			}
			if ev != nil {
				events = append(events, *ev)
			}
		}
		if err := w.autoCompact(s.opts.HistoryRevisions, s.opts.HistoryBytes); err != nil {
			return err
		}
		m = w.meta
		return m.write(tx)
	})
	if err != nil {
		err = fmt.Errorf("commit to %s: %w", s.path, err)
		for i := range results {
			results[i] = result{err: err}
		}
	} else {
		s.rev.Store(m.rev)
		s.hub.publish(events, m.rev)
	}
	for i, o := range batch {
		o.done <- results[i]
	}
}

// txWriter applies writes inside one bbolt transaction.
type txWriter struct {
	kv, events *bolt.Bucket
	meta       meta
}

// apply applies o. A failed precondition is a result; the returned error is
// an I/O error that aborts the whole transaction.
func (w *txWriter) apply(o *op) (result, *store.Event, error) {
	if o.kind == opCompact {
		if o.rev > w.meta.rev {
			return result{err: &store.RevisionError{Requested: o.rev, Bound: w.meta.rev, Err: store.ErrFutureRevision}}, nil, nil
		}
		return result{}, nil, w.compact(o.rev)
	}
	k := []byte(o.key)
	old := w.kv.Get(k)
	var prev store.KV
	switch {
	case o.kind == opCreate && old != nil:
		return result{err: &store.KeyError{Op: "create", Key: o.key, Err: store.ErrExists}}, nil, nil
	case o.kind == opCreate:
	case old == nil:
		return result{err: &store.KeyError{Op: o.kind.String(), Key: o.key, Err: store.ErrNotFound}}, nil, nil
	default:
		prev = decodeKV(o.key, old, true)
		if o.rev != 0 && prev.ModRevision != o.rev {
			return result{err: &store.KeyError{Op: o.kind.String(), Key: o.key, Err: store.ErrConflict}}, nil, nil
		}
	}
	rev := w.meta.rev + 1
	ev := &store.Event{Revision: rev, KV: store.KV{Key: o.key, Value: o.value, CreateRevision: rev, ModRevision: rev}}
	var err error
	switch o.kind {
	case opCreate:
		ev.Type = store.Added
		err = w.kv.Put(k, encodeKV(rev, rev, o.value))
	case opUpdate:
		ev.Type, ev.Prev, ev.KV.CreateRevision = store.Modified, &prev, prev.CreateRevision
		err = w.kv.Put(k, encodeKV(prev.CreateRevision, rev, o.value))
	case opDelete:
		ev.Type, ev.Prev = store.Deleted, &prev
		ev.KV.Value, ev.KV.CreateRevision = prev.Value, prev.CreateRevision
		err = w.kv.Delete(k)
	}
	if err != nil {
		return result{}, nil, err
	}
	rec := encodeEvent(ev)
	if err := w.events.Put(revKey(rev), rec); err != nil {
		return result{}, nil, err
	}
	w.meta.rev = rev
	w.meta.histBytes += recordSize(rec)
	return result{rev: rev, prev: prev}, ev, nil
}

func (k opKind) String() string {
	return [...]string{"create", "update", "delete", "compact"}[k]
}

// recordSize is what an event record counts against HistoryBytes.
func recordSize(rec []byte) int64 { return int64(len(rec)) + 8 }

// compact drops the events below rev.
func (w *txWriter) compact(rev int64) error {
	if rev <= w.meta.compact {
		return nil
	}
	c := w.events.Cursor()
	for k, v := c.First(); k != nil && keyRev(k) < rev; k, v = c.First() {
		w.meta.histBytes -= recordSize(v)
		if err := c.Delete(); err != nil {
			return err
		}
	}
	w.meta.compact = rev
	return nil
}

// autoCompact keeps the events of the last keepRevs revisions, then drops
// the oldest until they fit in keepBytes. The latest event always stays, so
// the current revision can be listed and watched from.
func (w *txWriter) autoCompact(keepRevs, keepBytes int64) error {
	if err := w.compact(w.meta.rev - keepRevs + 1); err != nil {
		return err
	}
	c := w.events.Cursor()
	for w.meta.histBytes > keepBytes {
		k, v := c.First()
		if k == nil || keyRev(k) >= w.meta.rev {
			return nil
		}
		w.meta.histBytes -= recordSize(v)
		w.meta.compact = keyRev(k) + 1
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
