package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/kubegate/kubegate/store"
)

var (
	bucketMeta   = []byte("meta")
	bucketKV     = []byte("kv")
	bucketEvents = []byte("events")

	metaRev       = []byte("rev")
	metaCompact   = []byte("compact")
	metaHistBytes = []byte("history-bytes")
)

// meta is the bookkeeping kept in the meta bucket.
type meta struct {
	rev       int64 // revision of the latest write
	compact   int64 // events below this revision are gone
	histBytes int64 // encoded size of the kept events
}

func readMeta(tx *bolt.Tx) meta {
	b := tx.Bucket(bucketMeta)
	get := func(k []byte) int64 {
		v := b.Get(k)
		if len(v) != 8 {
			return 0
		}
		return int64(binary.BigEndian.Uint64(v))
	}
	return meta{rev: get(metaRev), compact: get(metaCompact), histBytes: get(metaHistBytes)}
}

func (m meta) write(tx *bolt.Tx) error {
	b := tx.Bucket(bucketMeta)
	for _, f := range []struct {
		k []byte
		v int64
	}{{metaRev, m.rev}, {metaCompact, m.compact}, {metaHistBytes, m.histBytes}} {
		if err := b.Put(f.k, revKey(f.v)); err != nil {
			return err
		}
	}
	return nil
}

// revKey encodes a revision as a big-endian key, so keys sort by revision.
func revKey(rev int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(rev))
}

func keyRev(k []byte) int64 { return int64(binary.BigEndian.Uint64(k)) }

// A kv record is createRev (8 bytes), modRev (8 bytes), value.
const kvHeader = 16

func encodeKV(createRev, modRev int64, value []byte) []byte {
	b := make([]byte, kvHeader, kvHeader+len(value))
	binary.BigEndian.PutUint64(b, uint64(createRev))
	binary.BigEndian.PutUint64(b[8:], uint64(modRev))
	return append(b, value...)
}

// decodeKV decodes a kv record; copyValue copies the value out of bbolt's
// memory, which is only valid during the transaction.
func decodeKV(key string, rec []byte, copyValue bool) store.KV {
	v := rec[kvHeader:]
	if copyValue {
		v = append([]byte{}, v...)
	}
	return store.KV{
		Key:            key,
		Value:          v,
		CreateRevision: int64(binary.BigEndian.Uint64(rec)),
		ModRevision:    int64(binary.BigEndian.Uint64(rec[8:])),
	}
}

// An event record is: type (1 byte), createRev (8), prevModRev (8),
// uvarint key length, key, uvarint value length, value, then for Modified
// the previous value. For Deleted the value is the deleted one, which is
// also the previous value.
func encodeEvent(ev *store.Event) []byte {
	prevMod := int64(0)
	if ev.Prev != nil {
		prevMod = ev.Prev.ModRevision
	}
	size := 17 + 2*binary.MaxVarintLen64 + len(ev.KV.Key) + len(ev.KV.Value)
	if ev.Type == store.Modified {
		size += len(ev.Prev.Value)
	}
	b := make([]byte, 0, size)
	b = append(b, byte(ev.Type))
	b = binary.BigEndian.AppendUint64(b, uint64(ev.KV.CreateRevision))
	b = binary.BigEndian.AppendUint64(b, uint64(prevMod))
	b = binary.AppendUvarint(b, uint64(len(ev.KV.Key)))
	b = append(b, ev.KV.Key...)
	b = binary.AppendUvarint(b, uint64(len(ev.KV.Value)))
	b = append(b, ev.KV.Value...)
	if ev.Type == store.Modified {
		b = append(b, ev.Prev.Value...)
	}
	return b
}

var errBadEvent = errors.New("malformed event record")

// eventFields splits an event record into its key, value and previous value,
// without copying.
func eventFields(rec []byte) (key, value, prev []byte, err error) {
	if len(rec) < 17 {
		return nil, nil, nil, errBadEvent
	}
	rest := rec[17:]
	field := func() []byte {
		n, w := binary.Uvarint(rest)
		if w <= 0 || uint64(len(rest)-w) < n {
			err = errBadEvent
			return nil
		}
		f := rest[w : w+int(n)]
		rest = rest[w+int(n):]
		return f
	}
	key = field()
	if err == nil {
		value = field()
	}
	return key, value, rest, err
}

// decodeEvent decodes the event record rec stored at rev, copying every
// byte out of bbolt's memory.
func decodeEvent(rev int64, rec []byte) (store.Event, error) {
	key, value, prevValue, err := eventFields(rec)
	if err != nil {
		return store.Event{}, fmt.Errorf("event at revision %d: %w", rev, err)
	}
	// One allocation holds the value and the previous value.
	data := make([]byte, 0, len(value)+len(prevValue))
	data = append(append(data, value...), prevValue...)
	value, prevValue = data[:len(value):len(value)], data[len(value):]
	ev := store.Event{
		Type:     store.EventType(rec[0]),
		Revision: rev,
		KV: store.KV{
			Key:            string(key),
			Value:          value,
			CreateRevision: int64(binary.BigEndian.Uint64(rec[1:])),
			ModRevision:    rev,
		},
	}
	prevMod := int64(binary.BigEndian.Uint64(rec[9:]))
	switch ev.Type {
	case store.Added:
	case store.Modified:
		ev.Prev = &store.KV{Key: ev.KV.Key, Value: prevValue, CreateRevision: ev.KV.CreateRevision, ModRevision: prevMod}
	case store.Deleted:
		ev.Prev = &store.KV{Key: ev.KV.Key, Value: value, CreateRevision: ev.KV.CreateRevision, ModRevision: prevMod}
	default:
		return store.Event{}, fmt.Errorf("event at revision %d: unknown type %d: %w", rev, rec[0], errBadEvent)
	}
	return ev, nil
}
