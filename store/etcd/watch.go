package etcd

import (
	"context"
	"errors"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubegate/kubegate/store"
)

func (s *Store) kv(kv *mvccpb.KeyValue) store.KV {
	return store.KV{
		Key:            strings.TrimPrefix(string(kv.Key), s.prefix),
		Value:          kv.Value,
		CreateRevision: kv.CreateRevision,
		ModRevision:    kv.ModRevision,
	}
}

func (s *Store) event(ev *clientv3.Event) store.Event {
	out := store.Event{Revision: ev.Kv.ModRevision, KV: s.kv(ev.Kv)}
	if ev.PrevKv != nil {
		prev := s.kv(ev.PrevKv)
		out.Prev = &prev
	}
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		out.Type = store.Deleted
		if out.Prev != nil {
			out.KV.Value, out.KV.CreateRevision = out.Prev.Value, out.Prev.CreateRevision
		}
	case ev.IsCreate():
		out.Type, out.Prev = store.Added, nil
	default:
		out.Type = store.Modified
	}
	return out
}

// errStopped is the cancellation cause of Watcher.Stop.
var errStopped = errors.New("watch stopped")

// streamContext carries the metadata of every watch's context, so that
// RequestProgress reaches the gRPC stream the watches share.
func streamContext(ctx context.Context) context.Context {
	return clientv3.WithRequireLeader(ctx)
}

// Watch implements store.Store.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) (store.Watcher, error) {
	if err := s.check(ctx, "", ""); err != nil {
		return nil, err
	}
	key := s.prefix + prefix
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithCreatedNotify()}
	if key == "" {
		key, opts[0] = "\x00", clientv3.WithFromKey()
	}
	if fromRevision > 0 {
		// Ask for the first revision the watch needs: etcd refuses it if
		// it is compacted. A future one is fine for a watch.
		err := s.read(ctx, func(ctx context.Context, c *clientv3.Client) error {
			_, err := c.Get(ctx, key, clientv3.WithRev(fromRevision+1), clientv3.WithCountOnly())
			return err
		})
		if err != nil && !errors.Is(err, rpctypes.ErrFutureRev) {
			return nil, s.fail(ctx, err, fromRevision)
		}
		opts = append(opts, clientv3.WithRev(fromRevision+1))
	}
	wctx, cancel := context.WithCancelCause(streamContext(ctx))
	w := &watcher{s: s, cancel: cancel, ctx: wctx, from: fromRevision, out: make(chan store.Event, 64), exited: make(chan struct{})}
	ch := s.cli.Watch(wctx, key, opts...)
	// Wait until etcd has registered the watch, so a write that follows
	// Watch is seen.
	select {
	case resp, ok := <-ch:
		if err := w.failure(resp, ok); err != nil {
			cancel(errStopped)
			return nil, err
		}
	case <-ctx.Done():
		cancel(errStopped)
		return nil, ctx.Err()
	}
	s.closeMu.Lock()
	if s.closed.Load() {
		s.closeMu.Unlock()
		cancel(errStopped)
		return nil, store.ErrClosed
	}
	s.bg.Add(1)
	s.closeMu.Unlock()
	go func() {
		defer s.bg.Done()
		w.run(ch)
	}()
	return w, nil
}

type watcher struct {
	s      *Store
	ctx    context.Context
	cancel context.CancelCauseFunc
	from   int64
	out    chan store.Event
	exited chan struct{}

	mu  sync.Mutex
	err error
}

var _ store.Watcher = (*watcher)(nil)

func (w *watcher) ResultChan() <-chan store.Event { return w.out }

func (w *watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *watcher) RequestProgress() {
	// Best effort: an error means the stream is going away, and the watch
	// ends with its own error.
	_ = w.s.cli.RequestProgress(streamContext(context.Background()))
}

func (w *watcher) Stop() {
	w.cancel(errStopped)
	<-w.exited
}

// failure returns why a watch response ends the watch, or nil.
func (w *watcher) failure(resp clientv3.WatchResponse, ok bool) error {
	switch {
	case w.s.closed.Load():
		return store.ErrClosed
	case !ok:
		if cause := context.Cause(w.ctx); cause != nil {
			return cause
		}
		return errors.New("etcd closed the watch")
	case resp.CompactRevision != 0:
		return &store.RevisionError{Requested: w.from, Bound: resp.CompactRevision, Err: store.ErrCompacted}
	case resp.Err() != nil:
		return w.s.fail(w.ctx, resp.Err(), w.from)
	}
	return nil
}

func (w *watcher) run(ch clientv3.WatchChan) {
	defer close(w.exited)
	defer close(w.out)
	err := w.forward(ch)
	if errors.Is(err, errStopped) {
		err = nil
	}
	w.cancel(errStopped)
	for range ch {
		// Drain until the client closes the channel.
	}
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}

func (w *watcher) forward(ch clientv3.WatchChan) error {
	for {
		var resp clientv3.WatchResponse
		var ok bool
		select {
		case resp, ok = <-ch:
		case <-w.ctx.Done():
			return w.failure(resp, false)
		}
		if err := w.failure(resp, ok); err != nil {
			return err
		}
		if resp.IsProgressNotify() {
			if err := w.send(store.Event{Type: store.Progress, Revision: resp.Header.Revision}); err != nil {
				return err
			}
			continue
		}
		for _, ev := range resp.Events {
			if err := w.send(w.s.event(ev)); err != nil {
				return err
			}
		}
	}
}

func (w *watcher) send(ev store.Event) error {
	select {
	case w.out <- ev:
		return nil
	case <-w.ctx.Done():
		return w.failure(clientv3.WatchResponse{}, false)
	}
}
