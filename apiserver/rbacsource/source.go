// Package rbacsource keeps the RBAC authorizer's rules current with the
// Roles, ClusterRoles, RoleBindings and ClusterRoleBindings in the API
// server's store, writes the bootstrap policy into a new store, and checks
// writes of those objects for privilege escalation.
//
// A Source lists the four resources once, then follows one watch on their
// common key prefix (where it skips the custom resources of CRDs in the
// group), feeding every change into an rbac.Memory (which fills in
// the rules of aggregated ClusterRoles). When the watch ends, because its
// history was compacted or the store failed, the Source lists again and
// replaces everything, as an informer does.
package rbacsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz/rbac"
	"github.com/kubegate/kubegate/store"
)

// Prefix is the store key prefix of every RBAC object.
const Prefix = "/registry/" + rbacv1.GroupName + "/"

// retryDelay is how long the Source waits before listing again after a
// failed list or a watch that ended with an error other than compaction.
const retryDelay = time.Second

// Options configure a Source.
type Options struct {
	// Scheme decodes stored objects; nil means a scheme with only
	// rbac.authorization.k8s.io/v1.
	Scheme *runtime.Scheme
	// Logger reports lists, relists and undecodable objects; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Source is an rbac.RuleSource backed by a store. The zero value is not
// usable; call New, then Start.
type Source struct {
	st     store.Store
	scheme *runtime.Scheme
	log    *slog.Logger
	mem    rbac.Memory

	mu      sync.Mutex
	cond    *sync.Cond
	rev     int64 // the store revision the rules reflect
	stopped bool
}

var _ rbac.RuleSource = (*Source)(nil)

// New returns a Source reading from st. It holds no rules until Start.
func New(st store.Store, o Options) *Source {
	if o.Scheme == nil {
		o.Scheme = runtime.NewScheme()
		_ = rbacv1.AddToScheme(o.Scheme)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Source{st: st, scheme: o.Scheme, log: o.Logger}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// Start lists the RBAC objects, so that the Source answers from the
// store's current state when Start returns, and then follows changes until
// ctx is done.
func (s *Source) Start(ctx context.Context) error {
	rev, err := s.list(ctx)
	if err != nil {
		return err
	}
	go s.run(ctx, rev)
	return nil
}

// list reads every RBAC object, replaces the rules with them and returns
// the revision they were read at.
func (s *Source) list(ctx context.Context) (int64, error) {
	var objs rbac.Objects
	var rev int64
	opts := store.ListOptions{Limit: 1000}
	for {
		res, err := s.st.List(ctx, Prefix, opts)
		if err != nil {
			return 0, fmt.Errorf("list RBAC objects: %w", err)
		}
		rev = res.Revision
		for _, kv := range res.KVs {
			obj, err := s.decode(kv)
			if err != nil {
				s.log.Warn("skipping undecodable RBAC object", "key", kv.Key, "err", err)
				continue
			}
			if obj != nil {
				add(&objs, obj)
			}
		}
		if !res.More || len(res.KVs) == 0 {
			break
		}
		opts.Revision, opts.Continue = rev, res.KVs[len(res.KVs)-1].Key
	}
	s.mem.Replace(objs)
	s.advance(rev)
	return rev, nil
}

// decode decodes the RBAC object stored under kv's key, or returns nil for
// a value that is not one. The prefix also holds the custom resources of
// CRDs in the rbac.authorization.k8s.io group under other resource names,
// and such an object may well say it is a ClusterRoleBinding: only the
// four RBAC resources' keys count, each with its own kind.
func (s *Source) decode(kv store.KV) (runtime.Object, error) {
	resource, _, _ := strings.Cut(strings.TrimPrefix(kv.Key, Prefix), "/")
	if !rbacResources[resource] {
		return nil, nil
	}
	obj, err := apiserver.DecodeStored(s.scheme, kv.Value, kv.ModRevision)
	if err != nil {
		return nil, err
	}
	if kindResource(obj) != resource {
		return nil, fmt.Errorf("a %T stored as %s", obj, resource)
	}
	return obj, nil
}

// rbacResources are the resources the rules come from.
var rbacResources = map[string]bool{"roles": true, "rolebindings": true, "clusterroles": true, "clusterrolebindings": true}

// kindResource is the resource of an RBAC object.
func kindResource(obj runtime.Object) string {
	switch obj.(type) {
	case *rbacv1.Role:
		return "roles"
	case *rbacv1.ClusterRole:
		return "clusterroles"
	case *rbacv1.RoleBinding:
		return "rolebindings"
	case *rbacv1.ClusterRoleBinding:
		return "clusterrolebindings"
	}
	return ""
}

// run follows the watch from rev, listing again whenever it ends, until
// ctx is done.
func (s *Source) run(ctx context.Context, rev int64) {
	defer func() {
		s.mu.Lock()
		s.stopped = true
		s.cond.Broadcast()
		s.mu.Unlock()
	}()
	for ctx.Err() == nil {
		err := s.watch(ctx, rev)
		if ctx.Err() != nil {
			return
		}
		if !errors.Is(err, store.ErrCompacted) {
			s.log.Warn("RBAC watch ended; listing again", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(retryDelay):
			}
		}
		for {
			if rev, err = s.list(ctx); err == nil {
				break
			}
			s.log.Warn("RBAC list failed; retrying", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(retryDelay):
			}
		}
	}
}

// watch applies the events after rev until the watch ends, and returns why.
func (s *Source) watch(ctx context.Context, rev int64) error {
	w, err := s.st.Watch(ctx, Prefix, rev)
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case store.Added, store.Modified:
			obj, err := s.decode(ev.KV)
			if err != nil {
				s.log.Warn("skipping undecodable RBAC object", "key", ev.KV.Key, "err", err)
				break
			}
			if obj != nil {
				s.set(obj)
			}
		case store.Deleted:
			s.delete(ev.KV.Key)
		}
		s.advance(ev.Revision)
	}
	if err := w.Err(); err != nil {
		return err
	}
	return errors.New("watch closed")
}

func add(objs *rbac.Objects, obj runtime.Object) {
	switch o := obj.(type) {
	case *rbacv1.Role:
		objs.Roles = append(objs.Roles, o)
	case *rbacv1.ClusterRole:
		objs.ClusterRoles = append(objs.ClusterRoles, o)
	case *rbacv1.RoleBinding:
		objs.RoleBindings = append(objs.RoleBindings, o)
	case *rbacv1.ClusterRoleBinding:
		objs.ClusterRoleBindings = append(objs.ClusterRoleBindings, o)
	}
}

func (s *Source) set(obj runtime.Object) {
	switch o := obj.(type) {
	case *rbacv1.Role:
		s.mem.SetRole(o)
	case *rbacv1.ClusterRole:
		s.mem.SetClusterRole(o)
	case *rbacv1.RoleBinding:
		s.mem.SetRoleBinding(o)
	case *rbacv1.ClusterRoleBinding:
		s.mem.SetClusterRoleBinding(o)
	}
}

// delete removes the object stored under key:
// PREFIX/RESOURCE/NAMESPACE/NAME or PREFIX/RESOURCE/NAME.
func (s *Source) delete(key string) {
	parts := strings.Split(strings.TrimPrefix(key, Prefix), "/")
	switch {
	case len(parts) == 3 && parts[0] == "roles":
		s.mem.DeleteRole(parts[1], parts[2])
	case len(parts) == 3 && parts[0] == "rolebindings":
		s.mem.DeleteRoleBinding(parts[1], parts[2])
	case len(parts) == 2 && parts[0] == "clusterroles":
		s.mem.DeleteClusterRole(parts[1])
	case len(parts) == 2 && parts[0] == "clusterrolebindings":
		s.mem.DeleteClusterRoleBinding(parts[1])
	}
}

func (s *Source) advance(rev int64) {
	s.mu.Lock()
	if rev > s.rev {
		s.rev = rev
		s.cond.Broadcast()
	}
	s.mu.Unlock()
}

// Revision returns the store revision the rules reflect.
func (s *Source) Revision() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev
}

// WaitForRevision blocks until the rules reflect every write up to rev,
// ctx is done, or the Source has stopped following the store.
func (s *Source) WaitForRevision(ctx context.Context, rev int64) error {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.rev < rev {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.stopped {
			return errors.New("RBAC source has stopped")
		}
		s.cond.Wait()
	}
	return nil
}

// Objects returns the RBAC objects the Source holds.
func (s *Source) Objects() rbac.Objects { return s.mem.Objects() }

// ListClusterRoleBindings implements rbac.RuleSource.
func (s *Source) ListClusterRoleBindings(u authn.User) ([]*rbacv1.ClusterRoleBinding, error) {
	return s.mem.ListClusterRoleBindings(u)
}

// ListRoleBindings implements rbac.RuleSource.
func (s *Source) ListRoleBindings(namespace string, u authn.User) ([]*rbacv1.RoleBinding, error) {
	return s.mem.ListRoleBindings(namespace, u)
}

// GetRole implements rbac.RuleSource.
func (s *Source) GetRole(namespace, name string) (*rbacv1.Role, error) {
	return s.mem.GetRole(namespace, name)
}

// GetClusterRole implements rbac.RuleSource.
func (s *Source) GetClusterRole(name string) (*rbacv1.ClusterRole, error) {
	return s.mem.GetClusterRole(name)
}
