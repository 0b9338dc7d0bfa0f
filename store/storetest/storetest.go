// Package storetest is the contract every store.Store implementation must
// meet, as one test suite that each implementation runs against itself.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kubegate/kubegate/store"
)

// eventTimeout bounds every wait for a watch event; it is a failure
// deadline, never a delay.
const eventTimeout = 20 * time.Second

// Run runs the contract. newStore returns a store without keys (its
// revision may be above 1) and closes it when t ends; Close must be safe to
// call twice, since some tests close the store themselves.
//
// The compaction tests run first and alone, because stores sharing one
// backend (etcd) share its compaction; the rest run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	sequential := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"Compact", testCompact},
	}
	for _, tc := range sequential {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
	parallel := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"CreateGet", testCreateGet},
		{"InvalidKey", testInvalidKey},
		{"Update", testUpdate},
		{"Delete", testDelete},
		{"ConcurrentCompareAndSwap", testConcurrentCAS},
		{"List", testList},
		{"ListAtRevision", testListAtRevision},
		{"Pagination", testPagination},
		{"WatchEvents", testWatchEvents},
		{"WatchResume", testWatchResume},
		{"WatchFromNow", testWatchFromNow},
		{"WatchOrderUnderLoad", testWatchOrderUnderLoad},
		{"WatchEnd", testWatchEnd},
		{"Progress", testProgress},
		{"Close", testClose},
	}
	for _, tc := range parallel {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
	t.Run("Expirer", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		e, ok := s.(store.Expirer)
		if !ok {
			t.Skipf("%T keeps no key for a limited time", s)
		}
		testExpirer(t, s, e)
	})
}

// testExpirer: a key put with a TTL is there until the TTL passes, then
// deleted with a Deleted event; another put moves the key to a TTL of its
// own, and another key's TTL is its own.
func testExpirer(t *testing.T, s store.Store, e store.Expirer) {
	ctx := context.Background()
	const short = 2 * time.Second
	from := currentRev(t, s)
	if _, err := e.PutTTL(ctx, "/ttl/moved", []byte("short"), short); err != nil {
		t.Fatal(err)
	}
	if _, err := e.PutTTL(ctx, "/ttl/moved", []byte("long"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.PutTTL(ctx, "/ttl/long", []byte("long"), time.Minute); err != nil {
		t.Fatal(err)
	}
	put := time.Now()
	rev, err := e.PutTTL(ctx, "/ttl/short", []byte("v"), short)
	if err != nil {
		t.Fatal(err)
	}
	if kv := mustGet(t, s, "/ttl/short"); string(kv.Value) != "v" || kv.ModRevision != rev {
		t.Fatalf("after PutTTL: got %s, want value v at %d", fmtKV(kv), rev)
	}
	w, err := s.Watch(ctx, "/ttl/", from)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for {
		ev := nextEvent(t, w)
		if ev.Type != store.Deleted {
			continue
		}
		if ev.KV.Key != "/ttl/short" {
			t.Fatalf("deleted %s, want only /ttl/short to expire", fmtEvent(ev))
		}
		break
	}
	// A generous lower bound: the key lived about its TTL, not a moment.
	if lived := time.Since(put); lived < short/2 {
		t.Errorf("the key expired %v after its put, want about %v", lived, short)
	}
	if _, err := s.Get(ctx, "/ttl/short"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after expiry: got %v, want ErrNotFound", err)
	}
	for _, k := range []string{"/ttl/moved", "/ttl/long"} {
		if kv := mustGet(t, s, k); string(kv.Value) != "long" {
			t.Errorf("%s: got %s, want it kept by its long TTL", k, fmtKV(kv))
		}
	}
}

func testCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	before := currentRev(t, s)
	rev, err := s.Create(ctx, "/a/x", []byte("one"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if rev <= before {
		t.Errorf("Create revision = %d, want above the revision before, %d", rev, before)
	}
	if cur := currentRev(t, s); cur < rev {
		t.Errorf("CurrentRevision = %d after a write at %d", cur, rev)
	}
	got := mustGet(t, s, "/a/x")
	want := store.KV{Key: "/a/x", Value: []byte("one"), CreateRevision: rev, ModRevision: rev}
	if !equalKV(got, want) {
		t.Errorf("Get = %s, want %s", fmtKV(got), fmtKV(want))
	}
	if _, err := s.Create(ctx, "/a/x", []byte("two")); !errors.Is(err, store.ErrExists) {
		t.Errorf("second Create: err = %v, want ErrExists", err)
	}
	if got := mustGet(t, s, "/a/x"); string(got.Value) != "one" {
		t.Errorf("after the failed Create the value is %q, want %q", got.Value, "one")
	}
	if _, err := s.Get(ctx, "/a/missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a missing key: err = %v, want ErrNotFound", err)
	}
	// Empty and large values round-trip.
	big := make([]byte, 256<<10)
	for i := range big {
		big[i] = byte(i)
	}
	for name, v := range map[string][]byte{"/a/empty": nil, "/a/big": big} {
		if _, err := s.Create(ctx, name, v); err != nil {
			t.Fatalf("Create %s: %v", name, err)
		}
		if got := mustGet(t, s, name); string(got.Value) != string(v) {
			t.Errorf("Get %s: value of %d bytes, want %d bytes", name, len(got.Value), len(v))
		}
	}
}

func testInvalidKey(t *testing.T, s store.Store) {
	ctx := t.Context()
	ops := map[string]func() error{
		"Get":    func() error { _, err := s.Get(ctx, ""); return err },
		"Create": func() error { _, err := s.Create(ctx, "", nil); return err },
		"Update": func() error { _, err := s.Update(ctx, "", nil, 0); return err },
		"Delete": func() error { _, _, err := s.Delete(ctx, "", 0); return err },
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("%s with an empty key: err = %v, want ErrInvalidKey", name, err)
		}
	}
}

func testUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	created, err := s.Create(ctx, "/u/x", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	rev2, err := s.Update(ctx, "/u/x", []byte("v2"), created)
	if err != nil {
		t.Fatalf("Update with the current revision: %v", err)
	}
	if rev2 <= created {
		t.Errorf("Update revision = %d, want above %d", rev2, created)
	}
	want := store.KV{Key: "/u/x", Value: []byte("v2"), CreateRevision: created, ModRevision: rev2}
	if got := mustGet(t, s, "/u/x"); !equalKV(got, want) {
		t.Errorf("Get = %s, want %s", fmtKV(got), fmtKV(want))
	}

	tests := []struct {
		name     string
		key      string
		expected int64
		wantErr  error
	}{
		{"stale revision", "/u/x", created, store.ErrConflict},
		{"future revision", "/u/x", rev2 + 1000, store.ErrConflict},
		{"missing key", "/u/missing", 0, store.ErrNotFound},
		{"missing key with revision", "/u/missing", created, store.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Update(ctx, tc.key, []byte("lost"), tc.expected)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("Update: err = %v, want %v", err, tc.wantErr)
			}
			var ke *store.KeyError
			if !errors.As(err, &ke) || ke.Key != tc.key {
				t.Errorf("Update: err = %#v, want a *store.KeyError for %q", err, tc.key)
			}
		})
	}
	if got := mustGet(t, s, "/u/x"); string(got.Value) != "v2" || got.ModRevision != rev2 {
		t.Errorf("failed updates changed the key: %s", fmtKV(got))
	}
	rev3, err := s.Update(ctx, "/u/x", []byte("v3"), 0)
	if err != nil {
		t.Fatalf("unconditional Update: %v", err)
	}
	if got := mustGet(t, s, "/u/x"); string(got.Value) != "v3" || got.ModRevision != rev3 || got.CreateRevision != created {
		t.Errorf("after the unconditional Update: %s", fmtKV(got))
	}
}

func testDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	created, err := s.Create(ctx, "/d/x", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	updated, err := s.Update(ctx, "/d/x", []byte("v2"), created)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delete(ctx, "/d/x", created); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Delete with a stale revision: err = %v, want ErrConflict", err)
	}
	if got := mustGet(t, s, "/d/x"); string(got.Value) != "v2" {
		t.Errorf("after the failed Delete: %s", fmtKV(got))
	}
	prev, rev, err := s.Delete(ctx, "/d/x", updated)
	if err != nil {
		t.Fatalf("Delete with the current revision: %v", err)
	}
	wantPrev := store.KV{Key: "/d/x", Value: []byte("v2"), CreateRevision: created, ModRevision: updated}
	if !equalKV(prev, wantPrev) {
		t.Errorf("Delete returned %s, want %s", fmtKV(prev), fmtKV(wantPrev))
	}
	if rev <= updated {
		t.Errorf("Delete revision = %d, want above %d", rev, updated)
	}
	if _, err := s.Get(ctx, "/d/x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after Delete: err = %v, want ErrNotFound", err)
	}
	if _, _, err := s.Delete(ctx, "/d/x", 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second Delete: err = %v, want ErrNotFound", err)
	}
	recreated, err := s.Create(ctx, "/d/x", []byte("v3"))
	if err != nil {
		t.Fatalf("Create after Delete: %v", err)
	}
	if recreated <= rev {
		t.Errorf("re-Create revision = %d, want above the delete at %d", recreated, rev)
	}
	if got := mustGet(t, s, "/d/x"); got.CreateRevision != recreated {
		t.Errorf("re-created key has CreateRevision %d, want %d", got.CreateRevision, recreated)
	}
	if _, _, err := s.Delete(ctx, "/d/x", 0); err != nil {
		t.Errorf("unconditional Delete: %v", err)
	}
}

// testConcurrentCAS: 64 writers increment one counter with read, then
// compare-and-swap. Every attempt either succeeds or conflicts, and the
// counter equals the number of successes: no update is lost.
func testConcurrentCAS(t *testing.T, s store.Store) {
	const writers, attempts = 64, 10
	ctx := t.Context()
	if _, err := s.Create(ctx, "/cas/counter", []byte("0")); err != nil {
		t.Fatal(err)
	}
	var (
		mu        sync.Mutex
		successes int
		revs      = map[int64]bool{}
		wg        sync.WaitGroup
		errs      = make(chan error, writers*attempts)
	)
	for range writers {
		wg.Go(func() {
			for range attempts {
				kv, err := s.Get(ctx, "/cas/counter")
				if err != nil {
					errs <- err
					return
				}
				n, err := strconv.Atoi(string(kv.Value))
				if err != nil {
					errs <- err
					return
				}
				rev, err := s.Update(ctx, "/cas/counter", []byte(strconv.Itoa(n+1)), kv.ModRevision)
				switch {
				case errors.Is(err, store.ErrConflict):
				case err != nil:
					errs <- err
					return
				default:
					mu.Lock()
					successes++
					if revs[rev] {
						errs <- fmt.Errorf("revision %d returned to two updates", rev)
					}
					revs[rev] = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("update got %v, want success or ErrConflict", err)
	}
	got, err := strconv.Atoi(string(mustGet(t, s, "/cas/counter").Value))
	if err != nil {
		t.Fatal(err)
	}
	if got != successes || successes == 0 {
		t.Errorf("counter = %d after %d successful updates", got, successes)
	}
}

func testList(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, k := range []string{"/l/c", "/l/a", "/lx/a", "/l/b", "/k/a"} {
		if _, err := s.Create(ctx, k, []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	before := currentRev(t, s)
	res, err := s.List(ctx, "/l/", store.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if got, want := keys(res.KVs), []string{"/l/a", "/l/b", "/l/c"}; !slices.Equal(got, want) {
		t.Errorf("List keys = %q, want %q", got, want)
	}
	for _, kv := range res.KVs {
		if string(kv.Value) != "v"+kv.Key || kv.ModRevision == 0 || kv.CreateRevision != kv.ModRevision {
			t.Errorf("List item %s", fmtKV(kv))
		}
	}
	if res.Revision < before || res.More {
		t.Errorf("List revision = %d, more = %v; want at least %d, false", res.Revision, res.More, before)
	}
	all, err := s.List(ctx, "", store.ListOptions{})
	if err != nil {
		t.Fatalf("List of every key: %v", err)
	}
	if got, want := keys(all.KVs), []string{"/k/a", "/l/a", "/l/b", "/l/c", "/lx/a"}; !slices.Equal(got, want) {
		t.Errorf("List of every key = %q, want %q", got, want)
	}
	empty, err := s.List(ctx, "/none/", store.ListOptions{})
	if err != nil || len(empty.KVs) != 0 || empty.Revision < before {
		t.Errorf("List of an empty prefix = %d keys at %d, %v; want none at %d or later", len(empty.KVs), empty.Revision, err, before)
	}
}

func testListAtRevision(t *testing.T, s store.Store) {
	ctx := t.Context()
	revA := mustCreate(t, s, "/r/a", "a1")
	revB := mustCreate(t, s, "/r/b", "b1")
	at := revB
	revA2, err := s.Update(ctx, "/r/a", []byte("a2"), revA)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delete(ctx, "/r/b", revB); err != nil {
		t.Fatal(err)
	}
	revC := mustCreate(t, s, "/r/c", "c1")
	mustCreate(t, s, "/r/0", "created later, sorts first")

	res, err := s.List(ctx, "/r/", store.ListOptions{Revision: at})
	if err != nil {
		t.Fatalf("List at %d: %v", at, err)
	}
	want := []store.KV{
		{Key: "/r/a", Value: []byte("a1"), CreateRevision: revA, ModRevision: revA},
		{Key: "/r/b", Value: []byte("b1"), CreateRevision: revB, ModRevision: revB},
	}
	if !equalKVs(res.KVs, want) || res.Revision != at {
		t.Errorf("List at %d = %s at %d, want %s", at, fmtKVs(res.KVs), res.Revision, fmtKVs(want))
	}
	res, err = s.List(ctx, "/r/", store.ListOptions{Revision: revA2})
	if err != nil {
		t.Fatal(err)
	}
	want = []store.KV{
		{Key: "/r/a", Value: []byte("a2"), CreateRevision: revA, ModRevision: revA2},
		{Key: "/r/b", Value: []byte("b1"), CreateRevision: revB, ModRevision: revB},
	}
	if !equalKVs(res.KVs, want) {
		t.Errorf("List at %d = %s, want %s", revA2, fmtKVs(res.KVs), fmtKVs(want))
	}
	res, err = s.List(ctx, "/r/", store.ListOptions{Revision: revC})
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(res.KVs); !slices.Equal(got, []string{"/r/a", "/r/c"}) {
		t.Errorf("List at %d = %q, want /r/a and /r/c", revC, got)
	}
	future := currentRev(t, s) + 1000
	_, err = s.List(ctx, "/r/", store.ListOptions{Revision: future})
	if !errors.Is(err, store.ErrFutureRevision) {
		t.Errorf("List at future revision %d: err = %v, want ErrFutureRevision", future, err)
	}
}

func testPagination(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i := range 10 {
		mustCreate(t, s, fmt.Sprintf("/p/%02d", i), strconv.Itoa(i))
	}
	tests := []struct {
		limit int64
		pages [][]string
	}{
		{3, [][]string{{"00", "01", "02"}, {"03", "04", "05"}, {"06", "07", "08"}, {"09"}}},
		{5, [][]string{{"00", "01", "02", "03", "04"}, {"05", "06", "07", "08", "09"}}},
		{10, [][]string{{"00", "01", "02", "03", "04", "05", "06", "07", "08", "09"}}},
	}
	// Without Count a page says whether more come, not how many.
	res, err := s.List(ctx, "/p/", store.ListOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !res.More || res.Remaining != 0 || len(res.KVs) != 3 {
		t.Errorf("first page of 3 without Count: more %v, remaining %d, %d keys; want true, 0, 3", res.More, res.Remaining, len(res.KVs))
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("limit=%d", tc.limit), func(t *testing.T) {
			opts := store.ListOptions{Limit: tc.limit, Count: true}
			for i, page := range tc.pages {
				res, err := s.List(ctx, "/p/", opts)
				if err != nil {
					t.Fatalf("page %d: %v", i, err)
				}
				want := make([]string, len(page))
				for j, p := range page {
					want[j] = "/p/" + p
				}
				if got := keys(res.KVs); !slices.Equal(got, want) {
					t.Errorf("page %d = %q, want %q", i, got, want)
				}
				if wantMore := i < len(tc.pages)-1; res.More != wantMore {
					t.Errorf("page %d: more = %v, want %v", i, res.More, wantMore)
				}
				after := 0
				for _, p := range tc.pages[i+1:] {
					after += len(p)
				}
				if res.Remaining != int64(after) {
					t.Errorf("page %d: remaining = %d, want %d", i, res.Remaining, after)
				}
				if i == 0 {
					// Later pages come from the first page's snapshot,
					// whatever changes meanwhile.
					opts.Revision = res.Revision
					if _, err := s.Update(ctx, "/p/05", []byte("changed"), 0); err != nil {
						t.Fatal(err)
					}
					mustCreate(t, s, "/p/05-new", "new")
					if _, _, err := s.Delete(ctx, "/p/09", 0); err != nil {
						t.Fatal(err)
					}
				} else if res.Revision != opts.Revision {
					t.Errorf("page %d revision = %d, want %d", i, res.Revision, opts.Revision)
				}
				for _, kv := range res.KVs {
					if kv.Key == "/p/05" && string(kv.Value) != "5" {
						t.Errorf("page %d shows /p/05 = %q, a change after the snapshot", i, kv.Value)
					}
				}
				if len(res.KVs) > 0 {
					opts.Continue = res.KVs[len(res.KVs)-1].Key
				}
			}
			// Put back what the pages changed, for the next limit.
			for i := range 10 {
				k := fmt.Sprintf("/p/%02d", i)
				if _, err := s.Update(ctx, k, []byte(strconv.Itoa(i)), 0); errors.Is(err, store.ErrNotFound) {
					mustCreate(t, s, k, strconv.Itoa(i))
				} else if err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := s.Delete(ctx, "/p/05-new", 0); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func testWatchEvents(t *testing.T, s store.Store) {
	ctx := t.Context()
	w, err := s.Watch(ctx, "/w/", 0)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer w.Stop()
	r1 := mustCreate(t, s, "/w/a", "1")
	mustCreate(t, s, "/wx/a", "other prefix")
	r2, err := s.Update(ctx, "/w/a", []byte("2"), r1)
	if err != nil {
		t.Fatal(err)
	}
	_, r3, err := s.Delete(ctx, "/w/a", r2)
	if err != nil {
		t.Fatal(err)
	}
	r4 := mustCreate(t, s, "/w/b", "b")

	want := []store.Event{
		{Type: store.Added, Revision: r1, KV: store.KV{Key: "/w/a", Value: []byte("1"), CreateRevision: r1, ModRevision: r1}},
		{Type: store.Modified, Revision: r2, KV: store.KV{Key: "/w/a", Value: []byte("2"), CreateRevision: r1, ModRevision: r2},
			Prev: &store.KV{Key: "/w/a", Value: []byte("1"), CreateRevision: r1, ModRevision: r1}},
		{Type: store.Deleted, Revision: r3, KV: store.KV{Key: "/w/a", Value: []byte("2"), CreateRevision: r1, ModRevision: r3},
			Prev: &store.KV{Key: "/w/a", Value: []byte("2"), CreateRevision: r1, ModRevision: r2}},
		{Type: store.Added, Revision: r4, KV: store.KV{Key: "/w/b", Value: []byte("b"), CreateRevision: r4, ModRevision: r4}},
	}
	for i, wantEv := range want {
		got := nextEvent(t, w)
		if !equalEvent(got, wantEv) {
			t.Errorf("event %d = %s, want %s", i, fmtEvent(got), fmtEvent(wantEv))
		}
	}
}

func testWatchResume(t *testing.T, s store.Store) {
	ctx := t.Context()
	var revs []int64
	r := mustCreate(t, s, "/wr/a", "0")
	revs = append(revs, r)
	for i := 1; i < 5; i++ {
		var err error
		if r, err = s.Update(ctx, "/wr/a", []byte(strconv.Itoa(i)), r); err != nil {
			t.Fatal(err)
		}
		revs = append(revs, r)
	}
	// Each sub-test adds one live event, which the later ones replay.
	for from := range 5 {
		t.Run(fmt.Sprintf("after event %d", from), func(t *testing.T) {
			w, err := s.Watch(ctx, "/wr/", revs[from])
			if err != nil {
				t.Fatalf("Watch from %d: %v", revs[from], err)
			}
			defer w.Stop()
			for i := from + 1; i < len(revs); i++ {
				ev := nextEvent(t, w)
				if ev.Revision != revs[i] {
					t.Errorf("replayed event = %s, want revision %d", fmtEvent(ev), revs[i])
				}
				if i < 5 && (string(ev.KV.Value) != strconv.Itoa(i) || ev.Type != store.Modified) {
					t.Errorf("replayed event = %s, want MODIFIED with value %d", fmtEvent(ev), i)
				}
			}
			// Then the live events follow without a gap.
			live := mustCreate(t, s, fmt.Sprintf("/wr/live%d", from), "live")
			revs = append(revs, live)
			if ev := nextEvent(t, w); ev.Revision != live || ev.Type != store.Added {
				t.Errorf("first live event = %s, want ADDED at %d", fmtEvent(ev), live)
			}
		})
	}
}

func testWatchFromNow(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreate(t, s, "/wz/before", "x")
	w, err := s.Watch(ctx, "/wz/", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	after := mustCreate(t, s, "/wz/after", "y")
	if ev := nextEvent(t, w); ev.KV.Key != "/wz/after" || ev.Revision != after {
		t.Errorf("first event = %s, want the write after Watch, at %d", fmtEvent(ev), after)
	}
}

// testWatchOrderUnderLoad: concurrent writers; two watchers see every event
// once, in increasing revision order, and the same sequence.
func testWatchOrderUnderLoad(t *testing.T, s store.Store) {
	const writers, perWriter = 8, 50
	ctx := t.Context()
	from := currentRev(t, s)
	var ws []store.Watcher
	for range 2 {
		w, err := s.Watch(ctx, "/wl/", from)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ws = append(ws, w)
	}
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				if _, err := s.Create(ctx, fmt.Sprintf("/wl/%d/%d", g, i), []byte("x")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var seqs [][]int64
	for _, w := range ws {
		seen := map[string]bool{}
		var seq []int64
		for range writers * perWriter {
			ev := nextEvent(t, w)
			if ev.Type != store.Added || seen[ev.KV.Key] {
				t.Fatalf("event %s: want one ADDED per key", fmtEvent(ev))
			}
			if len(seq) > 0 && ev.Revision <= seq[len(seq)-1] {
				t.Fatalf("event at %d after one at %d", ev.Revision, seq[len(seq)-1])
			}
			seen[ev.KV.Key] = true
			seq = append(seq, ev.Revision)
		}
		seqs = append(seqs, seq)
	}
	if !slices.Equal(seqs[0], seqs[1]) {
		t.Errorf("two watchers saw different sequences")
	}
}

func testWatchEnd(t *testing.T, s store.Store) {
	t.Run("Stop", func(t *testing.T) {
		w, err := s.Watch(t.Context(), "/we/", 0)
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
		w.Stop()
		waitClosed(t, w)
		if err := w.Err(); err != nil {
			t.Errorf("Err after Stop = %v, want nil", err)
		}
	})
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		w, err := s.Watch(ctx, "/we/", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		cancel()
		waitClosed(t, w)
		if err := w.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("Err after cancel = %v, want context.Canceled", err)
		}
	})
}

func testProgress(t *testing.T, s store.Store) {
	ctx := t.Context()
	w, err := s.Watch(ctx, "/pg/", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	rev := mustCreate(t, s, "/pg/a", "x")
	if ev := nextEvent(t, w); ev.Revision != rev {
		t.Fatalf("event = %s, want the create at %d", fmtEvent(ev), rev)
	}
	// Progress is best effort: ask until an answer comes.
	deadline := time.After(eventTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		w.RequestProgress()
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended: %v", w.Err())
			}
			if ev.Type != store.Progress || ev.Revision < rev {
				t.Fatalf("event = %s, want PROGRESS at %d or later", fmtEvent(ev), rev)
			}
			return
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no progress event within %v", eventTimeout)
		}
	}
}

func testCompact(t *testing.T, s store.Store) {
	ctx := t.Context()
	var revs []int64
	r := mustCreate(t, s, "/c/a", "0")
	revs = append(revs, r)
	for i := 1; i < 5; i++ {
		var err error
		if r, err = s.Update(ctx, "/c/a", []byte(strconv.Itoa(i)), r); err != nil {
			t.Fatal(err)
		}
		revs = append(revs, r)
	}
	// A watch that started before compaction and is keeping up is not
	// affected by it.
	early, err := s.Watch(ctx, "/c/", revs[4])
	if err != nil {
		t.Fatal(err)
	}
	defer early.Stop()
	at := revs[3]
	if err := s.Compact(ctx, at); err != nil {
		t.Fatalf("Compact(%d): %v", at, err)
	}

	t.Run("watch from before the kept history", func(t *testing.T) {
		err := watchErr(t, s, "/c/", revs[0])
		if !errors.Is(err, store.ErrCompacted) {
			t.Fatalf("Watch from %d: err = %v, want ErrCompacted", revs[0], err)
		}
	})
	t.Run("list before the kept history", func(t *testing.T) {
		_, err := s.List(ctx, "/c/", store.ListOptions{Revision: revs[2]})
		if !errors.Is(err, store.ErrCompacted) {
			t.Fatalf("List at %d: err = %v, want ErrCompacted", revs[2], err)
		}
		var re *store.RevisionError
		if !errors.As(err, &re) || re.Requested != revs[2] {
			t.Errorf("List at %d: err = %#v, want a *store.RevisionError for %d", revs[2], err, revs[2])
		}
	})
	t.Run("list at the compaction revision", func(t *testing.T) {
		res, err := s.List(ctx, "/c/", store.ListOptions{Revision: at})
		if err != nil {
			t.Fatalf("List at %d: %v", at, err)
		}
		if len(res.KVs) != 1 || string(res.KVs[0].Value) != "3" {
			t.Errorf("List at %d = %s, want /c/a = 3", at, fmtKVs(res.KVs))
		}
	})
	t.Run("watch from the compaction revision", func(t *testing.T) {
		w, err := s.Watch(ctx, "/c/", at)
		if err != nil {
			t.Fatalf("Watch from %d: %v", at, err)
		}
		defer w.Stop()
		if ev := nextEvent(t, w); ev.Revision != revs[4] {
			t.Errorf("event = %s, want the update at %d", fmtEvent(ev), revs[4])
		}
	})
	t.Run("compact again lower", func(t *testing.T) {
		if err := s.Compact(ctx, revs[1]); err != nil {
			t.Errorf("Compact(%d) after Compact(%d): %v, want nil", revs[1], at, err)
		}
	})
	t.Run("compact in the future", func(t *testing.T) {
		future := currentRev(t, s) + 1000
		if err := s.Compact(ctx, future); !errors.Is(err, store.ErrFutureRevision) {
			t.Errorf("Compact(%d): err = %v, want ErrFutureRevision", future, err)
		}
	})
	next := mustCreate(t, s, "/c/b", "b")
	if ev := nextEvent(t, early); ev.Revision != next {
		t.Errorf("watch started before compaction: event = %s, want the create at %d", fmtEvent(ev), next)
	}
}

func testClose(t *testing.T, s store.Store) {
	ctx := t.Context()
	w, err := s.Watch(ctx, "/close/", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	waitClosed(t, w)
	if err := w.Err(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("open watch after Close: Err = %v, want ErrClosed", err)
	}
	ops := map[string]func() error{
		"Get":    func() error { _, err := s.Get(ctx, "/close/x"); return err },
		"List":   func() error { _, err := s.List(ctx, "/close/", store.ListOptions{}); return err },
		"Create": func() error { _, err := s.Create(ctx, "/close/x", nil); return err },
		"Update": func() error { _, err := s.Update(ctx, "/close/x", nil, 0); return err },
		"Delete": func() error { _, _, err := s.Delete(ctx, "/close/x", 0); return err },
		"Watch":  func() error { _, err := s.Watch(ctx, "/close/", 0); return err },
		"Compact": func() error {
			return s.Compact(ctx, 1)
		},
		"CurrentRevision": func() error { _, err := s.CurrentRevision(ctx); return err },
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: err = %v, want ErrClosed", name, err)
		}
	}
}
