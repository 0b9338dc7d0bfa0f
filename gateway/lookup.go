package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authz/bootstrap"
)

// LookupUser is the identity the gateway asserts for its own
// service-account lookups and its watch of bootstrap token Secrets in
// request-header mode. The upstream must let it get serviceaccounts,
// secrets, pods and nodes, and list and watch secrets in kube-system.
const LookupUser = bootstrap.GatewayUser

// UpstreamGetter implements serviceaccount.Getter by reading objects
// from the upstream API server through the gateway's clientset, caching
// each answer (found or not found) for TTL. As kube-apiserver's token
// cache does with its lookups, it reads an object once for all the
// requests that miss it at the same time, apart from their contexts and
// within its own timeout, and keeps no failure.
//
// kube-apiserver answers these lookups from informers over every
// ServiceAccount, Secret, Pod and Node, reading live only what they
// miss. The gateway reads only the objects tokens name, one GET each:
// it may get those objects, not list or watch them across the cluster,
// and a watch of every Secret would hold the cluster's secrets in its
// memory.
type UpstreamGetter struct {
	// Client reads the objects, as the gateway (NewUpstreamClient).
	// Required.
	Client kubernetes.Interface
	// TTL is how long an answer is reused; zero means 10 s, the lifetime
	// of kube-apiserver's token cache.
	TTL time.Duration

	mu      sync.Mutex
	cache   map[string]lookupEntry
	fetches singleflight.Group
}

type lookupEntry struct {
	meta    metav1.ObjectMeta
	token   []byte
	err     error
	expires time.Time
}

const (
	maxLookupEntries = 10000
	// lookupTimeout bounds a fetch, which is apart from the contexts of
	// the requests it answers.
	lookupTimeout = 10 * time.Second
	// maxLookupBytes is the largest answer a lookup reads: an object a
	// token names is far smaller, and an upstream answering more is
	// refused rather than held in memory.
	maxLookupBytes = 4 << 20
)

var _ serviceaccount.Getter = (*UpstreamGetter)(nil)

// GetServiceAccount reads a ServiceAccount.
func (g *UpstreamGetter) GetServiceAccount(ctx context.Context, ns, name string) (serviceaccount.Object, error) {
	e := g.get(ctx, "serviceaccounts", ns, name, func() (runtime.Object, *metav1.ObjectMeta) {
		sa := &corev1.ServiceAccount{}
		return sa, &sa.ObjectMeta
	})
	return object(e.meta), e.err
}

// GetPod reads a Pod.
func (g *UpstreamGetter) GetPod(ctx context.Context, ns, name string) (serviceaccount.Object, error) {
	e := g.get(ctx, "pods", ns, name, func() (runtime.Object, *metav1.ObjectMeta) {
		p := &corev1.Pod{}
		return p, &p.ObjectMeta
	})
	return object(e.meta), e.err
}

// GetNode reads a Node.
func (g *UpstreamGetter) GetNode(ctx context.Context, name string) (serviceaccount.Object, error) {
	e := g.get(ctx, "nodes", "", name, func() (runtime.Object, *metav1.ObjectMeta) {
		n := &corev1.Node{}
		return n, &n.ObjectMeta
	})
	return object(e.meta), e.err
}

// GetSecret reads a Secret.
func (g *UpstreamGetter) GetSecret(ctx context.Context, ns, name string) (serviceaccount.Secret, error) {
	e := g.get(ctx, "secrets", ns, name, func() (runtime.Object, *metav1.ObjectMeta) {
		s := &corev1.Secret{}
		return s, &s.ObjectMeta
	})
	return serviceaccount.Secret{Object: object(e.meta), Token: e.token, Labels: e.meta.Labels}, e.err
}

func object(m metav1.ObjectMeta) serviceaccount.Object {
	o := serviceaccount.Object{UID: string(m.UID)}
	if m.DeletionTimestamp != nil {
		o.DeletionTimestamp = m.DeletionTimestamp.Time
	}
	return o
}

// get returns the answer for the object name of resource, in namespace
// ns (Nodes have none): the cached one, or else fetch's. Concurrent
// misses of one object share one fetch, which runs apart from any
// caller's context: a caller that stops waiting when its ctx ends
// leaves the fetch to answer the others. newObject returns an empty
// object of the resource and its metadata; it is called on a miss only.
func (g *UpstreamGetter) get(ctx context.Context, resource, ns, name string, newObject func() (runtime.Object, *metav1.ObjectMeta)) lookupEntry {
	var path string
	if resource == "nodes" {
		path = "/api/v1/nodes/" + url.PathEscape(name)
	} else {
		path = "/api/v1/namespaces/" + url.PathEscape(ns) + "/" + resource + "/" + url.PathEscape(name)
	}
	g.mu.Lock()
	if e, ok := g.cache[path]; ok && time.Now().Before(e.expires) {
		g.mu.Unlock()
		return e
	}
	g.mu.Unlock()

	done := g.fetches.DoChan(path, func() (any, error) {
		return g.fetch(context.WithoutCancel(ctx), path, resource, ns, name, newObject), nil
	})
	select {
	case r := <-done:
		return r.Val.(lookupEntry)
	case <-ctx.Done():
		return lookupEntry{err: fmt.Errorf("look up %s: %w", path, context.Cause(ctx))}
	}
}

// fetch reads the object at path, within lookupTimeout of ctx, unless a
// fetch that has just ended cached it, and caches the answer for TTL
// when it is one: the object, or that there is none. A failure is not
// kept, so that the next lookup asks again.
func (g *UpstreamGetter) fetch(ctx context.Context, path, resource, ns, name string, newObject func() (runtime.Object, *metav1.ObjectMeta)) (e lookupEntry) {
	// The fetch runs on its own goroutine: a panic there would end the
	// process, so it fails the lookup of every waiting caller instead.
	defer func() {
		if recover() != nil {
			e = lookupEntry{err: fmt.Errorf("look up %s: reading the answer panicked", path)}
		}
	}()
	start := time.Now()
	g.mu.Lock()
	c, ok := g.cache[path]
	g.mu.Unlock()
	if ok && start.Before(c.expires) {
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	e = g.read(ctx, path, resource, ns, name, newObject)
	if e.err != nil && !errors.Is(e.err, serviceaccount.ErrNotFound) {
		return e
	}
	ttl := g.TTL
	if ttl == 0 {
		ttl = 10 * time.Second
	}
	e.expires = start.Add(ttl)
	g.mu.Lock()
	if g.cache == nil || len(g.cache) >= maxLookupEntries {
		g.cache = make(map[string]lookupEntry)
	}
	g.cache[path] = e
	g.mu.Unlock()
	return e
}

// read GETs the object at path with a single request: a lookup is made
// for a client's request, and answers with the upstream's first answer
// rather than wait out a Retry-After. Only a 200 is the object, and a
// 404 its absence; any other status is a failure. An empty name or
// namespace, or one that cannot be a path segment, names no object, and
// is not asked for.
func (g *UpstreamGetter) read(ctx context.Context, path, resource, ns, name string, newObject func() (runtime.Object, *metav1.ObjectMeta)) lookupEntry {
	namespaced := resource != "nodes"
	if !pathSegment(name) || namespaced && !pathSegment(ns) {
		return lookupEntry{err: fmt.Errorf("%s: %w", path, serviceaccount.ErrNotFound)}
	}
	obj, meta := newObject()
	ans := upstreamAnswer{limit: maxLookupBytes}
	res := g.Client.CoreV1().RESTClient().Get().
		NamespaceIfScoped(ns, namespaced).Resource(resource).Name(name).
		MaxRetries(0).Do(withAnswer(ctx, &ans))
	switch ans.code {
	case http.StatusOK:
	case http.StatusNotFound:
		return lookupEntry{err: fmt.Errorf("%s: %w", path, serviceaccount.ErrNotFound)}
	default:
		return lookupEntry{err: fmt.Errorf("look up %s: %w", path, ans.failure(res.Error()))}
	}
	if err := res.Into(obj); err != nil {
		return lookupEntry{err: fmt.Errorf("look up %s: %w", path, ans.undecodable(err))}
	}
	e := lookupEntry{meta: *meta}
	if s, ok := obj.(*corev1.Secret); ok {
		e.token = s.Data["token"]
	}
	return e
}

// pathSegment reports whether s can name an object in a path: it is not
// empty, ".", "..", and has no "/" or "%".
func pathSegment(s string) bool {
	return s != "" && len(rest.IsValidPathSegmentName(s)) == 0
}
