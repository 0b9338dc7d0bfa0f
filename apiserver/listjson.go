package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// writeJSONList answers a JSON LIST of pg without holding the page
// decoded: its objects are decoded and encoded in runs of listRun, on up
// to GOMAXPROCS goroutines, and the runs are written in order as they
// are done, so the answer goes out while it is encoded and a large list
// takes the time of its share of the cores. The bytes are those the
// streaming JSON encoder writes for the decoded list. An object that
// fails to decode is the answer's error while nothing is sent (the first
// 128 KiB are held); after that the response is aborted, so that no client
// takes a cut list for a whole one.
func (s *Server) writeJSONList(w http.ResponseWriter, out output, res *Resource, pg *listPage) error {
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(pg.rev, 10), Continue: pg.cont}
	if pg.remaining > 0 {
		lm.RemainingItemCount = &pg.remaining
	}
	meta, err := json.Marshal(lm)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", out.info.MediaType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	dw := &deferredWriter{w: w, code: http.StatusOK, gzip: out.gzip, streamed: true}
	head, tail := `{"kind":"`+res.Kind+`List","apiVersion":"`+res.GVR.GroupVersion().String()+`","metadata":`+string(meta)+`,"items":[`, "]}\n"
	if res.unstructuredKind() {
		if head, tail, err = unstructuredListEnds(res, pg); err != nil {
			return err
		}
	}
	_, _ = dw.Write([]byte(head))
	if err := s.encodeJSONRuns(res, pg, dw.Write); err != nil {
		if errors.Is(err, errClientGone) {
			return nil
		}
		if dw.discard() {
			// Nothing is sent yet: the answer is the error, as when a
			// list is decoded whole.
			return err
		}
		// The client has part of a 200: end the response as broken, so
		// that it cannot take the part for the whole.
		s.log.Error("list: encode", "kind", res.Kind+"List", "err", err)
		panic(http.ErrAbortHandler)
	}
	_, _ = dw.Write([]byte(tail))
	dw.Close()
	return nil
}

// unstructuredListEnds returns what an unstructured list of pg's objects
// encodes to before and after its items: encoding/json writes the list's
// keys sorted, items among them, as it writes the decoded list.
func unstructuredListEnds(res *Resource, pg *listPage) (head, tail string, err error) {
	obj, err := newUnstructuredList(res, nil, pg.rev, pg.cont)
	if err != nil {
		return "", "", err
	}
	list := obj.(*unstructured.UnstructuredList)
	if pg.remaining > 0 {
		list.SetRemainingItemCount(&pg.remaining)
	}
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(list); err != nil {
		return "", "", err
	}
	const items = `"items":[]`
	head, tail, ok := strings.Cut(b.String(), items)
	if !ok {
		return "", "", fmt.Errorf("list %s: no items in %s", res.Kind, b.String())
	}
	return head + items[:len(items)-1], "]" + tail, nil
}

// listRun is how many objects one goroutine decodes and encodes at a time.
const listRun = 64

// jsonRun is one run of a list's objects, encoded.
type jsonRun struct {
	done chan struct{}
	buf  *bytes.Buffer
	err  error
}

var runBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// errClientGone: writing the answer failed, the client is gone.
var errClientGone = errors.New("list: the client went away")

// encode encodes run i of pg. A panic, which on the handler's goroutine
// would be the recovery filter's 500, is the run's error: on a worker it
// would end the process.
func (r *jsonRun) encode(enc *jsonItemEncoder, pg *listPage, i int) {
	defer close(r.done)
	defer func() {
		if v := recover(); v != nil {
			r.err = fmt.Errorf("list: encode: panic: %v", v)
		}
	}()
	r.buf = runBufs.Get().(*bytes.Buffer)
	r.buf.Reset()
	r.err = enc.encode(r.buf, pg, i*listRun, min((i+1)*listRun, len(pg.kvs)))
}

// encodeJSONRuns encodes pg's objects, comma-separated, and passes them
// to write in order. At most two runs per goroutine are encoded and not
// yet written, which bounds the memory a list holds. It stops at the
// first run that fails, or when write fails (errClientGone).
func (s *Server) encodeJSONRuns(res *Resource, pg *listPage, write func([]byte) (int, error)) error {
	n := (len(pg.kvs) + listRun - 1) / listRun
	if n == 0 {
		return nil
	}
	runs := make([]jsonRun, n)
	for i := range runs {
		runs[i].done = make(chan struct{})
	}
	workers := min(runtime.GOMAXPROCS(0), n)
	window := make(chan struct{}, 2*workers)
	stop := make(chan struct{})
	defer close(stop)
	var next atomic.Int64
	for range workers {
		go func() {
			enc := jsonItemEncoder{s: s, res: res}
			for {
				// Runs are claimed in order, each holding a place in the
				// window until it is written: the run written next is
				// always claimed, and never waits for a place.
				select {
				case window <- struct{}{}:
				case <-stop:
					return
				}
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				runs[i].encode(&enc, pg, i)
			}
		}()
	}
	for i := range runs {
		r := &runs[i]
		<-r.done
		if r.err != nil {
			return r.err
		}
		_, err := write(r.buf.Bytes())
		runBufs.Put(r.buf)
		r.buf = nil
		<-window
		if err != nil {
			return errClientGone
		}
	}
	return nil
}

// jsonItemEncoder encodes a list's items as the streaming encoder does:
// each as encoding/json writes it, without apiVersion and kind, as the
// items of a typed list carry none; those of an unstructured list (custom
// resources) carry theirs, sorted among their keys.
type jsonItemEncoder struct {
	s   *Server
	res *Resource
	buf bytes.Buffer
	enc *json.Encoder
}

// encode appends the objects [from, to) of pg to out, each after a comma
// but the list's first.
func (e *jsonItemEncoder) encode(out *bytes.Buffer, pg *listPage, from, to int) error {
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.buf)
	}
	for i := from; i < to; i++ {
		if i > 0 {
			out.WriteByte(',')
		}
		kv := pg.kvs[i]
		k := itemKey{gvr: e.res.GVR, key: kv.Key, rev: kv.ModRevision}
		if e.res.unstructuredKind() {
			k.served = e.res
		}
		if b := e.s.items.get(k); b != nil {
			out.Write(b)
			pg.objs[i] = nil
			continue
		}
		obj := pg.objs[i]
		if obj == nil {
			var err error
			if obj, err = e.s.decodeKV(e.res, kv); err != nil {
				return err
			}
		}
		pg.objs[i] = nil
		if e.res.unstructuredKind() {
			// The items of an unstructured list carry their apiVersion
			// and kind.
			obj.GetObjectKind().SetGroupVersionKind(e.res.gvk())
		} else {
			obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		}
		e.buf.Reset()
		if err := e.enc.Encode(obj); err != nil {
			return err
		}
		b := bytes.Clone(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")))
		e.s.items.put(k, b)
		out.Write(b)
	}
	return nil
}
