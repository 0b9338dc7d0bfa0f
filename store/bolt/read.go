package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/kubegate/kubegate/store"
)

// List implements store.Store. A list at a past revision reads the current
// keys and undoes the kept events after that revision.
func (s *Store) List(ctx context.Context, prefix string, opts store.ListOptions) (store.ListResult, error) {
	if err := s.readable(ctx); err != nil {
		return store.ListResult{}, err
	}
	var res store.ListResult
	err := s.view(func(tx *bolt.Tx) error {
		m := readMeta(tx)
		rev := opts.Revision
		switch {
		case rev == 0:
			rev = m.rev
		case rev > m.rev:
			return &store.RevisionError{Requested: rev, Bound: m.rev, Err: store.ErrFutureRevision}
		case rev < m.compact:
			return &store.RevisionError{Requested: rev, Bound: m.compact, Err: store.ErrCompacted}
		}
		res.Revision = rev
		start := prefix
		if opts.Continue != "" && opts.Continue >= prefix {
			start = opts.Continue + "\x00"
		}
		var past map[string]*store.KV
		if rev < m.rev {
			var err error
			if past, err = undo(tx, prefix, start, rev); err != nil {
				return err
			}
		}
		var remaining int64
		res.KVs, remaining = scan(tx, prefix, start, past, opts.Limit, opts.Count)
		res.More = remaining > 0
		if opts.Count {
			res.Remaining = remaining
		}
		return nil
	})
	return res, err
}

// undo returns, for every key at or after start under prefix that changed
// after rev, its value at rev (nil: it did not exist).
func undo(tx *bolt.Tx, prefix, start string, rev int64) (map[string]*store.KV, error) {
	past := make(map[string]*store.KV)
	c := tx.Bucket(bucketEvents).Cursor()
	// Newest first, so the oldest change of a key, which holds its state at
	// rev, is written last.
	for k, v := c.Last(); k != nil && keyRev(k) > rev; k, v = c.Prev() {
		key, _, _, err := eventFields(v)
		if err != nil {
			return nil, fmt.Errorf("event at revision %d: %w", keyRev(k), err)
		}
		if !bytes.HasPrefix(key, []byte(prefix)) || string(key) < start {
			continue
		}
		ev, err := decodeEvent(keyRev(k), v)
		if err != nil {
			return nil, err
		}
		past[ev.KV.Key] = ev.Prev // nil for Added: absent before
	}
	return past, nil
}

// scan merges the current keys under prefix from start with the past
// values that replace them: at most limit keys (0: no limit), and how many
// more there are when count, else 1 when there are more.
func scan(tx *bolt.Tx, prefix, start string, past map[string]*store.KV, limit int64, count bool) (kvs []store.KV, remaining int64) {
	pastKeys := make([]string, 0, len(past))
	for k := range past {
		pastKeys = append(pastKeys, k)
	}
	slices.Sort(pastKeys)
	c := tx.Bucket(bucketKV).Cursor()
	k, v := c.Seek([]byte(start))
	for {
		cur := k != nil && bytes.HasPrefix(k, []byte(prefix))
		if !cur && len(pastKeys) == 0 {
			return kvs, remaining
		}
		full := limit > 0 && int64(len(kvs)) == limit
		var kv *store.KV
		switch {
		case cur && (len(pastKeys) == 0 || string(k) < pastKeys[0]) && full:
			// past the page: only count, or stop at the first
			remaining++
			if !count {
				return kvs, remaining
			}
			k, v = c.Next()
			continue
		case cur && (len(pastKeys) == 0 || string(k) < pastKeys[0]):
			d := decodeKV(string(k), v, true)
			kv = &d
			k, v = c.Next()
		default:
			if cur && string(k) == pastKeys[0] {
				k, v = c.Next()
			}
			kv = past[pastKeys[0]]
			pastKeys = pastKeys[1:]
		}
		if kv == nil {
			continue
		}
		if full {
			remaining++
			if !count {
				return kvs, remaining
			}
			continue
		}
		kvs = append(kvs, *kv)
	}
}

// Check verifies the file: bbolt's page-level consistency check, then the
// store's own invariants (revisions, history, sizes). It reads the whole
// file.
func (s *Store) Check(ctx context.Context) error {
	if err := s.readable(ctx); err != nil {
		return err
	}
	return s.view(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return fmt.Errorf("check %s: %w", s.path, errors.Join(errs...))
		}
		if err := checkInvariants(tx); err != nil {
			return fmt.Errorf("check %s: %w", s.path, err)
		}
		return nil
	})
}

func checkInvariants(tx *bolt.Tx) error {
	m := readMeta(tx)
	if m.rev < 1 || m.compact < 1 || m.compact > m.rev {
		return fmt.Errorf("meta: revision %d, compaction %d", m.rev, m.compact)
	}
	// Every revision after the compaction point has exactly one event.
	want, size := max(m.compact, 2), int64(0)
	evs := tx.Bucket(bucketEvents)
	err := evs.ForEach(func(k, v []byte) error {
		rev := keyRev(k)
		if rev != want {
			return fmt.Errorf("history: event at revision %d, want %d", rev, want)
		}
		if _, err := decodeEvent(rev, v); err != nil {
			return err
		}
		want++
		size += recordSize(v)
		return nil
	})
	if err != nil {
		return err
	}
	if want != m.rev+1 {
		return fmt.Errorf("history: ends at revision %d, current revision is %d", want-1, m.rev)
	}
	if size != m.histBytes {
		return fmt.Errorf("history: %d bytes, meta says %d", size, m.histBytes)
	}
	// Every key's latest event, if kept, is its write.
	return tx.Bucket(bucketKV).ForEach(func(k, v []byte) error {
		if len(v) < kvHeader {
			return fmt.Errorf("key %q: record of %d bytes", k, len(v))
		}
		kv := decodeKV(string(k), v, false)
		if kv.CreateRevision < 1 || kv.CreateRevision > kv.ModRevision || kv.ModRevision > m.rev {
			return fmt.Errorf("key %q: create revision %d, mod revision %d, current %d", k, kv.CreateRevision, kv.ModRevision, m.rev)
		}
		if kv.ModRevision < m.compact {
			return nil
		}
		ev, err := decodeEvent(kv.ModRevision, evs.Get(revKey(kv.ModRevision)))
		if err != nil {
			return err
		}
		if ev.KV.Key != kv.Key || ev.Type == store.Deleted || !bytes.Equal(ev.KV.Value, kv.Value) {
			return fmt.Errorf("key %q: event at revision %d is %s of %q", k, kv.ModRevision, ev.Type, ev.KV.Key)
		}
		return nil
	})
}
