package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubegate/kubegate/store"
)

func currentRev(t *testing.T, s store.Store) int64 {
	t.Helper()
	rev, err := s.CurrentRevision(t.Context())
	if err != nil {
		t.Fatalf("CurrentRevision: %v", err)
	}
	return rev
}

func mustCreate(t *testing.T, s store.Store, key, value string) int64 {
	t.Helper()
	rev, err := s.Create(t.Context(), key, []byte(value))
	if err != nil {
		t.Fatalf("Create %s: %v", key, err)
	}
	return rev
}

func mustGet(t *testing.T, s store.Store, key string) store.KV {
	t.Helper()
	kv, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get %s: %v", key, err)
	}
	return kv
}

// nextEvent returns the next object event, skipping progress events.
func nextEvent(t *testing.T, w store.Watcher) store.Event {
	t.Helper()
	deadline := time.After(eventTimeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended early: %v", w.Err())
			}
			if ev.Type == store.Progress {
				continue
			}
			return ev
		case <-deadline:
			t.Fatalf("no watch event within %v", eventTimeout)
		}
	}
}

// waitClosed waits for the watch's channel to close, draining it.
func waitClosed(t *testing.T, w store.Watcher) {
	t.Helper()
	deadline := time.After(eventTimeout)
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("watch still open after %v", eventTimeout)
		}
	}
}

// watchErr starts a watch that must fail, and returns its error, whether
// Watch returns it or the watch ends with it before any event.
func watchErr(t *testing.T, s store.Store, prefix string, from int64) error {
	t.Helper()
	w, err := s.Watch(t.Context(), prefix, from)
	if err != nil {
		return err
	}
	defer w.Stop()
	deadline := time.After(eventTimeout)
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("Watch from %d delivered %s, want an error", from, fmtEvent(ev))
		}
		if w.Err() == nil {
			return errors.New("watch ended without an error")
		}
		return w.Err()
	case <-deadline:
		t.Fatalf("Watch from %d neither failed nor ended within %v", from, eventTimeout)
	}
	return nil
}

func keys(kvs []store.KV) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = kv.Key
	}
	return out
}

func equalKV(a, b store.KV) bool {
	return a.Key == b.Key && bytes.Equal(a.Value, b.Value) &&
		a.CreateRevision == b.CreateRevision && a.ModRevision == b.ModRevision
}

func equalKVs(a, b []store.KV) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equalKV(a[i], b[i]) {
			return false
		}
	}
	return true
}

func equalEvent(a, b store.Event) bool {
	if a.Type != b.Type || a.Revision != b.Revision || !equalKV(a.KV, b.KV) || (a.Prev == nil) != (b.Prev == nil) {
		return false
	}
	return a.Prev == nil || equalKV(*a.Prev, *b.Prev)
}

func fmtKV(kv store.KV) string {
	return fmt.Sprintf("{%s=%q create=%d mod=%d}", kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision)
}

func fmtKVs(kvs []store.KV) string {
	s := make([]string, len(kvs))
	for i, kv := range kvs {
		s[i] = fmtKV(kv)
	}
	return "[" + strings.Join(s, " ") + "]"
}

func fmtEvent(ev store.Event) string {
	s := fmt.Sprintf("%s@%d %s", ev.Type, ev.Revision, fmtKV(ev.KV))
	if ev.Prev != nil {
		s += " prev=" + fmtKV(*ev.Prev)
	}
	return s
}

// Parallel runs fn(writer, i) for every i in [0, b.N), spread over writers
// goroutines, and fails b at a writer's first error.
func Parallel(b *testing.B, writers int, fn func(writer, i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := fn(w, i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
