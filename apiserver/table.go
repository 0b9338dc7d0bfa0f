package apiserver

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

func (s *Server) tableRequest(r *http.Request) (*tableRequest, error) {
	p := metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))
	switch p {
	case "":
		p = metav1.IncludeMetadata
	case metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject:
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("includeObject: unsupported value %q", p))
	}
	return &tableRequest{includeObject: p}, nil
}

// table renders obj (one object or a list) as a Table.
func (s *Server) table(r *http.Request, res *Resource, obj runtime.Object) (*metav1.Table, error) {
	tr, err := s.tableRequest(r)
	if err != nil {
		return nil, err
	}
	return s.tableOf(tr, res, obj, true)
}

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
	t.Rows = make([]metav1.TableRow, 0, len(items))
	for _, item := range items {
		row := metav1.TableRow{Cells: def.Cells(item, now)}
		if def.Conditions != nil {
			row.Conditions = def.Conditions(item)
		}
		var embedded runtime.Object
		switch tr.includeObject {
		case metav1.IncludeObject:
			embedded = item
		case metav1.IncludeMetadata:
			acc, _ := meta.Accessor(item)
			pm := meta.AsPartialObjectMetadata(acc)
			pm.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
			if len(def.HiddenAnnotations) > 0 && pm.Annotations != nil {
				pm.Annotations = maps.Clone(pm.Annotations)
				for _, k := range def.HiddenAnnotations {
					delete(pm.Annotations, k)
				}
				if len(pm.Annotations) == 0 {
					pm.Annotations = nil
				}
			}
			embedded = pm
		}
		if embedded != nil {
			var buf bytes.Buffer
			if err := s.json.Serializer.Encode(embedded, &buf); err != nil {
				return nil, err
			}
			row.Object.Raw = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}
