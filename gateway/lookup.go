package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authz/bootstrap"
)

// LookupUser is the identity the gateway asserts for its own
// service-account lookups and its watch of bootstrap token Secrets in
// request-header mode. The upstream must let it get serviceaccounts,
// secrets, pods and nodes, and list and watch secrets in kube-system.
const LookupUser = bootstrap.GatewayUser

// UpstreamGetter implements serviceaccount.Getter by
// reading objects from the upstream API server with the gateway's own
// credential, caching each answer (found or not) for TTL.
type UpstreamGetter struct {
	Upstream  *url.URL
	Transport http.RoundTripper
	// Identity is how the gateway names itself; RequestHeaderIdentity
	// sends X-Remote-User: LookupUser over the front-proxy certificate.
	Identity UpstreamIdentity
	// TTL is how long an answer is reused; zero means 10 s, the lifetime
	// of kube-apiserver's token cache.
	TTL time.Duration

	mu    sync.Mutex
	cache map[string]lookupEntry
}

type lookupEntry struct {
	meta    metav1.ObjectMeta
	token   []byte
	err     error
	expires time.Time
}

const maxLookupEntries = 10000

var _ serviceaccount.Getter = (*UpstreamGetter)(nil)

// GetServiceAccount reads a ServiceAccount.
func (g *UpstreamGetter) GetServiceAccount(ctx context.Context, ns, name string) (serviceaccount.Object, error) {
	e := g.get(ctx, "/api/v1/namespaces/"+url.PathEscape(ns)+"/serviceaccounts/"+url.PathEscape(name), false)
	return object(e.meta), e.err
}

// GetPod reads a Pod.
func (g *UpstreamGetter) GetPod(ctx context.Context, ns, name string) (serviceaccount.Object, error) {
	e := g.get(ctx, "/api/v1/namespaces/"+url.PathEscape(ns)+"/pods/"+url.PathEscape(name), false)
	return object(e.meta), e.err
}

// GetNode reads a Node.
func (g *UpstreamGetter) GetNode(ctx context.Context, name string) (serviceaccount.Object, error) {
	e := g.get(ctx, "/api/v1/nodes/"+url.PathEscape(name), false)
	return object(e.meta), e.err
}

// GetSecret reads a Secret.
func (g *UpstreamGetter) GetSecret(ctx context.Context, ns, name string) (serviceaccount.Secret, error) {
	e := g.get(ctx, "/api/v1/namespaces/"+url.PathEscape(ns)+"/secrets/"+url.PathEscape(name), true)
	return serviceaccount.Secret{Object: object(e.meta), Token: e.token, Labels: e.meta.Labels}, e.err
}

func object(m metav1.ObjectMeta) serviceaccount.Object {
	o := serviceaccount.Object{UID: string(m.UID)}
	if m.DeletionTimestamp != nil {
		o.DeletionTimestamp = m.DeletionTimestamp.Time
	}
	return o
}

func (g *UpstreamGetter) get(ctx context.Context, path string, secret bool) lookupEntry {
	now := time.Now()
	g.mu.Lock()
	if e, ok := g.cache[path]; ok && now.Before(e.expires) {
		g.mu.Unlock()
		return e
	}
	g.mu.Unlock()

	e := g.fetch(ctx, path, secret)
	ttl := g.TTL
	if ttl == 0 {
		ttl = 10 * time.Second
	}
	e.expires = now.Add(ttl)
	g.mu.Lock()
	if g.cache == nil || len(g.cache) >= maxLookupEntries {
		g.cache = make(map[string]lookupEntry)
	}
	g.cache[path] = e
	g.mu.Unlock()
	return e
}

func (g *UpstreamGetter) fetch(ctx context.Context, path string, secret bool) lookupEntry {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.Upstream.JoinPath(path).String(), nil)
	if err != nil {
		return lookupEntry{err: err}
	}
	req.Header.Set("Accept", "application/json")
	if g.Identity != ImpersonateIdentity {
		req.Header.Set(authn.RemoteUserHeader, LookupUser)
	}
	resp, err := g.Transport.RoundTrip(req)
	if err != nil {
		return lookupEntry{err: fmt.Errorf("look up %s: %w", path, err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return lookupEntry{err: fmt.Errorf("look up %s: %w", path, err)}
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return lookupEntry{err: fmt.Errorf("%s: %w", path, serviceaccount.ErrNotFound)}
	default:
		return lookupEntry{err: fmt.Errorf("look up %s: upstream answered %d", path, resp.StatusCode)}
	}
	if secret {
		var s corev1.Secret
		if err := json.Unmarshal(data, &s); err != nil {
			return lookupEntry{err: fmt.Errorf("look up %s: %w", path, err)}
		}
		return lookupEntry{meta: s.ObjectMeta, token: s.Data["token"]}
	}
	var o metav1.PartialObjectMetadata
	if err := json.Unmarshal(data, &o); err != nil {
		return lookupEntry{err: fmt.Errorf("look up %s: %w", path, err)}
	}
	return lookupEntry{meta: o.ObjectMeta}
}
