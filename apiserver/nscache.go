package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegate/kubegate/store"
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// nsCache is the set of namespace names, kept by a store watch so that the
// create path checks "the namespace exists" without a store read. A name it
// does not hold yet (its watch lags) is looked up in the store.
type nsCache struct {
	st     store.Store
	prefix string
	done   chan struct{}

	mu    sync.RWMutex
	names map[string]bool
}

func startNSCache(ctx context.Context, st store.Store, log *slog.Logger) (*nsCache, error) {
	c := &nsCache{st: st, prefix: Key(namespacesGVR, "", ""), done: make(chan struct{}), names: map[string]bool{}}
	rev, err := c.load(ctx)
	if err != nil {
		return nil, err
	}
	go c.follow(ctx, rev, log)
	return c, nil
}

// load lists every namespace and returns the revision of the list.
func (c *nsCache) load(ctx context.Context) (int64, error) {
	res, err := c.st.List(ctx, c.prefix, store.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list namespaces: %w", err)
	}
	names := make(map[string]bool, len(res.KVs))
	for _, kv := range res.KVs {
		names[strings.TrimPrefix(kv.Key, c.prefix)] = true
	}
	c.mu.Lock()
	c.names = names
	c.mu.Unlock()
	return res.Revision, nil
}

// follow applies namespace events until ctx ends, re-listing when the watch
// breaks.
func (c *nsCache) follow(ctx context.Context, rev int64, log *slog.Logger) {
	defer close(c.done)
	for ctx.Err() == nil {
		w, err := c.st.Watch(ctx, c.prefix, rev)
		if err == nil {
			for ev := range w.ResultChan() {
				name := strings.TrimPrefix(ev.KV.Key, c.prefix)
				c.mu.Lock()
				switch ev.Type {
				case store.Added, store.Modified:
					c.names[name] = true
				case store.Deleted:
					delete(c.names, name)
				}
				c.mu.Unlock()
			}
			err = w.Err()
			w.Stop()
		}
		if ctx.Err() != nil || errors.Is(err, store.ErrClosed) {
			return
		}
		log.Warn("namespace watch ended; listing again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		if rev, err = c.load(ctx); err != nil {
			log.Warn("namespace list failed", "err", err)
		}
	}
}

// exists reports whether namespace name exists.
func (c *nsCache) exists(ctx context.Context, name string) (bool, error) {
	c.mu.RLock()
	ok := c.names[name]
	c.mu.RUnlock()
	if ok {
		return true, nil
	}
	_, err := c.st.Get(ctx, c.prefix+name)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// ensureNamespaces creates the system namespaces that are missing.
func (s *Server) ensureNamespaces(ctx context.Context) error {
	for _, name := range systemNamespaces {
		if ok, err := s.ns.exists(ctx, name); err != nil || ok {
			if err != nil {
				return fmt.Errorf("check namespace %s: %w", name, err)
			}
			continue
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		res, _ := s.reg.get(namespacesGVR)
		if _, err := s.createStored(ctx, res, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
	}
	return nil
}

// systemNamespace refuses the deletion of default, kube-system and
// kube-public, as kube-apiserver's namespace lifecycle does.
func systemNamespace(name string) error {
	for _, ns := range systemNamespaces[:3] {
		if name == ns {
			return errors.New("this namespace may not be deleted")
		}
	}
	return nil
}
