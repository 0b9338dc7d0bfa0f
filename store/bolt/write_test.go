package bolt

import (
	"errors"
	"testing"

	"github.com/kubegate/kubegate/store"
)

// TestBatchCompareAndSwap: writes committed in one transaction see each
// other, exactly as if they had been committed one by one.
func TestBatchCompareAndSwap(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	base, err := s.Create(ctx, "/k", []byte("0"))
	if err != nil {
		t.Fatal(err)
	}
	batch := []*op{
		{kind: opUpdate, key: "/k", value: []byte("1"), rev: base},     // base+1
		{kind: opUpdate, key: "/k", value: []byte("lost"), rev: base},  // conflict
		{kind: opUpdate, key: "/k", value: []byte("2"), rev: base + 1}, // base+2
		{kind: opCreate, key: "/n", value: []byte("a")},                // base+3
		{kind: opCreate, key: "/n", value: []byte("b")},                // exists
		{kind: opDelete, key: "/n", rev: base + 3},                     // base+4
		{kind: opUpdate, key: "/n", value: []byte("c")},                // not found
		{kind: opCompact, rev: base + 100},                             // future
		{kind: opCompact, rev: base + 2},
	}
	want := []struct {
		rev int64
		err error
	}{
		{base + 1, nil}, {0, store.ErrConflict}, {base + 2, nil}, {base + 3, nil}, {0, store.ErrExists},
		{base + 4, nil}, {0, store.ErrNotFound}, {0, store.ErrFutureRevision}, {0, nil},
	}
	w, err := s.Watch(ctx, "/", base)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Wait until the watcher is live: the batch compacts history it would
	// otherwise still have to read, which is ErrCompacted, as with etcd.
	w.RequestProgress()
	if ev := next(t, w); ev.Type != store.Progress {
		t.Fatalf("first event %v, want a progress notification", ev.Type)
	}
	// The writer goroutine is idle, so the test may commit itself.
	for _, o := range batch {
		o.done = make(chan result, 1)
	}
	s.commit(batch)
	for i, o := range batch {
		r := <-o.done
		if r.rev != want[i].rev || !errors.Is(r.err, want[i].err) || (want[i].err == nil) != (r.err == nil) {
			t.Errorf("op %d: revision %d, err %v; want %d, %v", i, r.rev, r.err, want[i].rev, want[i].err)
		}
	}
	if kv, err := s.Get(ctx, "/k"); err != nil || string(kv.Value) != "2" || kv.ModRevision != base+2 {
		t.Errorf("Get /k = %+v, %v; want 2 at %d", kv, err, base+2)
	}
	for _, rev := range []int64{base + 1, base + 2, base + 3, base + 4} {
		if ev := next(t, w); ev.Revision != rev {
			t.Errorf("event at %d, want %d", ev.Revision, rev)
		}
	}
	if err := s.Check(ctx); err != nil {
		t.Error(err)
	}
	if _, err := s.List(ctx, "/", store.ListOptions{Revision: base + 1}); !errors.Is(err, store.ErrCompacted) {
		t.Errorf("List below the compaction in the batch: err = %v, want ErrCompacted", err)
	}
}
