package bolt

import (
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/kubegate/kubegate/store"
)

func TestEventRoundTrip(t *testing.T) {
	prev := &store.KV{Key: "/k", Value: []byte("old"), CreateRevision: 3, ModRevision: 5}
	tests := []store.Event{
		{Type: store.Added, Revision: 7, KV: store.KV{Key: "/k", Value: []byte("new"), CreateRevision: 7, ModRevision: 7}},
		{Type: store.Modified, Revision: 7, KV: store.KV{Key: "/k", Value: []byte("new"), CreateRevision: 3, ModRevision: 7}, Prev: prev},
		{Type: store.Deleted, Revision: 7, KV: store.KV{Key: "/k", Value: []byte("old"), CreateRevision: 3, ModRevision: 7}, Prev: prev},
		{Type: store.Added, Revision: 7, KV: store.KV{Key: "/empty", Value: []byte{}, CreateRevision: 7, ModRevision: 7}},
	}
	for _, want := range tests {
		t.Run(want.Type.String()+want.KV.Key, func(t *testing.T) {
			got, err := decodeEvent(want.Revision, encodeEvent(&want))
			if err != nil {
				t.Fatal(err)
			}
			if got.Type != want.Type || got.Revision != want.Revision || got.KV.Key != want.KV.Key ||
				string(got.KV.Value) != string(want.KV.Value) || got.KV.CreateRevision != want.KV.CreateRevision ||
				got.KV.ModRevision != want.KV.ModRevision || (got.Prev == nil) != (want.Prev == nil) ||
				(got.Prev != nil && (string(got.Prev.Value) != string(want.Prev.Value) || got.Prev.ModRevision != want.Prev.ModRevision)) {
				t.Errorf("decodeEvent(encodeEvent(%+v)) = %+v", want, got)
			}
		})
	}
}

// FuzzDecodeEvent: a damaged record gives an error, never a panic.
func FuzzDecodeEvent(f *testing.F) {
	ev := store.Event{Type: store.Modified, Revision: 9, KV: store.KV{Key: "/pods/a", Value: []byte("v2"), CreateRevision: 2},
		Prev: &store.KV{Value: []byte("v1"), ModRevision: 4}}
	rec := encodeEvent(&ev)
	f.Add(rec)
	f.Add(rec[:17])
	f.Add(rec[:20])
	f.Add([]byte{})
	f.Add([]byte{9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, rec []byte) {
		ev, err := decodeEvent(1, rec)
		if err == nil && (ev.Type < store.Added || ev.Type > store.Deleted) {
			t.Errorf("decoded an event of type %v", ev.Type)
		}
	})
}

// TestCheckFindsDamage: Check reports a file whose history or bookkeeping
// is damaged.
func TestCheckFindsDamage(t *testing.T) {
	tests := []struct {
		name   string
		damage func(tx *bolt.Tx) error
		want   string
	}{
		{"missing event", func(tx *bolt.Tx) error { return tx.Bucket(bucketEvents).Delete(revKey(3)) }, "history"},
		{"wrong size", func(tx *bolt.Tx) error {
			m := readMeta(tx)
			m.histBytes++
			return m.write(tx)
		}, "history"},
		{"revision behind", func(tx *bolt.Tx) error {
			m := readMeta(tx)
			m.rev--
			return m.write(tx)
		}, "history"},
		{"bad record", func(tx *bolt.Tx) error { return tx.Bucket(bucketEvents).Put(revKey(2), []byte{1, 2}) }, "malformed"},
		{"value differs from its event", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketKV).Put([]byte("/a"), encodeKV(2, 2, []byte("changed")))
		}, "event at revision 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, Options{})
			ctx := t.Context()
			for _, k := range []string{"/a", "/b", "/c"} {
				if _, err := s.Create(ctx, k, []byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Check(ctx); err != nil {
				t.Fatalf("Check before damage: %v", err)
			}
			if err := s.db.Update(tc.damage); err != nil {
				t.Fatal(err)
			}
			err := s.Check(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want an error about %q", err, tc.want)
			}
		})
	}
}
