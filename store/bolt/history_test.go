package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/kubegate/kubegate/store"
)

// maxFileAfter100k is the documented bound on the file after 100,000
// updates of one 1 KiB object with the default history (see the package
// doc for the measured size).
const maxFileAfter100k = 40 << 20

// TestHistoryStaysBounded updates one 1 KiB object 100,000 times and checks
// that the file stops growing once the history window is full. It runs
// without fsync: it is about size, not durability.
func TestHistoryStaysBounded(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	ctx := t.Context()
	value := bytes.Repeat([]byte("x"), 1024)
	if _, err := s.Create(ctx, "/pods/default/app", value); err != nil {
		t.Fatal(err)
	}
	const total, writers = 100_000, 40
	sizes := map[int]int64{}
	for done := 0; done < total; {
		const step = 20_000
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				for range step / writers {
					if _, err := s.Update(ctx, "/pods/default/app", value, 0); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		done += step
		size, err := s.FileSize()
		if err != nil {
			t.Fatal(err)
		}
		sizes[done] = size
		t.Logf("after %d updates: file %.1f MiB", done, float64(size)/(1<<20))
	}
	if sizes[total] > maxFileAfter100k {
		t.Errorf("file is %d bytes after %d updates, want at most %d", sizes[total], total, maxFileAfter100k)
	}
	if sizes[total] > sizes[40_000]+sizes[40_000]/10 {
		t.Errorf("file grew from %d bytes at 40,000 updates to %d at %d: history is not bounded", sizes[40_000], sizes[total], total)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	cur, _ := s.CurrentRevision(ctx)
	// Exactly the last HistoryRevisions revisions are kept.
	oldest := cur - DefaultHistoryRevisions + 1
	if _, err := s.Watch(ctx, "/", oldest-2); !errors.Is(err, store.ErrCompacted) {
		t.Errorf("Watch from %d: err = %v, want ErrCompacted", oldest-2, err)
	}
	w, err := s.Watch(ctx, "/", oldest-1)
	if err != nil {
		t.Fatalf("Watch from %d: %v", oldest-1, err)
	}
	defer w.Stop()
	if ev := <-w.ResultChan(); ev.Revision != oldest {
		t.Errorf("first replayed event at %d, want %d", ev.Revision, oldest)
	}
}

// TestHistoryBytes: with a byte budget smaller than the revision window,
// the budget wins.
func TestHistoryBytes(t *testing.T) {
	s := openTest(t, Options{HistoryRevisions: 1000, HistoryBytes: 10 << 10})
	ctx := t.Context()
	value := bytes.Repeat([]byte("y"), 1000)
	for i := range 50 {
		if _, err := s.Create(ctx, fmt.Sprintf("/b/%d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	var m meta
	if err := s.db.View(func(tx *bolt.Tx) error { m = readMeta(tx); return nil }); err != nil {
		t.Fatal(err)
	}
	if m.histBytes > 10<<10 || m.histBytes < 8<<10 {
		t.Errorf("history holds %d bytes, want at most %d and close to it", m.histBytes, 10<<10)
	}
	if kept := m.rev - m.compact + 1; kept >= 50 || kept < 5 {
		t.Errorf("%d events kept, want about 10", kept)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
}
