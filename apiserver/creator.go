package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// creatorEntry serves a Config.Creators entry: the entry "" of a virtual
// resource, or a subresource of a stored one; either takes create only.
type creatorEntry struct {
	c           Creator
	gvr         schema.GroupVersionResource
	subresource string
	gvk         schema.GroupVersionKind // of New()
}

func (e *creatorEntry) Name() string    { return e.subresource }
func (e *creatorEntry) Verbs() []string { return []string{"create"} }
func (e *creatorEntry) Kind() schema.GroupVersionKind {
	return e.gvk.GroupVersion().WithKind(e.c.Kind())
}
func (e *creatorEntry) Serve(req *Request) error { return req.q.s.runCreator(req.q, e) }
func (e *creatorEntry) AcceptsAny() bool         { return true }

var _ Subresource = (*creatorEntry)(nil)

// addCreators adds the Creators of Config: a key GROUP/VERSION/RESOURCE
// is a virtual resource, GROUP/VERSION/RESOURCE/SUBRESOURCE a subresource
// of a stored one.
func (s *Server) addCreators(cs map[string]Creator) error {
	for key, c := range cs {
		parts := strings.Split(key, "/")
		if len(parts) != 3 && len(parts) != 4 {
			return fmt.Errorf("apiserver config: Creators key %q: want GROUP/VERSION/RESOURCE[/SUBRESOURCE]", key)
		}
		e := &creatorEntry{c: c, gvr: schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]}}
		kinds, _, err := s.scheme.ObjectKinds(c.New())
		if err != nil {
			return fmt.Errorf("apiserver config: Creators key %q: %w", key, err)
		}
		e.gvk = kinds[0]
		res, ok := s.registry().get(e.gvr)
		if len(parts) == 3 {
			if ok {
				return fmt.Errorf("apiserver config: Creators key %q: %s is served already", key, e.gvr)
			}
			s.registry().add(&Resource{GVR: e.gvr, Kind: c.Kind(), Singular: strings.ToLower(c.Kind()), Namespaced: c.Namespaced(),
				Subresources: subresources(e)})
			continue
		}
		if !ok {
			return fmt.Errorf("apiserver config: Creators key %q: no resource %s", key, e.gvr)
		}
		e.subresource = parts[3]
		if res.Subresources == nil {
			res.Subresources = map[string]Subresource{}
		}
		res.Subresources[e.subresource] = e
	}
	return nil
}

// runCreator serves POST on a virtual resource or subresource.
func (s *Server) runCreator(q *request, c *creatorEntry) error {
	r := q.r
	out, err := s.negotiate(r, acceptOptions{})
	if err != nil {
		return err
	}
	info, err := s.bodyInfo(r)
	if err != nil {
		return err
	}
	data, err := readBody(r)
	if err != nil {
		return err
	}
	d, err := s.decode(info, data, c.gvk, c.c.New())
	if err != nil {
		return err
	}
	obj := d.obj
	if c.c.Namespaced() {
		// As for stored kinds, the body's namespace is the request's.
		acc, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		if ns := acc.GetNamespace(); ns != "" && ns != q.ns {
			return errNamespaceMismatch()
		}
		acc.SetNamespace(q.ns)
		if c.subresource != "" {
			// a token for a service account is new content (G.9); access
			// reviews are not
			if err := s.checkNamespaceActive(r.Context(), c.gvr.GroupResource(), q.ns, q.name); err != nil {
				return err
			}
		}
	}
	if fm, err := s.creatorFieldManager(c); err != nil {
		s.log.Warn("field manager", "kind", c.gvk.Kind, "err", err)
	} else {
		obj = fm.UpdateNoErrors(c.c.New(), obj, fieldManagerName(r))
		obj.GetObjectKind().SetGroupVersionKind(c.gvk)
	}
	// kube-apiserver admits what every create handler decodes, reviews
	// and tokens included, before its storage acts (D.13).
	name := q.name
	if acc, err := meta.Accessor(obj); err == nil && name == "" {
		name = acc.GetName()
	}
	if err := q.admitBody(Create, name, c.Kind(), obj); err != nil {
		return err
	}
	ns := q.ns
	if !c.c.Namespaced() {
		ns = ""
	}
	res, err := c.c.Create(r.Context(), &CreateRequest{Namespace: ns, Name: q.name, User: q.user(), Object: obj,
		Store: s.cfg.Store, Codecs: s.codecs, Get: s.getObject})
	if err != nil {
		return err
	}
	if res.GetObjectKind().GroupVersionKind().Empty() {
		kinds, _, err := s.scheme.ObjectKinds(res)
		if err != nil {
			return err
		}
		res.GetObjectKind().SetGroupVersionKind(kinds[0])
	}
	s.write(q.w, out, http.StatusCreated, res)
	return nil
}

// getObject reads a stored object of gvr, for Creators.
func (s *Server) getObject(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	res, ok := s.registry().get(gvr)
	if !ok {
		return nil, errNoResource(gvr)
	}
	if !res.Namespaced {
		namespace = ""
	}
	kv, err := s.cfg.Store.Get(ctx, Key(gvr, namespace, name))
	if err != nil {
		return nil, storeErr(err, res.groupResource(), name)
	}
	return s.decodeKV(res, kv)
}

func errNoResource(gvr schema.GroupVersionResource) error {
	return fmt.Errorf("no resource %s on this server", gvr)
}
