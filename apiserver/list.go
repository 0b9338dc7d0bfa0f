package apiserver

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegate/kubegate/store"
)

// selector is a request's label and field selectors.
type selector struct {
	label labels.Selector
	field fields.Selector
}

func (sel selector) empty() bool { return sel.label.Empty() && sel.field.Empty() }

// selectors parses labelSelector and fieldSelector, refusing fields the
// resource cannot be selected by.
func (q *request) selectors() (selector, error) {
	query := q.r.URL.Query()
	ls, err := labels.Parse(query.Get("labelSelector"))
	if err != nil {
		return selector{}, apierrors.NewBadRequest(err.Error())
	}
	fs, err := fields.ParseSelector(query.Get("fieldSelector"))
	if err != nil {
		return selector{}, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	known := fieldSet(q.res, q.s.newObject(q.res))
	for _, req := range fs.Requirements() {
		if _, ok := known[req.Field]; !ok {
			return selector{}, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
	}
	return selector{label: ls, field: fs}, nil
}

// fieldSet returns the selectable fields of obj.
func fieldSet(res *Resource, obj runtime.Object) fields.Set {
	acc, _ := meta.Accessor(obj)
	set := fields.Set{"metadata.name": acc.GetName()}
	if res.Namespaced {
		set["metadata.namespace"] = acc.GetNamespace()
	}
	if res.Fields != nil {
		res.Fields(obj, set)
	}
	return set
}

func (sel selector) matches(res *Resource, obj runtime.Object) bool {
	if !sel.label.Empty() {
		acc, _ := meta.Accessor(obj)
		if !sel.label.Matches(labels.Set(acc.GetLabels())) {
			return false
		}
	}
	return sel.field.Empty() || sel.field.Matches(fieldSet(res, obj))
}

// listPrefix is the store prefix of the request's collection.
func (q *request) listPrefix() string {
	if q.res.Namespaced && q.ns != "" {
		return Key(q.res.GVR, q.ns, "")
	}
	return q.res.prefix
}

// continueToken is the opaque metadata.continue of a paged list: the
// revision of the first page and the last key returned. Revision -1 means
// the current revision: kube-apiserver hands out such a token when the
// first page's revision has been compacted (D.7).
type continueToken struct {
	APIVersion string `json:"v"`
	Revision   int64  `json:"rv"`
	Start      string `json:"start"`
}

// continueTooOld is kube-apiserver's message for a continue token whose
// revision has been compacted.
const continueTooOld = "The provided continue parameter is too old to display a consistent list result. " +
	"You can start a new list without the continue parameter, or use the continue token in this response to " +
	"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
	"objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."

func encodeContinue(rev int64, lastKey string) string {
	data, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", Revision: rev, Start: lastKey})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(s, prefix string) (continueToken, error) {
	var t continueToken
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(data, &t)
	}
	if err != nil || t.APIVersion != "meta.k8s.io/v1" || t.Revision == 0 || t.Revision < -1 || !strings.HasPrefix(t.Start, prefix) {
		return t, apierrors.NewBadRequest("continue key is not valid: the continue token could not be decoded")
	}
	return t, nil
}

// listOptions are the paging and revision parameters of a list.
type listOptions struct {
	limit    int64
	cont     *continueToken
	revision int64 // store revision to read at; 0: current
	minRev   int64 // NotOlderThan: the current revision must be at least this
}

func (q *request) listOptions() (listOptions, error) {
	var o listOptions
	opts, err := q.validateListOptions()
	if err != nil {
		return o, err
	}
	o.limit = max(opts.Limit, 0) // a negative limit is none
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return o, err
	}
	if c := opts.Continue; c != "" {
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return o, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		t, err := decodeContinue(c, q.listPrefix())
		if err != nil {
			return o, err
		}
		o.cont, o.revision = &t, max(t.Revision, 0)
		return o, nil
	}
	switch opts.ResourceVersionMatch {
	case "":
		// "" and "0": the current state; N: not older than N, but with a
		// limit exactly N, as kube-apiserver has always served it (D.7).
		o.minRev = rv
		if o.limit > 0 && rv > 0 {
			o.revision, o.minRev = rv, 0
		}
	case metav1.ResourceVersionMatchNotOlderThan:
		o.minRev = rv
	case metav1.ResourceVersionMatchExact:
		o.revision = rv
	}
	return o, nil
}

// validateListOptions reads the list or watch options of the query once and
// checks them with apimachinery's ListOptions validation, which is
// kube-apiserver's: a value that does not parse is 400 with the parser's
// message, options that do not go together are 422 (D.7).
func (q *request) validateListOptions() (*metainternalversion.ListOptions, error) {
	var opts metainternalversion.ListOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(q.r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	opts.Watch = opts.Watch || q.verb == "watch"
	if errs := metainternalversionvalidation.ValidateListOptions(&opts, true); len(errs) > 0 {
		return nil, optionsInvalid(q.r, errs...)
	}
	return &opts, nil
}

func (q *request) list() error {
	out, err := q.negotiate(acceptOptions{convert: true})
	if err != nil {
		return err
	}
	sel, err := q.selectors()
	if err != nil {
		return err
	}
	o, err := q.listOptions()
	if err != nil {
		return err
	}
	pg, err := q.collect(sel, o)
	if err != nil {
		return err
	}
	if out.convert == nil && out.info.MediaType == mediaProtobuf && q.s.writeStoredList(q.w, out, q.res, pg) {
		return nil
	}
	if out.convert == nil && out.info.MediaType == mediaJSON {
		return q.s.writeJSONList(q.w, out, q.res, pg)
	}
	items, err := pg.objects(q.s, q.res)
	if err != nil {
		return err
	}
	list, err := q.s.newList(q.res, items, pg.rev, pg.cont)
	if err != nil {
		return err
	}
	if pg.remaining > 0 {
		la, _ := meta.ListAccessor(list)
		la.SetRemainingItemCount(&pg.remaining)
	}
	if out.table() {
		// A Table's rows may take their objects' encodings from the
		// item cache, by the page's keys.
		if list, err = q.s.table(q.r, q.res, list, pg.kvs); err != nil {
			return err
		}
	} else if list, err = q.s.convert(q.r, q.res, out, list); err != nil {
		return err
	}
	q.s.write(q.w, out, http.StatusOK, list)
	return nil
}

// listPage is a page collect read: the matching stored objects, with the
// revision read at, the continue token of the next page ("" if last) and,
// for a list no selector filters, how many objects come after the page,
// as kube-apiserver's remainingItemCount counts them (0 if unknown).
type listPage struct {
	kvs []store.KV
	// objs holds the objects of kvs a selector decoded; an entry is nil
	// until the object is decoded.
	objs      []runtime.Object
	rev       int64
	cont      string
	remaining int64
}

func (pg *listPage) add(kv store.KV, obj runtime.Object) {
	pg.kvs = append(pg.kvs, kv)
	pg.objs = append(pg.objs, obj)
}

// objects returns the page's objects, decoding those not decoded yet.
func (pg *listPage) objects(s *Server, res *Resource) ([]runtime.Object, error) {
	for i, obj := range pg.objs {
		if obj != nil {
			continue
		}
		obj, err := s.decodeKV(res, pg.kvs[i])
		if err != nil {
			return nil, err
		}
		pg.objs[i] = obj
	}
	return pg.objs, nil
}

// collect reads the matching objects of a list page; only a selector
// makes it decode them.
func (q *request) collect(sel selector, o listOptions) (*listPage, error) {
	// metadata.name=X in one namespace is a single read.
	if name, ok := sel.field.RequiresExactMatch("metadata.name"); ok && o.cont == nil && o.revision == 0 && (q.ns != "" || !q.res.Namespaced) {
		return q.collectOne(sel, name)
	}
	return q.collectPages(sel, o)
}

// collectOne reads the one object a metadata.name selector names, if it
// exists and matches the rest of the selector.
func (q *request) collectOne(sel selector, name string) (*listPage, error) {
	st := q.s.cfg.Store
	rev, err := st.CurrentRevision(q.ctx())
	if err != nil {
		return nil, storeErr(err, q.gr(), "")
	}
	pg := &listPage{rev: rev}
	kv, err := st.Get(q.ctx(), q.key(name))
	if errors.Is(err, store.ErrNotFound) {
		return pg, nil
	}
	if err != nil {
		return nil, storeErr(err, q.gr(), name)
	}
	obj, err := q.s.decodeKV(q.res, kv)
	if err != nil {
		return nil, err
	}
	if sel.matches(q.res, obj) {
		pg.add(kv, obj)
		pg.rev = max(rev, kv.ModRevision)
	}
	return pg, nil
}

// collectPages reads store pages until the list page is full or the
// resource ends.
func (q *request) collectPages(sel selector, o listOptions) (*listPage, error) {
	st := q.s.cfg.Store
	// Counting what comes after the page costs a walk over it; only an
	// unfiltered list shows the count (its first store page is the page).
	opts := store.ListOptions{Revision: o.revision, Limit: o.limit, Count: sel.empty()}
	if o.cont != nil {
		opts.Continue = o.cont.Start
	}
	pg := &listPage{}
	for {
		page, err := st.List(q.ctx(), q.listPrefix(), opts)
		if err != nil {
			return nil, q.listErr(err, o)
		}
		if page.Revision < o.minRev {
			return nil, tooLargeErr(&store.RevisionError{Requested: o.minRev, Bound: page.Revision, Err: store.ErrFutureRevision})
		}
		opts.Revision = page.Revision
		pg.rev = page.Revision
		if err := q.addMatching(pg, sel, page.KVs); err != nil {
			return nil, err
		}
		if !page.More {
			return pg, nil
		}
		last := page.KVs[len(page.KVs)-1].Key
		if o.limit > 0 && int64(len(pg.kvs)) >= o.limit {
			if sel.empty() {
				pg.remaining = page.Remaining
			}
			pg.cont = encodeContinue(page.Revision, last)
			return pg, nil
		}
		opts.Continue = last
		if o.limit > 0 {
			opts.Limit = o.limit - int64(len(pg.kvs))
		}
	}
}

// listErr is the answer to a failed read of a list page: 410 Expired for
// a compacted revision, with a token that goes on at the current revision
// when the list was continued.
func (q *request) listErr(err error, o listOptions) error {
	if errors.Is(err, store.ErrCompacted) && o.cont != nil {
		// The answer carries a token that goes on at the current
		// revision, for clients content with an inconsistent list.
		se := apierrors.NewResourceExpired(continueTooOld)
		se.ErrStatus.ListMeta.Continue = encodeContinue(-1, o.cont.Start)
		return se
	}
	if errors.Is(err, store.ErrCompacted) {
		return apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	}
	return storeErr(err, q.gr(), "")
}

// addMatching adds to pg the values of kvs that sel matches, decoding
// them only when sel must look inside.
func (q *request) addMatching(pg *listPage, sel selector, kvs []store.KV) error {
	for _, kv := range kvs {
		if sel.empty() {
			pg.add(kv, nil)
			continue
		}
		obj, err := q.s.decodeKV(q.res, kv)
		if err != nil {
			return err
		}
		if sel.matches(q.res, obj) {
			pg.add(kv, obj)
		}
	}
	return nil
}

// newList builds the resource's List kind holding items.
func (s *Server) newList(res *Resource, items []runtime.Object, rev int64, cont string) (runtime.Object, error) {
	gvk := res.GVR.GroupVersion().WithKind(res.Kind + "List")
	if res.New != nil {
		return newUnstructuredList(res, items, rev, cont)
	}
	list, err := s.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	// The items of a typed list carry no apiVersion and kind of their own,
	// as kube-apiserver encodes them; SetList copied them, so the objects
	// passed in keep theirs.
	if err := meta.EachListItem(list, func(item runtime.Object) error {
		item.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		return nil
	}); err != nil {
		return nil, err
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	la.SetResourceVersion(strconv.FormatInt(rev, 10))
	la.SetContinue(cont)
	list.GetObjectKind().SetGroupVersionKind(gvk)
	return list, nil
}
