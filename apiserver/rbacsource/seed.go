package rbacsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/applyconfigurations"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authz/rbac"
	"github.com/kubegate/kubegate/store"
)

// seedParallelism is how many creates are in flight at once while seeding,
// so that a store with group commit syncs them together.
const seedParallelism = 32

// seedItem is one object to create if absent.
type seedItem struct {
	key string
	obj runtime.Object
}

// EnsurePolicy creates every object of policy that is missing from st and
// leaves existing ones as they are, as kube-apiserver's RBAC bootstrap does
// at start-up: an administrator's changes to a default role survive
// restarts. Created objects get a UID and creationTimestamp from now (nil:
// time.Now). It returns the store keys it created.
func EnsurePolicy(ctx context.Context, st store.Store, policy rbac.Objects, now func() time.Time) ([]string, error) {
	if now == nil {
		now = time.Now
	}
	var items []seedItem
	gv := rbacv1.SchemeGroupVersion
	for _, o := range policy.ClusterRoles {
		items = append(items, seedItem{apiserver.Key(gv.WithResource("clusterroles"), "", o.Name), typed(o, gv.WithKind("ClusterRole"))})
	}
	for _, o := range policy.ClusterRoleBindings {
		items = append(items, seedItem{apiserver.Key(gv.WithResource("clusterrolebindings"), "", o.Name), typed(o, gv.WithKind("ClusterRoleBinding"))})
	}
	for _, o := range policy.Roles {
		items = append(items, seedItem{apiserver.Key(gv.WithResource("roles"), o.Namespace, o.Name), typed(o, gv.WithKind("Role"))})
	}
	for _, o := range policy.RoleBindings {
		items = append(items, seedItem{apiserver.Key(gv.WithResource("rolebindings"), o.Namespace, o.Name), typed(o, gv.WithKind("RoleBinding"))})
	}
	return createMissing(ctx, st, Prefix, items, now())
}

// typed returns a copy of obj with its apiVersion and kind set.
func typed[T interface {
	runtime.Object
	DeepCopy() T
}](obj T, gvk schema.GroupVersionKind) runtime.Object {
	c := obj.DeepCopy()
	c.GetObjectKind().SetGroupVersionKind(gvk)
	return c
}

// createMissing creates each item whose key is not yet under prefix in st,
// in parallel. A key that appears meanwhile is left alone.
func createMissing(ctx context.Context, st store.Store, prefix string, items []seedItem, now time.Time) ([]string, error) {
	existing := map[string]bool{}
	opts := store.ListOptions{Limit: 1000}
	for {
		res, err := st.List(ctx, prefix, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, kv := range res.KVs {
			existing[kv.Key] = true
		}
		if !res.More || len(res.KVs) == 0 {
			break
		}
		opts.Revision, opts.Continue = res.Revision, res.KVs[len(res.KVs)-1].Key
	}
	var (
		mu      sync.Mutex
		created []string
		errs    []error
		wg      sync.WaitGroup
		sem     = make(chan struct{}, seedParallelism)
	)
	for _, it := range items {
		if existing[it.key] {
			continue
		}
		data, err := encodeNew(it.obj, now)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", it.key, err)
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := st.Create(ctx, it.key, data)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created = append(created, it.key)
			case !errors.Is(err, store.ErrExists):
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	return created, errors.Join(errs...)
}

// encodeNew returns the stored form of a new object: its JSON with a fresh
// UID and creationTimestamp, and no resourceVersion.
func encodeNew(obj runtime.Object, now time.Time) ([]byte, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	if m.GetUID() == "" {
		m.SetUID(uuid.NewUUID())
	}
	if ts := m.GetCreationTimestamp(); ts.IsZero() {
		m.SetCreationTimestamp(metav1.NewTime(now.UTC().Truncate(time.Second)))
	}
	m.SetResourceVersion("")
	obj, err := trackSeed(obj)
	if err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// bootstrapManager is the field manager kube-apiserver's RBAC bootstrap
// writes the default policy as: its own loopback client's.
const bootstrapManager = "kube-apiserver"

// seedManagers holds a field manager per RBAC kind, built once.
var seedManagers struct {
	once   sync.Once
	scheme *runtime.Scheme
	tc     managedfields.TypeConverter
	mu     sync.Mutex
	byKind map[schema.GroupVersionKind]*managedfields.FieldManager
}

// trackSeed gives a default policy object the managedFields kube's
// bootstrap gives it: everything it sets, owned by kube-apiserver through
// an Update, as a create by a client records it.
func trackSeed(obj runtime.Object) (runtime.Object, error) {
	m := &seedManagers
	m.once.Do(func() {
		m.scheme = runtime.NewScheme()
		_ = rbacv1.AddToScheme(m.scheme)
		m.tc = applyconfigurations.NewTypeConverter(m.scheme)
		m.byKind = map[schema.GroupVersionKind]*managedfields.FieldManager{}
	})
	gvk := obj.GetObjectKind().GroupVersionKind()
	m.mu.Lock()
	fm, ok := m.byKind[gvk]
	if !ok {
		var err error
		if fm, err = managedfields.NewDefaultFieldManager(m.tc, m.scheme, m.scheme, m.scheme, gvk, gvk.GroupVersion(), "", nil); err != nil {
			m.mu.Unlock()
			return nil, fmt.Errorf("field manager for %s: %w", gvk.Kind, err)
		}
		m.byKind[gvk] = fm
	}
	m.mu.Unlock()
	empty, err := m.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	out := fm.UpdateNoErrors(empty, obj, bootstrapManager)
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out, nil
}
