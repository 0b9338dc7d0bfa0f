package bolt

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"github.com/kubegate/kubegate/store"
)

// hub fans committed events out to the live watchers, grouped by prefix.
type hub struct {
	mu     sync.Mutex
	last   int64 // revision of the latest published batch
	groups map[string]map[*watcher]struct{}
}

func (h *hub) init(rev int64) {
	h.last = rev
	h.groups = make(map[string]map[*watcher]struct{})
}

// publish queues the events of one commit, which ends at rev, on every
// matching watcher. It never blocks on a watcher: one whose queue would
// overflow is dropped from the hub and catches up from the file.
func (h *hub) publish(evs []store.Event, rev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = rev
	for prefix, ws := range h.groups {
		match := evs
		if prefix != "" {
			match = nil
			for _, ev := range evs {
				if strings.HasPrefix(ev.KV.Key, prefix) {
					match = append(match, ev)
				}
			}
		}
		if len(match) == 0 {
			continue
		}
		for w := range ws {
			if !w.push(match) {
				delete(ws, w)
			}
		}
		if len(ws) == 0 {
			delete(h.groups, prefix)
		}
	}
}

// subscribe adds w to the hub with an empty queue and returns the revision
// of the latest published batch: later events arrive in w's queue, earlier
// ones are in the file.
func (h *hub) subscribe(w *watcher) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	ws := h.groups[w.prefix]
	if ws == nil {
		ws = make(map[*watcher]struct{})
		h.groups[w.prefix] = ws
	}
	ws[w] = struct{}{}
	w.mu.Lock()
	w.pending, w.overflow, w.direct = w.pending[:0], false, false
	w.mu.Unlock()
	return h.last
}

func (h *hub) unsubscribe(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ws := h.groups[w.prefix]; ws != nil {
		delete(ws, w)
		if len(ws) == 0 {
			delete(h.groups, w.prefix)
		}
	}
}

// errStopped is the cancellation cause of Watcher.Stop.
var errStopped = errors.New("watch stopped")

// watcher is one watch: a goroutine that replays history from the file,
// then forwards the events the hub queues for it.
type watcher struct {
	s      *Store
	prefix string
	limit  int
	out    chan store.Event
	ctx    context.Context
	cancel context.CancelCauseFunc
	exited chan struct{}
	wake   chan struct{} // signalled when pending grows or progress is asked
	asked  atomic.Bool   // a progress event was requested

	last int64 // revision of the latest event delivered; see direct

	mu       sync.Mutex
	pending  []store.Event
	spare    []store.Event
	overflow bool
	// direct: the watcher is live with nothing queued, so the hub may send
	// into out itself, and it then owns last.
	direct bool
	err    error
}

var _ store.Watcher = (*watcher)(nil)

// Watch implements store.Store.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) (store.Watcher, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	if fromRevision == 0 {
		fromRevision = s.rev.Load()
	}
	var compact int64
	if err := s.view(func(tx *bolt.Tx) error { compact = readMeta(tx).compact; return nil }); err != nil {
		return nil, err
	}
	if fromRevision+1 < compact {
		return nil, &store.RevisionError{Requested: fromRevision, Bound: compact, Err: store.ErrCompacted}
	}
	w := &watcher{
		s:      s,
		prefix: prefix,
		limit:  s.opts.WatchBuffer,
		out:    make(chan store.Event, 64),
		exited: make(chan struct{}),
		wake:   make(chan struct{}, 1),
		last:   fromRevision,
	}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	stopOnClose := context.AfterFunc(s.ctx, func() { w.cancel(store.ErrClosed) })
	s.closeMu.Lock()
	if s.closed.Load() {
		s.closeMu.Unlock()
		stopOnClose()
		w.cancel(store.ErrClosed)
		return nil, store.ErrClosed
	}
	s.watchers.Add(1)
	s.closeMu.Unlock()
	go func() {
		defer s.watchers.Done()
		defer stopOnClose()
		w.run()
	}()
	return w, nil
}

func (w *watcher) ResultChan() <-chan store.Event { return w.out }

func (w *watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *watcher) RequestProgress() {
	w.asked.Store(true)
	w.signal()
}

func (w *watcher) Stop() {
	w.cancel(errStopped)
	<-w.exited
}

func (w *watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// push hands evs to the watcher. When the watcher is live and nothing is
// queued, the events go straight into its channel as far as it has room;
// the rest are queued for its goroutine. If the queue would exceed its limit
// push reports false: the queue is dropped and the watcher catches up from
// the file.
func (w *watcher) push(evs []store.Event) bool {
	w.mu.Lock()
	if w.direct {
		for len(evs) > 0 {
			if evs[0].Revision > w.last {
				select {
				case w.out <- evs[0]:
					w.last = evs[0].Revision
				default:
					w.direct = false
				}
				if !w.direct {
					break
				}
			}
			evs = evs[1:]
		}
		if len(evs) == 0 {
			w.mu.Unlock()
			return true
		}
	}
	ok := len(w.pending)+len(evs) <= w.limit
	if ok {
		w.pending = append(w.pending, evs...)
	} else {
		clear(w.pending)
		w.pending, w.overflow = w.pending[:0], true
	}
	w.mu.Unlock()
	w.signal()
	return ok
}

func (w *watcher) run() {
	defer close(w.exited)
	defer close(w.out)
	defer w.s.hub.unsubscribe(w)
	for {
		err := w.catchUp(w.s.hub.subscribe(w))
		if err == nil {
			err = w.live()
		}
		if err != errOverflow {
			if err == errStopped {
				err = nil
			}
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		}
	}
}

// errOverflow: the queue overflowed; catch up from the file.
var errOverflow = errors.New("watch queue overflowed")

// catchUp sends the kept events after w.last up to rev, reading the file
// in short transactions so the consumer never holds one open.
func (w *watcher) catchUp(rev int64) error {
	const chunk = 512
	for w.last < rev {
		evs := make([]store.Event, 0, 16)
		var scanned int64
		err := w.s.db.View(func(tx *bolt.Tx) error {
			m := readMeta(tx)
			if w.last+1 < m.compact {
				return &store.RevisionError{Requested: w.last, Bound: m.compact, Err: store.ErrCompacted}
			}
			c := tx.Bucket(bucketEvents).Cursor()
			for k, v := c.Seek(revKey(w.last + 1)); k != nil && keyRev(k) <= rev && len(evs) < chunk; k, v = c.Next() {
				scanned = keyRev(k)
				key, _, _, err := eventFields(v)
				if err != nil {
					return err
				}
				if !strings.HasPrefix(string(key), w.prefix) {
					continue
				}
				ev, err := decodeEvent(scanned, v)
				if err != nil {
					return err
				}
				evs = append(evs, ev)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if err := w.send(ev); err != nil {
				return err
			}
		}
		w.last = max(w.last, scanned)
		if scanned == 0 {
			// Nothing kept after w.last: published events are always in
			// the file, so only a revision above rev gets here.
			return nil
		}
	}
	return nil
}

// live forwards the queued events until the watch ends or the queue
// overflows. While nothing is queued the hub sends directly (see push).
func (w *watcher) live() error {
	for {
		w.mu.Lock()
		if len(w.pending) == 0 && !w.overflow && !w.asked.Load() {
			w.direct = true
		}
		w.mu.Unlock()
		select {
		case <-w.wake:
		case <-w.ctx.Done():
			return context.Cause(w.ctx)
		}
		w.mu.Lock()
		evs, overflow := w.pending, w.overflow
		w.pending, w.spare = w.spare[:0], nil
		if len(evs) > 0 || overflow {
			w.direct = false
		}
		w.mu.Unlock()
		for _, ev := range evs {
			if ev.Revision <= w.last {
				continue
			}
			if err := w.send(ev); err != nil {
				return err
			}
			w.last = ev.Revision
		}
		clear(evs)
		w.mu.Lock()
		w.spare = evs[:0]
		w.mu.Unlock()
		if overflow {
			return errOverflow
		}
		if w.asked.Load() {
			if err := w.progress(); err != nil {
				return err
			}
		}
	}
}

// progress sends a Progress event if every published event for w has been
// delivered; otherwise the queue is not empty, and the next wake-up tries
// again.
func (w *watcher) progress() error {
	h := &w.s.hub
	h.mu.Lock()
	w.mu.Lock()
	// Direct sends stop until the progress event is in the channel, so no
	// later event can overtake it.
	w.direct = false
	idle, rev := len(w.pending) == 0 && !w.overflow, h.last
	w.mu.Unlock()
	h.mu.Unlock()
	if !idle {
		return nil
	}
	w.asked.Store(false)
	return w.send(store.Event{Type: store.Progress, Revision: max(rev, w.last)})
}

func (w *watcher) send(ev store.Event) error {
	select {
	case w.out <- ev:
		return nil
	case <-w.ctx.Done():
		return context.Cause(w.ctx)
	}
}
