package apiserver

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

// serveCreator serves POST on a virtual resource or subresource (the request
// is already authorized as create on it).
func (s *Server) serveCreator(w http.ResponseWriter, r *http.Request, ri *authz.RequestInfo, c *creatorEntry) {
	if err := s.runCreator(w, r, ri, c); err != nil {
		s.writeErr(w, r, err)
	}
}

func (s *Server) runCreator(w http.ResponseWriter, r *http.Request, ri *authz.RequestInfo, c *creatorEntry) error {
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
	d, err := s.decode(info, data, c.gvk, c.New())
	if err != nil {
		return err
	}
	obj := d.obj
	if c.Namespaced() {
		// As for stored kinds, the body's namespace is the request's.
		acc, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		if ns := acc.GetNamespace(); ns != "" && ns != ri.Namespace {
			return errNamespaceMismatch()
		}
		acc.SetNamespace(ri.Namespace)
		if c.subresource != "" {
			// a token for a service account is new content (G.9); access
			// reviews are not
			if err := s.checkNamespaceActive(r.Context(), c.gvr.GroupResource(), ri.Namespace, ri.Name); err != nil {
				return err
			}
		}
	}
	if fm, err := s.creatorFieldManager(c); err != nil {
		s.log.Warn("field manager", "kind", c.gvk.Kind, "err", err)
	} else {
		obj = fm.UpdateNoErrors(c.New(), obj, fieldManagerName(r))
		obj.GetObjectKind().SetGroupVersionKind(c.gvk)
	}
	u, _ := authn.UserFrom(r.Context())
	ns := ri.Namespace
	if !c.Namespaced() {
		ns = ""
	}
	res, err := c.Create(r.Context(), &CreateRequest{Namespace: ns, Name: ri.Name, User: u, Object: obj,
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
	s.write(w, out, http.StatusCreated, res)
	return nil
}

// getObject reads a stored object of gvr, for Creators.
func (s *Server) getObject(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	res, ok := s.reg.get(gvr)
	if !ok {
		return nil, errNoResource(gvr)
	}
	if !res.namespaced {
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
