package apiserver

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

// Writer is who writes an object, as a Resource's Authorize sees them:
// the user, what the server's authorizer lets them do, and the kinds and
// objects the server serves.
type Writer struct {
	ctx  context.Context
	user authn.User
	s    *Server
}

// Context is the write's context.
func (w *Writer) Context() context.Context { return w.ctx }

// User is the writer.
func (w *Writer) User() authn.User { return w.user }

// Superuser reports whether the writer is a member of system:masters,
// whom kube's storages let write anything without further checks.
func (w *Writer) Superuser() bool {
	for _, g := range w.user.Groups {
		if g == authz.SystemMasters {
			return true
		}
	}
	return false
}

// Allowed asks the server's authorizer whether the writer may do a (its
// User is the writer's).
func (w *Writer) Allowed(a authz.Attributes) (bool, error) {
	a.User = w.user
	d, _, err := w.s.cfg.Authorizer.Authorize(w.ctx, a)
	return d == authz.Allow, err
}

// ResourceFor returns the resource the server serves kind gvk as.
func (w *Writer) ResourceFor(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool) {
	for _, res := range w.s.registry().all {
		if res.gvk() == gvk && !res.virtual() {
			return res.GVR, true
		}
	}
	return schema.GroupVersionResource{}, false
}

// Get reads the stored object name of gvr in namespace ("" for a
// cluster-scoped resource); a missing one is kube's NotFound.
func (w *Writer) Get(gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	res, ok := w.s.registry().get(gvr)
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	kv, err := w.s.cfg.Store.Get(w.ctx, Key(gvr, namespace, name))
	if err != nil {
		return nil, storeErr(err, res.groupResource(), name)
	}
	return w.s.decodeKV(res, kv)
}

// authorizeWrite runs res's Authorize on a write its validation accepted.
func (s *Server) authorizeWrite(ctx context.Context, res *Resource, user authn.User, obj, old runtime.Object) error {
	if res.Authorize == nil {
		return nil
	}
	errs := res.Authorize(&Writer{ctx: ctx, user: user, s: s}, obj, old)
	if len(errs) == 0 {
		return nil
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	return apierrors.NewInvalid(res.invalidKind(), acc.GetName(), errs)
}
