package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
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

// table renders obj (one object or a list) as a Table.
func (s *Server) table(r *http.Request, res *Resource, obj runtime.Object) (*metav1.Table, error) {
	tr, err := s.tableRequest(r)
	if err != nil {
		return nil, err
	}
	return s.tableOf(tr, res, obj, true)
}

// tableOf renders obj as a Table, with the column definitions when
// headers. Each row carries what tr asks for (B.5): nothing for None; the
// object's metadata as a meta.k8s.io/v1 PartialObjectMetadata for
// Metadata; for Object the whole object in the resource's version, with
// its apiVersion and kind even where a list's items have none, which
// kubectl needs to decode it (to sort the rows by its fields).
func (s *Server) tableOf(tr *tableRequest, res *Resource, obj runtime.Object, headers bool) (*metav1.Table, error) {
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
	now := s.now()
	t.Rows = make([]metav1.TableRow, len(items))
	for i, item := range items {
		row := &t.Rows[i]
		row.Cells = def.Cells(item, now)
		if def.Conditions != nil {
			row.Conditions = def.Conditions(item)
		}
	}
	if tr.includeObject == metav1.IncludeNone {
		return t, nil
	}
	// The rows' objects are encoded one after another into one buffer,
	// which the rows then share.
	enc := rowEncoder{kind: res.gvk()}
	ends := make([]int, len(items))
	for i, item := range items {
		var err error
		switch tr.includeObject {
		case metav1.IncludeObject:
			err = enc.object(item)
		case metav1.IncludeMetadata:
			err = enc.metadata(item, def.HiddenAnnotations)
		}
		if err != nil {
			return nil, err
		}
		ends[i] = enc.buf.Len()
	}
	raw, start := enc.buf.Bytes(), 0
	for i := range t.Rows {
		t.Rows[i].Object.Raw = raw[start:ends[i]:ends[i]]
		start = ends[i]
	}
	return t, nil
}

// rowEncoder appends the JSON of Table rows' objects to buf, each as
// encoding/json writes it (kube-apiserver marshals a row's object so).
type rowEncoder struct {
	kind schema.GroupVersionKind
	buf  bytes.Buffer
	tmp  bytes.Buffer
	enc  *json.Encoder
}

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

// object appends obj in its resource's version. An object without
// apiVersion and kind (a list's item) gets those of the resource in front
// of its fields, where encoding/json writes them, rather than set on obj,
// which may be shared.
func (e *rowEncoder) object(obj runtime.Object) error {
	b, err := e.encode(obj)
	if err != nil {
		return err
	}
	if !obj.GetObjectKind().GroupVersionKind().Empty() || len(b) < 2 || b[0] != '{' {
		e.buf.Write(b)
		return nil
	}
	apiVersion, kind := e.kind.ToAPIVersionAndKind()
	e.buf.WriteString(`{"kind":`)
	e.buf.WriteString(strconv.Quote(kind))
	e.buf.WriteString(`,"apiVersion":`)
	e.buf.WriteString(strconv.Quote(apiVersion))
	if len(b) > 2 {
		e.buf.WriteByte(',')
	}
	e.buf.Write(b[1:])
	return nil
}

// metadata appends obj's metadata as a PartialObjectMetadata, without the
// hidden annotations.
func (e *rowEncoder) metadata(obj runtime.Object, hidden []string) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
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
		return err
	}
	e.buf.Write(b)
	return nil
}
