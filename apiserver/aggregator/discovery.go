package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/transport"

	"github.com/kubegate/kubegate/apiserver"
)

// discoveryTimeout bounds a remote discovery request, as kube-apiserver
// bounds those it proxies.
const discoveryTimeout = 5 * time.Second

// maxDiscoveryBytes bounds a remote discovery document.
const maxDiscoveryBytes = 4 << 20

// discoveryUser is who the aggregator's own discovery requests are from:
// kube-aggregator's identity, in system:masters so that the remote server
// always answers.
const discoveryUser = "system:kube-aggregator"

// discoveryCache keeps what the remote servers said their group versions
// serve, as kube-aggregator's discovery manager keeps it: fetched again
// when the APIService changes or is resynced, kept (Stale) when the
// server stops answering.
type discoveryCache struct {
	resolver ServiceResolver
	log      *slog.Logger

	mu       sync.Mutex
	entries  map[schema.GroupVersion]discoveryEntry
	inFlight map[schema.GroupVersion]bool
	wg       sync.WaitGroup
}

type discoveryEntry struct {
	resources []apidiscoveryv2.APIResourceDiscovery
	fresh     bool
	// version is the resourceVersion of the APIService the fetch was for,
	// and at when it ended.
	version string
	at      time.Time
}

func newDiscoveryCache(r ServiceResolver, log *slog.Logger) *discoveryCache {
	return &discoveryCache{resolver: r, log: log, entries: map[schema.GroupVersion]discoveryEntry{},
		inFlight: map[schema.GroupVersion]bool{}}
}

// get returns gv's discovery; false when its server never answered.
func (c *discoveryCache) get(gv schema.GroupVersion) (apidiscoveryv2.APIVersionDiscovery, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[gv]
	if !ok {
		return apidiscoveryv2.APIVersionDiscovery{}, false
	}
	return discoveryVersion(gv, e.resources, e.fresh), true
}

// stale marks what gv's server said as no longer current.
func (c *discoveryCache) stale(gv schema.GroupVersion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[gv]; ok {
		e.fresh = false
		c.entries[gv] = e
	}
}

// forget drops gv, whose APIService is gone.
func (c *discoveryCache) forget(gv schema.GroupVersion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, gv)
}

// wait returns once no fetch is running.
func (c *discoveryCache) wait() { c.wg.Wait() }

// refresh fetches gv's discovery from rs's server in the background,
// unless a fetch of it is running already, or the last one was for this
// same APIService less than maxAge ago: a change of another APIService
// fetches nothing.
func (c *discoveryCache) refresh(ctx context.Context, gv schema.GroupVersion, rs *remoteService, maxAge time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inFlight[gv] || ctx.Err() != nil {
		return
	}
	if e, ok := c.entries[gv]; ok && e.fresh && e.version == rs.api.ResourceVersion && time.Since(e.at) < maxAge {
		return
	}
	c.inFlight[gv] = true
	c.wg.Go(func() {
		resources, err := c.fetch(ctx, gv, rs)
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.inFlight, gv)
		if err != nil {
			c.log.Debug("aggregator: remote discovery failed", "groupVersion", gv.String(), "err", err)
			if e, ok := c.entries[gv]; ok {
				e.fresh = false
				c.entries[gv] = e
			}
			return
		}
		c.entries[gv] = discoveryEntry{resources: resources, fresh: true, version: rs.api.ResourceVersion, at: time.Now()}
	})
}

// fetch reads /apis/GROUP/VERSION from rs's server.
func (c *discoveryCache) fetch(ctx context.Context, gv schema.GroupVersion, rs *remoteService) ([]apidiscoveryv2.APIResourceDiscovery, error) {
	svc := rs.api.Spec.Service
	loc, err := c.resolver.ResolveEndpoint(svc.Namespace, svc.Name, *svc.Port)
	if err != nil {
		return nil, err
	}
	loc.Path = "/apis/" + gv.Group + "/" + gv.Version
	ctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	transport.SetAuthProxyHeaders(req, discoveryUser, "", []string{"system:masters"}, nil)
	resp, err := rs.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", loc.Path, resp.Status)
	}
	var list metav1.APIResourceList
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDiscoveryBytes)).Decode(&list); err != nil {
		return nil, fmt.Errorf("GET %s: %w", loc.Path, err)
	}
	return apiserver.AggregatedResources(list.APIResources), nil
}
