package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubegate/kubegate/store"
)

// TableDef is how a resource is shown by kubectl get: its columns and a
// function giving the cells of one object, one per column. kube-apiserver
// always renders the wide columns (priority 1) too; kubectl hides them
// unless asked for -o wide (B.5).
type TableDef struct {
	Columns []metav1.TableColumnDefinition
	Cells   func(obj runtime.Object, now time.Time) []any
	// Conditions marks a row, as kube marks a finished pod's; nil for none.
	Conditions func(obj runtime.Object) []metav1.TableRowCondition
	// HiddenAnnotations are left out of a row's metadata: kube prints its
	// internal object, which holds them as fields (a DaemonSet's template
	// generation).
	HiddenAnnotations []string
	// MarkList changes the cells of a list's rows by what the list holds
	// as a whole (the default StorageClass's name); nil for nothing.
	MarkList func(items []runtime.Object, rows []metav1.TableRow)
	// Less orders a list's rows, as kube's printer of the kind sorts them
	// (FlowSchemas by matching precedence); nil: in the list's order.
	Less func(a, b runtime.Object) bool
}

// objectMetaDoc holds the API documentation of metadata fields, which kube
// uses as the descriptions of the Name and Age columns.
var objectMetaDoc = metav1.ObjectMeta{}.SwaggerDoc()

// NameColumn and AgeColumn are the first and the usual last column of
// kube's tables, described as kube describes them; a Table's Columns
// copy them and must not change them.
var (
	NameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: objectMetaDoc["name"]}
	AgeColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: objectMetaDoc["creationTimestamp"]}
)

// defaultTable is kube's table for resources without a printer of their
// own (roles and cluster roles): the name and the creation time as an
// RFC 3339 date, not an age (B.5).
var defaultTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{NameColumn,
		{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]}},
	Cells: func(obj runtime.Object, now time.Time) []any {
		acc, _ := meta.Accessor(obj)
		return []any{acc.GetName(), acc.GetCreationTimestamp().UTC().Format(time.RFC3339)}
	},
}

// Age is how long ago ts was, as kubectl shows it: "<unknown>" for a
// zero time.
func Age(ts metav1.Time, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}

// OrNone is a table cell's "<none>" for an empty value, as kube's
// printers show it.
func OrNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// tableRequest is the TableOptions of a request.
type tableRequest struct {
	includeObject metav1.IncludeObjectPolicy
}

// tableRequest reads the request's TableOptions as kube-apiserver does: an
// includeObject other than None, Metadata, Object or empty is 400, and
// empty means Metadata (B.5).
func (s *Server) tableRequest(r *http.Request) (*tableRequest, error) {
	var opts metav1.TableOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	switch errs := metav1validation.ValidateTableOptions(&opts); len(errs) {
	case 0:
	case 1:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: %v", errs[0].Error()))
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: %v", errs))
	}
	if opts.IncludeObject == "" {
		opts.IncludeObject = metav1.IncludeMetadata
	}
	return &tableRequest{includeObject: opts.IncludeObject}, nil
}

// table renders obj (one object or a list) as a Table. kvs, when obj is a
// list page, are its items as stored, whose JSON encodings the item cache
// may hold.
func (s *Server) table(r *http.Request, res *Resource, obj runtime.Object, kvs []store.KV) (*metav1.Table, error) {
	tr, err := s.tableRequest(r)
	if err != nil {
		return nil, err
	}
	return s.tableOf(tr, res, obj, kvs, true)
}

// tableOf renders obj as a Table, with the column definitions when
// headers. Each row carries what tr asks for (B.5): nothing for None; the
// object's metadata as a meta.k8s.io/v1 PartialObjectMetadata for
// Metadata; for Object the whole object in the resource's version, with
// its apiVersion and kind even where a list's items have none, which
// kubectl needs to decode it (to sort the rows by its fields). kvs are
// obj's items as stored, or nil.
func (s *Server) tableOf(tr *tableRequest, res *Resource, obj runtime.Object, kvs []store.KV, headers bool) (*metav1.Table, error) {
	def := res.Table
	if def == nil {
		def = defaultTable
	}
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}}
	if headers {
		t.ColumnDefinitions = def.Columns
	}
	items := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, err
		}
		la, _ := meta.ListAccessor(obj)
		t.ResourceVersion, t.Continue, t.RemainingItemCount = la.GetResourceVersion(), la.GetContinue(), la.GetRemainingItemCount()
	} else {
		acc, _ := meta.Accessor(obj)
		t.ResourceVersion = acc.GetResourceVersion()
	}
	if len(kvs) != len(items) {
		kvs = nil
	}
	if def.Less != nil {
		items, kvs = sortedRows(def.Less, items, kvs)
	}
	now := s.now()
	t.Rows = make([]metav1.TableRow, len(items))
	enc := rowEncoder{s: s, res: res}
	for i, item := range items {
		row := &t.Rows[i]
		row.Cells = def.Cells(item, now)
		if def.Conditions != nil {
			row.Conditions = def.Conditions(item)
		}
		var err error
		switch tr.includeObject {
		case metav1.IncludeObject:
			var kv *store.KV
			if kvs != nil {
				kv = &kvs[i]
			}
			row.Object.Raw, err = enc.object(item, kv)
		case metav1.IncludeMetadata:
			row.Object.Raw, err = enc.metadata(item, def.HiddenAnnotations)
		}
		if err != nil {
			return nil, err
		}
	}
	if def.MarkList != nil && meta.IsListType(obj) {
		def.MarkList(items, t.Rows)
	}
	return t, nil
}

// rowEncoder gives Table rows their objects' JSON, each as encoding/json
// writes it (kube-apiserver marshals a row's object so). The rows' bytes
// are cut from shared slabs, so that a Table of many rows makes few
// allocations.
type rowEncoder struct {
	s    *Server
	res  *Resource
	tmp  bytes.Buffer
	enc  *json.Encoder
	slab []byte
}

// rowSlab is the size of the slabs rows are cut from.
const rowSlab = 64 << 10

// alloc returns n bytes of the current slab, or of a new one.
func (e *rowEncoder) alloc(n int) []byte {
	if cap(e.slab)-len(e.slab) < n {
		e.slab = make([]byte, 0, max(rowSlab, n))
	}
	b := e.slab[len(e.slab) : len(e.slab)+n : len(e.slab)+n]
	e.slab = e.slab[:len(e.slab)+n]
	return b
}

// encode returns obj's JSON, valid until the next call.
func (e *rowEncoder) encode(obj any) ([]byte, error) {
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.tmp)
	}
	e.tmp.Reset()
	if err := e.enc.Encode(obj); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(e.tmp.Bytes(), []byte("\n")), nil
}

// object returns obj in its resource's version. An object without
// apiVersion and kind (a list's item) gets those of the resource in front
// of its fields, where encoding/json writes them, rather than set on obj,
// which may be shared; its encoding without them is that of a JSON list's
// item, which the item cache holds by kv.
func (e *rowEncoder) object(obj runtime.Object, kv *store.KV) ([]byte, error) {
	typed := !obj.GetObjectKind().GroupVersionKind().Empty()
	var b []byte
	var k itemKey
	if kv != nil && !typed {
		k = itemKey{gvr: e.res.GVR, key: kv.Key, rev: kv.ModRevision}
		b = e.s.items.get(k)
	}
	if b == nil {
		var err error
		if b, err = e.encode(obj); err != nil {
			return nil, err
		}
		if kv != nil && !typed {
			e.s.items.put(k, bytes.Clone(b))
		}
	}
	if typed || len(b) < 2 || b[0] != '{' {
		return append(e.alloc(len(b))[:0], b...), nil
	}
	apiVersion, kind := e.res.gvk().ToAPIVersionAndKind()
	head := `{"kind":` + strconv.Quote(kind) + `,"apiVersion":` + strconv.Quote(apiVersion)
	if len(b) > 2 {
		head += ","
	}
	out := append(e.alloc(len(head) + len(b) - 1)[:0], head...)
	return append(out, b[1:]...), nil
}

// metadata returns obj's metadata as a PartialObjectMetadata, without the
// hidden annotations.
func (e *rowEncoder) metadata(obj runtime.Object, hidden []string) ([]byte, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	pm := meta.AsPartialObjectMetadata(acc)
	pm.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
	if len(hidden) > 0 && pm.Annotations != nil {
		pm.Annotations = maps.Clone(pm.Annotations)
		for _, k := range hidden {
			delete(pm.Annotations, k)
		}
		if len(pm.Annotations) == 0 {
			pm.Annotations = nil
		}
	}
	b, err := e.encode(pm)
	if err != nil {
		return nil, err
	}
	return append(e.alloc(len(b))[:0], b...), nil
}

// sortedRows returns items, and kvs with them when not nil, ordered by
// less, leaving the list as it was.
func sortedRows(less func(a, b runtime.Object) bool, items []runtime.Object, kvs []store.KV) ([]runtime.Object, []store.KV) {
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return less(items[idx[a]], items[idx[b]]) })
	sorted := make([]runtime.Object, len(items))
	var sortedKVs []store.KV
	if kvs != nil {
		sortedKVs = make([]store.KV, len(kvs))
	}
	for i, j := range idx {
		sorted[i] = items[j]
		if kvs != nil {
			sortedKVs[i] = kvs[j]
		}
	}
	return sorted, sortedKVs
}
