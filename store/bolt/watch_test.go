package bolt

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kubegate/kubegate/store"
)

// TestSlowWatcherCatchesUp: a watcher whose consumer stops reading while
// its queue overflows still gets every event, in order, from the file.
func TestSlowWatcherCatchesUp(t *testing.T) {
	s := openTest(t, Options{WatchBuffer: 4})
	ctx := t.Context()
	w, err := s.Watch(ctx, "/slow/", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var revs []int64
	for i := range 500 {
		rev, err := s.Create(ctx, fmt.Sprintf("/slow/%03d", i), nil)
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, rev)
	}
	var got []int64
	for range revs {
		got = append(got, next(t, w).Revision)
	}
	if !slices.Equal(got, revs) {
		t.Errorf("slow watcher got revisions %v…, want %v…", got[:10], revs[:10])
	}
	// And it is live again afterwards.
	rev, err := s.Create(ctx, "/slow/live", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, w); ev.Revision != rev {
		t.Errorf("event after catching up at %d, want %d", ev.Revision, rev)
	}
}

// TestSlowWatcherCompacted: a watcher that falls behind the kept history
// ends with ErrCompacted after the events it did get, so the client
// re-lists.
func TestSlowWatcherCompacted(t *testing.T) {
	s := openTest(t, Options{WatchBuffer: 4, HistoryRevisions: 10})
	ctx := t.Context()
	w, err := s.Watch(ctx, "/slow/", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range 500 {
		if _, err := s.Create(ctx, fmt.Sprintf("/slow/%03d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	var last int64
	for ev := range w.ResultChan() {
		if ev.Revision <= last {
			t.Fatalf("event at %d after %d", ev.Revision, last)
		}
		last = ev.Revision
	}
	var re *store.RevisionError
	if err := w.Err(); !errors.As(err, &re) || !errors.Is(err, store.ErrCompacted) || re.Requested != last {
		t.Errorf("Err = %v, want ErrCompacted after revision %d", err, last)
	}
}

// TestReopen: data, revision and history survive Close and Open.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	first, err := s.Create(ctx, "/r/a", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Update(ctx, "/r/a", []byte("2"), first)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "/r/a"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Get after Close: err = %v, want ErrClosed", err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rev, _ := s.CurrentRevision(ctx); rev != second {
		t.Errorf("revision after reopening = %d, want %d", rev, second)
	}
	w, err := s.Watch(ctx, "/r/", first)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := next(t, w); ev.Revision != second || string(ev.Prev.Value) != "1" {
		t.Errorf("replayed event after reopening = %+v, want the update at %d", ev, second)
	}
	if err := s.Check(ctx); err != nil {
		t.Error(err)
	}
}

// TestOpenLocked: a second process, or Open, cannot use a file in use.
func TestOpenLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(path, Options{LockTimeout: 50 * time.Millisecond})
	if err == nil || !errors.Is(err, errLocked) {
		t.Errorf("second Open: err = %v, want a locked-file error", err)
	}
}

// TestWatchFanout: 1,000 watchers each get every event, in order.
func TestWatchFanout(t *testing.T) {
	const watchers, events = 1000, 50
	s := openTest(t, Options{})
	ctx := t.Context()
	var wg sync.WaitGroup
	got := make([][]int64, watchers)
	for i := range watchers {
		w, err := s.Watch(ctx, "/fan/", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		wg.Go(func() {
			for range events {
				select {
				case ev := <-w.ResultChan():
					got[i] = append(got[i], ev.Revision)
				case <-time.After(time.Minute):
					return
				}
			}
		})
	}
	var want []int64
	for i := range events {
		rev, err := s.Update(ctx, "/fan/obj", []byte(strconv.Itoa(i)), 0)
		if errors.Is(err, store.ErrNotFound) {
			rev, err = s.Create(ctx, "/fan/obj", []byte(strconv.Itoa(i)))
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, rev)
	}
	wg.Wait()
	for i := range watchers {
		if !slices.Equal(got[i], want) {
			t.Fatalf("watcher %d got %d events %v, want %v", i, len(got[i]), got[i], want)
		}
	}
}

func next(t *testing.T, w store.Watcher) store.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch ended: %v", w.Err())
		}
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no event within 20s")
	}
	return store.Event{}
}
