// Package bolt is a store.Store in one bbolt file, for a single API server
// process.
//
// # Layout
//
// The file holds three buckets: "meta" (the current revision, the compaction
// revision and the size of the kept history), "kv" (the current value of every
// key with its create and mod revisions) and "events" (revision → event, the
// history that watches replay and that lists at a past revision undo).
//
// # Durability and group commit
//
// Writes go to one writer goroutine. It takes every request that is waiting,
// applies them in order in one bbolt transaction (each write gets its own
// revision, and compare-and-swap checks see the earlier writes of the same
// transaction), commits with fsync, and only then answers the callers. While
// one transaction syncs, the next requests queue up, so concurrent writers
// share syncs; under concurrent load the writer also yields briefly before
// committing so that writes about to arrive join the batch. An
// acknowledged write survives kill -9 and power loss.
//
// # Bounded history
//
// Every write transaction also drops the events older than the last
// Options.HistoryRevisions revisions, and then the oldest ones until the kept
// events fit in Options.HistoryBytes. An event holds the key's new and
// previous values, so with the defaults the history of 1 KiB objects is about
// 20 MiB. bbolt reuses the freed pages, so the file stops growing: it holds
// the current data plus the history, and bbolt grows it in steps of 16 MiB.
// Measured: 100,000 updates of one 1 KiB object leave a 32.1 MiB file, the
// same size as after 20,000 (TestHistoryStaysBounded asserts at most 40 MiB;
// without compaction the history alone would pass 200 MiB). FileSize
// reports the size.
//
// # Watch
//
// Committed events are handed to watchers without blocking the writer.
// While a watcher's consumer keeps up, the writer puts each event straight
// into the watcher's channel; otherwise the events wait in the watcher's
// queue of at most Options.WatchBuffer events. A watcher that falls further
// behind drops its queue and catches up by reading the history from the
// file, as etcd's unsynced watchers do; if the history it needs has been
// compacted by then, the watch ends with store.ErrCompacted and the client
// re-lists (410 Gone in the API).
package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/kubegate/kubegate/store"
)

// Options tune a Store. The zero value is ready for production use.
type Options struct {
	// HistoryRevisions is how many of the latest revisions keep their
	// events; 0 means 10,000.
	HistoryRevisions int64
	// HistoryBytes caps the encoded size of the kept events (keys, values
	// and previous values); 0 means 64 MiB.
	HistoryBytes int64
	// WatchBuffer is how many events may wait for one watcher before it
	// switches to reading the history from the file; 0 means 1,024.
	WatchBuffer int
	// LockTimeout is how long Open waits for another process to release
	// the file; 0 means 1 s.
	LockTimeout time.Duration
	// NoSync acknowledges writes before they reach the disk. A crash can
	// then lose acknowledged writes, so it is only for tests that measure
	// size or speed.
	NoSync bool
}

// Defaults applied to zero Options fields.
const (
	DefaultHistoryRevisions = 10_000
	DefaultHistoryBytes     = 64 << 20
	DefaultWatchBuffer      = 1024
	defaultLockTimeout      = time.Second
	// maxBatch is the most writes committed in one transaction.
	maxBatch = 1024
)

var errLocked = errors.New("file is in use by another process")

// Store is a store.Store on a bbolt file.
type Store struct {
	db   *bolt.DB
	path string
	opts Options

	ops        chan *op
	quit       chan struct{} // closed by Close: the writer stops
	writerDone chan struct{} // closed when the writer has exited
	closed     atomic.Bool
	closeOnce  sync.Once
	closeMu    sync.Mutex // orders closed against watchers.Add

	rev atomic.Int64 // revision of the latest committed write

	hub      hub
	ctx      context.Context // cancelled with store.ErrClosed by Close
	cancel   context.CancelCauseFunc
	watchers sync.WaitGroup
}

var _ store.Store = (*Store)(nil)

// Open opens or creates the store file at path (mode 0600).
func Open(path string, opts Options) (*Store, error) {
	if opts.HistoryRevisions <= 0 {
		opts.HistoryRevisions = DefaultHistoryRevisions
	}
	if opts.HistoryBytes <= 0 {
		opts.HistoryBytes = DefaultHistoryBytes
	}
	if opts.WatchBuffer <= 0 {
		opts.WatchBuffer = DefaultWatchBuffer
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = defaultLockTimeout
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: opts.LockTimeout,
		NoSync:  opts.NoSync,
		// As etcd does: the freelist is rebuilt on open instead of being
		// written by every commit, and the hashmap freelist stays fast when
		// the file is fragmented.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		// Address space only: the file grows as data is written. A large
		// map means the writer rarely has to remap and wait for readers.
		InitialMmapSize: 256 << 20,
		// For new files: a 16 KiB page holds seven events of a 1 KiB
		// object, where a 4 KiB page holds one and wastes half of itself.
		PageSize: 16 << 10,
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open store %s: %w", path, errLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	var rev int64
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMeta, bucketKV, bucketEvents} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		m := readMeta(tx)
		if m.rev == 0 {
			// A new file starts at revision 1, as etcd does, so that 0 can
			// mean "latest" everywhere.
			m = meta{rev: 1, compact: 1}
			if err := m.write(tx); err != nil {
				return err
			}
		}
		rev = m.rev
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Store{
		db:         db,
		path:       path,
		opts:       opts,
		ops:        make(chan *op, maxBatch),
		quit:       make(chan struct{}),
		writerDone: make(chan struct{}),
	}
	s.rev.Store(rev)
	s.hub.init(rev)
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	go s.writer()
	return s, nil
}

// Close stops the writer, ends every watch with store.ErrClosed and closes
// the file. Writes already acknowledged are on disk.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.closeMu.Lock()
		s.closed.Store(true)
		s.closeMu.Unlock()
		s.cancel(store.ErrClosed)
		close(s.quit)
		<-s.writerDone
		s.watchers.Wait()
		err = s.db.Close()
	})
	return err
}

// FileSize returns the size of the store file in bytes.
func (s *Store) FileSize() (int64, error) {
	fi, err := os.Stat(s.path)
	if err != nil {
		return 0, fmt.Errorf("store file size: %w", err)
	}
	return fi.Size(), nil
}

// CurrentRevision returns the revision of the latest committed write.
func (s *Store) CurrentRevision(context.Context) (int64, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	return s.rev.Load(), nil
}

// Get returns the current value of key.
func (s *Store) Get(ctx context.Context, key string) (store.KV, error) {
	if err := store.CheckKey("get", key); err != nil {
		return store.KV{}, err
	}
	if err := s.readable(ctx); err != nil {
		return store.KV{}, err
	}
	var kv store.KV
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketKV).Get([]byte(key))
		if v == nil {
			return &store.KeyError{Op: "get", Key: key, Err: store.ErrNotFound}
		}
		kv = decodeKV(key, v, true)
		return nil
	})
	return kv, err
}

// view runs fn in a read transaction; a store closed meanwhile gives
// store.ErrClosed.
func (s *Store) view(fn func(*bolt.Tx) error) error {
	err := s.db.View(fn)
	if err != nil && s.closed.Load() {
		return store.ErrClosed
	}
	return err
}

func (s *Store) readable(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}
