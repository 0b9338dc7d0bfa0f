package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/store"
)

// retryDelay is how long the controller waits before listing again after a
// failure.
const retryDelay = time.Second

// EnsureDefaultServiceAccount creates the "default" service account of
// namespace if it does not exist, and reports whether it did.
func EnsureDefaultServiceAccount(ctx context.Context, st store.Store, namespace string, now time.Time) (bool, error) {
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: DefaultServiceAccountName},
	}
	return createIfAbsent(ctx, st, apiserver.Key(serviceAccountsGVR, namespace, DefaultServiceAccountName), sa, &sa.ObjectMeta, now)
}

// createIfAbsent stores obj under key unless the key exists, with a new UID
// and creationTimestamp, and reports whether it did.
func createIfAbsent(ctx context.Context, st store.Store, key string, obj any, m *metav1.ObjectMeta, now time.Time) (bool, error) {
	if _, err := st.Get(ctx, key); err == nil {
		return false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	m.UID = uuid.NewUUID()
	m.CreationTimestamp = metav1.NewTime(now.UTC().Truncate(time.Second))
	data, err := json.Marshal(obj)
	if err != nil {
		return false, fmt.Errorf("encode %s: %w", key, err)
	}
	switch _, err := st.Create(ctx, key, data); {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrExists):
		return false, nil
	default:
		return false, fmt.Errorf("create %s: %w", key, err)
	}
}

// ServiceAccounts gives every active namespace a "default" service account,
// as kube-controller-manager's service-account controller does: for the
// namespaces that exist when it starts, and then for each new one. It is
// the stand-in for that controller where none runs (kubegate apiserver
// alone, tests of API clients); kubegate up runs controllers/serviceaccount
// and uses it only at start (docs/kubernetes-behaviour.md G.11).
type ServiceAccounts struct {
	Store store.Store
	// AtStartOnly gives the namespaces there are at Start their service
	// account, and does not watch for more.
	AtStartOnly bool
	// Logger reports failures; nil means slog.Default().
	Logger *slog.Logger
	// Now stamps creationTimestamp; nil means time.Now.
	Now func() time.Time
}

// Start creates the missing service accounts of the existing namespaces,
// so that they exist when Start returns, and then watches for new
// namespaces until ctx is done.
func (c *ServiceAccounts) Start(ctx context.Context) error {
	rev, err := c.sync(ctx)
	if err != nil || c.AtStartOnly {
		return err
	}
	go c.run(ctx, rev)
	return nil
}

func (c *ServiceAccounts) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.Default()
	}
	return c.Logger
}

// sync ensures the service account of every namespace and returns the
// revision the namespaces were listed at.
func (c *ServiceAccounts) sync(ctx context.Context) (int64, error) {
	prefix := apiserver.Key(namespacesGVR, "", "")
	opts := store.ListOptions{Limit: 1000}
	for {
		res, err := c.Store.List(ctx, prefix, opts)
		if err != nil {
			return 0, fmt.Errorf("list namespaces: %w", err)
		}
		for _, kv := range res.KVs {
			if err := c.ensure(ctx, kv); err != nil {
				return 0, err
			}
		}
		if !res.More || len(res.KVs) == 0 {
			return res.Revision, nil
		}
		opts.Revision, opts.Continue = res.Revision, res.KVs[len(res.KVs)-1].Key
	}
}

// ensure creates the service account of the namespace stored in kv, unless
// it is being deleted.
func (c *ServiceAccounts) ensure(ctx context.Context, kv store.KV) error {
	var ns corev1.Namespace
	if err := apiserver.UnmarshalStored(kv.Value, &ns); err != nil {
		c.logger().Warn("skipping undecodable namespace", "key", kv.Key, "err", err)
		return nil
	}
	if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return nil
	}
	_, err := EnsureDefaultServiceAccount(ctx, c.Store, ns.Name, orNow(c.Now)())
	return err
}

func (c *ServiceAccounts) run(ctx context.Context, rev int64) {
	prefix := apiserver.Key(namespacesGVR, "", "")
	for ctx.Err() == nil {
		err := c.watch(ctx, prefix, rev)
		if ctx.Err() != nil {
			return
		}
		c.logger().Warn("namespace watch ended; listing again", "err", err)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(retryDelay):
			}
			if rev, err = c.sync(ctx); err == nil {
				break
			}
			c.logger().Warn("default service accounts: sync failed; retrying", "err", err)
		}
	}
}

func (c *ServiceAccounts) watch(ctx context.Context, prefix string, rev int64) error {
	w, err := c.Store.Watch(ctx, prefix, rev)
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type != store.Added {
			continue
		}
		if err := c.ensure(ctx, ev.KV); err != nil {
			return err
		}
	}
	if err := w.Err(); err != nil {
		return err
	}
	return errors.New("watch closed")
}

func orNow(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}
