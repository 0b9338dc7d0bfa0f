package apiserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubegate/kubegate/store"
)

// bookmarkInterval is how often a watch that allows bookmarks asks the store
// for progress, as kube-apiserver sends bookmarks about once a minute.
const bookmarkInterval = time.Minute

// defaultWatchTimeout bounds a watch without timeoutSeconds.
const defaultWatchTimeout = 30 * time.Minute

// watchStream writes watch events in the negotiated framing. The caller
// flushes: the watch loop does so whenever no further event is waiting, as
// kube-apiserver does, so a burst of events goes out in a few writes.
type watchStream struct {
	s        *Server
	res      *Resource
	w        http.ResponseWriter
	rc       *http.ResponseController
	out      output
	frame    io.Writer
	buf      bytes.Buffer
	table    *tableRequest
	tableHdr bool
}

func (ws *watchStream) send(typ watch.EventType, obj runtime.Object) error {
	switch {
	case ws.table != nil && typ != watch.Error && typ != watch.Bookmark:
		t, err := ws.s.tableOf(ws.table, ws.res, obj, nil, !ws.tableHdr)
		if err != nil {
			return err
		}
		ws.tableHdr = true
		obj = t
	case ws.out.convert != nil && ws.table == nil:
		// Bookmarks too carry PartialObjectMetadata. An object that cannot
		// be converted (a PartialObjectMetadataList was asked for) ends the
		// watch, as in kube-apiserver, which fails to encode it (D.7).
		m, err := ws.s.convert(nil, ws.res, ws.out, obj)
		if err != nil {
			return err
		}
		obj = m
	}
	ws.buf.Reset()
	if err := ws.out.info.Serializer.Encode(obj, &ws.buf); err != nil {
		return err
	}
	ev := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: ws.buf.Bytes()}}
	return ws.out.info.StreamSerializer.Serializer.Encode(ev, ws.frame)
}

func (ws *watchStream) flush() error { return ws.rc.Flush() }

// sendErr sends err as an ERROR event and flushes.
func (ws *watchStream) sendErr(err error) error {
	if err := ws.send(watch.Error, toStatus(err)); err != nil {
		return err
	}
	return ws.flush()
}

// bookmark sends a BOOKMARK at rev, marking the end of the initial events
// when initialEnd.
func (ws *watchStream) bookmark(rev int64, initialEnd bool) error {
	obj := ws.s.newObject(ws.res)
	obj.GetObjectKind().SetGroupVersionKind(ws.res.gvk())
	acc, _ := meta.Accessor(obj)
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	if initialEnd {
		acc.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return ws.send(watch.Bookmark, obj)
}

func (q *request) watch() error {
	out, err := q.negotiate(acceptOptions{convert: true})
	if err != nil {
		return err
	}
	if out.info.StreamSerializer == nil {
		return notAcceptable("only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch")
	}
	o, err := q.watchOptions()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(q.ctx(), o.timeout)
	defer cancel()

	var items []runtime.Object
	from := o.rv
	if o.initial {
		pg, err := q.collect(o.sel, listOptions{minRev: o.rv})
		if err != nil {
			return err
		}
		if items, err = pg.objects(q.s, q.res); err != nil {
			return err
		}
		from = pg.rev
	}
	ws := &watchStream{s: q.s, res: q.res, w: q.w, rc: http.NewResponseController(q.w), out: out,
		frame: out.info.StreamSerializer.Framer.NewFrameWriter(q.w)}
	if out.table() {
		if ws.table, err = q.s.tableRequest(q.r); err != nil {
			return err
		}
	}
	w, werr := q.s.cfg.Store.Watch(ctx, q.listPrefix(), from)
	ws.writeHeader()
	if werr != nil {
		if errors.Is(werr, store.ErrCompacted) || errors.Is(werr, store.ErrFutureRevision) {
			werr = storeErr(werr, q.gr(), "")
		}
		_ = ws.sendErr(werr)
		return nil
	}
	defer w.Stop()
	if err := ws.sendInitial(items, from, o.initial && o.bookmarks && o.sendInitialEvents); err != nil {
		return nil
	}
	q.follow(ctx, ws, w, o)
	return nil
}

// watchOptions are a watch's query parameters.
type watchOptions struct {
	sel       selector
	rv        int64
	bookmarks bool
	// initial: the current state goes first, as ADDED events; with
	// sendInitialEvents=true and bookmarks, a bookmark marks its end.
	initial, sendInitialEvents bool
	timeout                    time.Duration
}

// watchOptions reads and checks a watch's query, in kube's order.
func (q *request) watchOptions() (watchOptions, error) {
	var o watchOptions
	var err error
	if o.sel, err = q.selectors(); err != nil {
		return o, err
	}
	if q.name != "" {
		if o.sel, err = q.withName(o.sel); err != nil {
			return o, err
		}
	}
	query := q.r.URL.Query()
	if o.rv, err = parseRV(query.Get("resourceVersion")); err != nil {
		return o, err
	}
	o.bookmarks = query.Get("allowWatchBookmarks") == "true"
	o.initial = o.rv == 0 // "" and "0" start with the current state
	if _, err := q.validateListOptions(); err != nil {
		return o, err
	}
	if v := query.Get("sendInitialEvents"); v != "" {
		o.initial = v == "true"
	}
	o.sendInitialEvents = query.Get("sendInitialEvents") == "true"
	o.timeout = defaultWatchTimeout
	if v := query.Get("timeoutSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return o, apierrors.NewBadRequest("timeoutSeconds: invalid value " + strconv.Quote(v))
		}
		if n > 0 {
			o.timeout = time.Duration(n) * time.Second
		}
	}
	return o, nil
}

// writeHeader starts the answer: 200, chunked, in the stream's media type.
func (ws *watchStream) writeHeader() {
	ct := ws.out.info.MediaType
	if ct == mediaProtobuf {
		ct += ";stream=watch"
	}
	ws.w.Header().Set("Content-Type", ct)
	ws.w.Header().Set("Transfer-Encoding", "chunked")
	ws.w.WriteHeader(http.StatusOK)
	_ = ws.rc.Flush()
}

// sendInitial sends the current state as ADDED events, then, when asked,
// the bookmark that marks its end at revision from.
func (ws *watchStream) sendInitial(items []runtime.Object, from int64, endBookmark bool) error {
	for _, obj := range items {
		if err := ws.send(watch.Added, obj); err != nil {
			return err
		}
	}
	if endBookmark {
		if err := ws.bookmark(from, true); err != nil {
			return err
		}
	}
	return ws.flush()
}

// follow sends the store's events until the watch times out, the client
// goes, the store's watch ends or the resource is torn down (endWatches), asking the store for progress (which
// becomes bookmarks) when the client allows them.
func (q *request) follow(ctx context.Context, ws *watchStream, w store.Watcher, o watchOptions) {
	tick := time.NewTicker(bookmarkInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.res.ended:
			// Its definition changed or went: kube-apiserver tears the
			// storage down, which ends the watch without an event.
			return
		case <-tick.C:
			if o.bookmarks {
				w.RequestProgress()
			}
		case ev, ok := <-w.ResultChan():
			if !ok {
				if err := w.Err(); err != nil && ctx.Err() == nil {
					_ = ws.sendErr(storeErr(err, q.gr(), ""))
				}
				return
			}
			err := q.sendEvent(ws, o.sel, ev, o.bookmarks)
			if err == nil && len(w.ResultChan()) == 0 {
				err = ws.flush()
			}
			if err != nil {
				q.s.log.Debug("watch ended", logPath, q.r.URL.Path, "err", err)
				return
			}
		}
	}
}

// withName narrows sel to one object, for the old /watch/.../NAME form.
func (q *request) withName(sel selector) (selector, error) {
	sel.field = fields.AndSelectors(sel.field, fields.OneTermEqualSelector("metadata.name", q.name))
	return sel, nil
}

// sendShared sends an event carrying a shared object, using the event's
// shared encoding unless the stream is a Table, which is per watcher.
func (ws *watchStream) sendShared(typ watch.EventType, so *sharedObject) error {
	if ws.out.convert != nil {
		return ws.send(typ, so.obj)
	}
	data, err := so.frame(typ, ws.out.info)
	if err != nil {
		return err
	}
	_, err = ws.frame.Write(data)
	return err
}

// sendEvent translates a store event to the watch events of the objects the
// selector matches: an object that stops matching is DELETED, one that
// starts matching is ADDED. Decoded objects and encoded events are shared
// with the other watchers of the resource (see sharedEvents).
func (q *request) sendEvent(ws *watchStream, sel selector, ev store.Event, bookmarks bool) error {
	switch ev.Type {
	case store.Progress:
		if bookmarks {
			return ws.bookmark(ev.Revision, false)
		}
		return nil
	case store.Added, store.Deleted:
		so, err := q.s.sharedObject(q.res, ev.KV.Key, ev.KV.ModRevision, false, ev.KV.Value)
		if err != nil || !sel.matches(q.res, so.obj) {
			return err
		}
		typ := watch.Added
		if ev.Type == store.Deleted {
			typ = watch.Deleted
		}
		return ws.sendShared(typ, so)
	case store.Modified:
		so, err := q.s.sharedObject(q.res, ev.KV.Key, ev.KV.ModRevision, false, ev.KV.Value)
		if err != nil {
			return err
		}
		now := sel.matches(q.res, so.obj)
		before := now
		if !sel.empty() && ev.Prev != nil {
			prev, err := q.s.sharedObject(q.res, ev.KV.Key, ev.KV.ModRevision, true, ev.Prev.Value)
			if err != nil {
				return err
			}
			before = sel.matches(q.res, prev.obj)
			if before && !now {
				return ws.sendShared(watch.Deleted, prev)
			}
		}
		switch {
		case now && before:
			return ws.sendShared(watch.Modified, so)
		case now:
			return ws.sendShared(watch.Added, so)
		}
	}
	return nil
}

// endWatches gives each of the resources rs that SetResources installs in
// place of old the channel that ends its watches: that of the resource
// of old with its GVR and Storage, whose watches stay open, or a new
// one. The channels of old that none of rs keeps are closed, which ends
// the watches on them.
func endWatches(old, rs []*Resource) {
	kept := map[chan struct{}]bool{}
	for _, r := range rs {
		if r == nil || r.ended != nil {
			if r != nil {
				kept[r.ended] = true
			}
			continue
		}
		i := slices.IndexFunc(old, func(o *Resource) bool {
			return o.GVR == r.GVR && o.Storage != "" && o.Storage == r.Storage && o.ended != nil
		})
		if i < 0 {
			r.ended = make(chan struct{})
			continue
		}
		r.ended = old[i].ended
		kept[r.ended] = true
	}
	for _, o := range old {
		if o.ended != nil && !kept[o.ended] {
			kept[o.ended] = true // closed once
			close(o.ended)
		}
	}
}
