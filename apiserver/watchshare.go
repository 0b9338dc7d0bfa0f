package apiserver

import (
	"bytes"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// sharedEventsSize bounds how many decoded events are kept for the watchers
// that have not reached them yet. A watcher further behind decodes for
// itself.
const sharedEventsSize = 4096

// sharedEvents lets every watcher of a resource use one decoding of each
// stored value and one encoding of each watch event: with a thousand
// watchers on pods, an update is decoded once and encoded once per media
// type instead of a thousand times. Objects handed out are shared and must
// not be modified.
type sharedEvents struct {
	mu      sync.Mutex
	objects map[sharedKey]*sharedObject
	ring    [sharedEventsSize]sharedKey // insertion order, for eviction
	next    int
}

// sharedKey names a value: the key's value at a revision (the value after
// the change, or with prev the one before it), decoded as resource res.
type sharedKey struct {
	res  *Resource
	key  string
	rev  int64
	prev bool
}

// sharedObject is one decoded stored value and its encoded watch events.
type sharedObject struct {
	once sync.Once
	obj  runtime.Object
	err  error

	mu     sync.Mutex // guards frames and serializes encoding
	frames []sharedFrame
}

// sharedFrame is the encoding of one watch event carrying the object.
type sharedFrame struct {
	typ       watch.EventType
	mediaType string
	data      []byte
}

// object returns the shared decoding of the value data of res at key and
// revision rev, whose resourceVersion is rev.
func (s *Server) sharedObject(res *Resource, key string, rev int64, prev bool, data []byte) (*sharedObject, error) {
	k := sharedKey{res: res, key: key, rev: rev, prev: prev}
	e := &s.watchEvents
	e.mu.Lock()
	so := e.objects[k]
	if so == nil {
		so = &sharedObject{}
		if e.objects == nil {
			e.objects = make(map[sharedKey]*sharedObject, sharedEventsSize)
		}
		if old := e.ring[e.next]; old.res != nil {
			delete(e.objects, old)
		}
		e.ring[e.next] = k
		e.next = (e.next + 1) % sharedEventsSize
		e.objects[k] = so
	}
	e.mu.Unlock()
	so.once.Do(func() { so.obj, so.err = s.decodeValue(res, data, rev) })
	return so, so.err
}

// frame returns the watch event of type typ carrying the object, encoded
// with info, as the stream serializer writes it: one frame's bytes.
func (so *sharedObject) frame(typ watch.EventType, info runtime.SerializerInfo) ([]byte, error) {
	so.mu.Lock()
	defer so.mu.Unlock()
	for _, f := range so.frames {
		if f.typ == typ && f.mediaType == info.MediaType {
			return f.data, nil
		}
	}
	raw := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(raw)
	raw.Reset()
	if err := info.Serializer.Encode(so.obj, raw); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	ev := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw.Bytes()}}
	if err := info.StreamSerializer.Serializer.Encode(ev, &out); err != nil {
		return nil, err
	}
	so.frames = append(so.frames, sharedFrame{typ: typ, mediaType: info.MediaType, data: out.Bytes()})
	return out.Bytes(), nil
}
