package apiserver

import (
	"bytes"
	"io"
	"net/http"
	"reflect"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegate/kubegate/internal/protometa"
)

// A list's protobuf encoding holds its ListMeta as field 1 and each item's
// encoding as field 2, the items without apiVersion and kind: exactly the
// object encodings the store holds, each with its resourceVersion set.
const (
	listMetaField protowire.Number = 1
	listItemField protowire.Number = 2
)

// writeStoredList answers a protobuf LIST of pg from the stored encodings,
// without decoding the objects: each has its resourceVersion set in place
// (internal/protometa) and goes out as it is, one after the other, as the
// streaming encoder sends a decoded list (docs/architecture.md, "Data flow").
// The bytes are those the serializer writes for the decoded list. It
// reports false, having written nothing, when an object is not stored in
// the form this needs; the caller then decodes the page.
//
// The stored encodings are trusted as the store holds them: fields this
// version's types lack (an object written by a newer kubegate on a shared
// etcd) go out where decoding would drop them, and a value whose field
// has the wrong wire type reaches the client, whose decoding fails,
// where the decoding path answers 500.
func (s *Server) writeStoredList(w http.ResponseWriter, out output, res *Resource, pg *listPage) bool {
	if !res.storedList {
		return false
	}
	gv := res.GVR.GroupVersion().String()
	items := make([]protometa.Item, len(pg.kvs))
	size := 0
	for i, kv := range pg.kvs {
		raw, ok := storedRaw(kv.Value, gv, res.Kind)
		if !ok {
			return false
		}
		it, err := protometa.WithResourceVersion(raw, strconv.FormatInt(kv.ModRevision, 10))
		if err != nil {
			return false
		}
		items[i] = it
		size += fieldSize(listItemField, it.Size())
	}
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(pg.rev, 10), Continue: pg.cont}
	if pg.remaining > 0 {
		lm.RemainingItemCount = &pg.remaining
	}
	meta, err := lm.Marshal()
	if err != nil {
		return false
	}
	size += fieldSize(listMetaField, len(meta))

	w.Header().Set("Content-Type", out.info.MediaType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	dw := &deferredWriter{w: w, code: http.StatusOK, gzip: out.gzip, streamed: true}
	defer dw.Close()
	if _, err := dw.Write(protobufPrefix); err != nil {
		return true
	}
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: gv, Kind: res.Kind + "List"}}
	_, err = unk.MarshalToWriter(dw, size, func(w io.Writer) (int, error) {
		buf := protowire.AppendBytes(protowire.AppendTag(nil, listMetaField, protowire.BytesType), meta)
		n, err := w.Write(buf)
		for _, it := range items {
			if err != nil {
				break
			}
			buf = protowire.AppendTag(buf[:0], listItemField, protowire.BytesType)
			buf = it.Append(protowire.AppendVarint(buf, uint64(it.Size())))
			var m int
			m, err = w.Write(buf)
			n += m
		}
		return n, err
	})
	if err != nil {
		s.log.Warn("encode response", "kind", res.Kind+"List", "err", err)
	}
	return true
}

// fieldSize is the length of a length-delimited field holding n bytes.
func fieldSize(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

// storedRaw returns the object encoding inside a stored value, if the
// value is the protobuf envelope of apiVersion gv and kind.
func storedRaw(value []byte, gv, kind string) ([]byte, bool) {
	if !bytes.HasPrefix(value, protobufPrefix) {
		return nil, false
	}
	var unk runtime.Unknown
	if err := unk.Unmarshal(value[len(protobufPrefix):]); err != nil {
		return nil, false
	}
	if unk.APIVersion != gv || unk.Kind != kind || unk.ContentEncoding != "" || (unk.ContentType != "" && unk.ContentType != runtime.ContentTypeProtobuf) {
		return nil, false
	}
	return unk.Raw, true
}

// metadataFirst reports whether obj's kind encodes its ObjectMeta as
// field 1, as every Kubernetes kind does and internal/protometa needs.
func metadataFirst(obj runtime.Object) bool {
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return false
	}
	f, ok := t.Elem().FieldByName("ObjectMeta")
	return ok && f.Type == reflect.TypeFor[metav1.ObjectMeta]() && f.Tag.Get("protobuf") == "bytes,1,opt,name=metadata"
}
