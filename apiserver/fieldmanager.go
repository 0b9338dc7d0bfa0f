package apiserver

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// fieldManager returns the managed-fields tracker of res (and subresource),
// built once. The fields the subresource resets (Resource.Untracked) are
// left out of every writer's set and out of an apply's conflicts, so that
// an apply of a manifest that carries them neither owns them nor
// conflicts with their writer (B.8), and an object whose writers set only
// those has no managedFields at all, and, as kube-apiserver does for an
// object without them, its later updates start none (H.1).
func (s *Server) fieldManager(res *Resource, sub string) (*managedfields.FieldManager, error) {
	key := fieldManagerKey{res: res, sub: sub}
	if fm, ok := s.fieldManagers.Load(key); ok {
		return fm.(*managedfields.FieldManager), nil
	}
	gvk := res.gvk()
	var untracked map[fieldpath.APIVersion]fieldpath.Filter
	if set := res.resetFields(sub); set != nil {
		untracked = fieldpath.NewExcludeFilterSetMap(map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(gvk.GroupVersion().String()): set})
	}
	var fm *managedfields.FieldManager
	var err error
	if res.New != nil {
		var conv runtime.ObjectConvertor = unstructuredConvertor{}
		if res.Convertor != nil {
			conv = res.Convertor
		}
		fm, err = managedfields.NewDefaultCRDFieldManager(res.typeConverter(), conv, unstructuredDefaulter{}, unstructuredCreater{res}, gvk, gvk.GroupVersion(), sub, untracked)
	} else {
		tc := s.typeConverter
		if res.TypeConverter != nil {
			tc = res.TypeConverter
		}
		var conv runtime.ObjectConvertor = s.scheme
		if res.Convertor != nil {
			conv = res.Convertor
		}
		fm, err = managedfields.NewDefaultFieldManager(tc, conv, s.scheme, s.scheme, gvk, gvk.GroupVersion(), sub, untracked)
	}
	if err != nil {
		return nil, err
	}
	got, _ := s.fieldManagers.LoadOrStore(key, fm)
	return got.(*managedfields.FieldManager), nil
}

// fieldManagerKey is what fieldManager keeps a tracker under: the
// resource itself, as one installed again after its removal may not
// have the same fields.
type fieldManagerKey struct {
	res *Resource
	sub string
}

// trackFields records in obj's managedFields what manager set, relative to
// live (an empty object on create). Tracking never fails a write: on error
// obj is returned unchanged.
func (s *Server) trackFields(res *Resource, sub string, live, obj runtime.Object, manager string) runtime.Object {
	fm, err := s.fieldManager(res, sub)
	if err != nil {
		s.log.Warn("field manager", "kind", res.Kind, "err", err)
		return obj
	}
	out := fm.UpdateNoErrors(live, obj, manager)
	out.GetObjectKind().SetGroupVersionKind(res.gvk())
	return out
}

// creatorFieldManager returns the managed-fields tracker of a Creator's
// kind, built once. kube-apiserver's create handler tracks the fields of
// every create, reviews and token requests included, and their answers,
// the request with its status filled, carry them (D.7). The type
// converter knows only the kinds that can be applied; the others are
// tracked with a converter deduced from the Go type, in which every list
// is atomic, as the lists of these kinds are.
func (s *Server) creatorFieldManager(c *creatorEntry) (*managedfields.FieldManager, error) {
	key := "creator:" + c.gvr.String() + "/" + c.subresource
	if fm, ok := s.fieldManagers.Load(key); ok {
		return fm.(*managedfields.FieldManager), nil
	}
	tc := s.typeConverter
	if _, err := tc.ObjectToTyped(c.c.New()); err != nil {
		tc = managedfields.NewDeducedTypeConverter()
	}
	fm, err := managedfields.NewDefaultFieldManager(tc, s.scheme, s.scheme, s.scheme, c.gvk, c.gvk.GroupVersion(), c.subresource, nil)
	if err != nil {
		return nil, err
	}
	got, _ := s.fieldManagers.LoadOrStore(key, fm)
	return got.(*managedfields.FieldManager), nil
}
