// Package aggregator serves the group versions of the APIServices that
// name a service, as kube-apiserver's aggregator does (I.3): their
// requests, once authenticated and authorized by the API server, are
// proxied to a ready endpoint of the service over TLS, verified with the
// APIService's CA bundle, with the server's front-proxy client
// certificate and the user in X-Remote-* headers; their discovery is
// fetched from the remote server and kept; and kube-aggregator's
// availability controller keeps their Available condition. An Aggregator
// is the apiserver.Aggregator of apiserver/server.
package aggregator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationhelper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	aggregatorclientset "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	aggregatorinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	availabilitymetrics "k8s.io/kube-aggregator/pkg/controllers/status/metrics"
	"k8s.io/kube-aggregator/pkg/controllers/status/remote"

	"github.com/kubegate/kubegate/apiserver"
)

// ServiceResolver finds where a service's port is served: the endpoint
// the aggregator dials.
type ServiceResolver interface {
	ResolveEndpoint(namespace, name string, port int32) (*url.URL, error)
}

// Options configure an Aggregator.
type Options struct {
	// ProxyClientCertFile and ProxyClientKeyFile are the client
	// certificate presented to the remote servers (kube-apiserver's
	// --proxy-client-cert-file and --proxy-client-key-file), read again
	// when an APIService changes or is resynced; "" presents none.
	ProxyClientCertFile, ProxyClientKeyFile string
	// Resolver finds a service's endpoint; required.
	Resolver ServiceResolver
	// Logger: nil means slog.Default().
	Logger *slog.Logger
}

// availabilityWorkers is how many APIServices the availability controller
// checks at once.
const availabilityWorkers = 2

// apiServiceResync is how often every APIService is looked at again, as
// kube-aggregator's controllers resync them: the remote discovery is
// fetched again then (a fetch under half of it old is recent enough).
const apiServiceResync = 30 * time.Second

// Aggregator is an apiserver.Aggregator. Until Start it serves nothing.
type Aggregator struct {
	opts Options
	log  *slog.Logger
	// remotes are the APIServices with a service, by group version.
	remotes atomic.Pointer[map[schema.GroupVersion]*remoteService]
	disc    *discoveryCache
}

var _ apiserver.Aggregator = (*Aggregator)(nil)

// New returns an Aggregator; Start makes it follow the APIServices.
func New(o Options) (*Aggregator, error) {
	if o.Resolver == nil {
		return nil, errors.New("aggregator: Resolver is required")
	}
	if (o.ProxyClientCertFile == "") != (o.ProxyClientKeyFile == "") {
		return nil, errors.New("--proxy-client-cert-file and --proxy-client-key-file go together")
	}
	a := &Aggregator{opts: o, log: o.Logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	a.disc = newDiscoveryCache(o.Resolver, a.log)
	empty := map[schema.GroupVersion]*remoteService{}
	a.remotes.Store(&empty)
	return a, nil
}

// remoteService is one APIService with a service, and the transport its
// requests go through.
type remoteService struct {
	api       *apiregistrationv1.APIService
	available bool
	cert      []byte // the client certificate rt presents
	rt        http.RoundTripper
	rtErr     error
}

// Handler returns the proxy of gv's APIService when it names a service.
func (a *Aggregator) Handler(gv schema.GroupVersion) (http.Handler, bool) {
	rs, ok := (*a.remotes.Load())[gv]
	if !ok {
		return nil, false
	}
	return &proxyHandler{remote: rs, resolver: a.opts.Resolver, log: a.log}, true
}

// Groups returns the groups of the APIServices with a service, their
// versions ordered as kube-aggregator orders them (versionPriority, then
// the most stable and newest), with the discovery each version's server
// gave.
func (a *Aggregator) Groups() []apiserver.RemoteGroup {
	byGroup := map[string][]*apiregistrationv1.APIService{}
	for gv, rs := range *a.remotes.Load() {
		byGroup[gv.Group] = append(byGroup[gv.Group], rs.api)
	}
	out := make([]apiserver.RemoteGroup, 0, len(byGroup))
	for g, apis := range byGroup {
		sort.Slice(apis, func(i, j int) bool {
			if apis[i].Spec.VersionPriority != apis[j].Spec.VersionPriority {
				return apis[i].Spec.VersionPriority > apis[j].Spec.VersionPriority
			}
			return version.CompareKubeAwareVersionStrings(apis[i].Spec.Version, apis[j].Spec.Version) > 0
		})
		rg := apiserver.RemoteGroup{Name: g}
		for _, api := range apis {
			rg.Priority = max(rg.Priority, api.Spec.GroupPriorityMinimum)
			rg.Versions = append(rg.Versions, api.Spec.Version)
			if d, ok := a.disc.get(schema.GroupVersion{Group: g, Version: api.Spec.Version}); ok {
				rg.Discovery = append(rg.Discovery, d)
			}
		}
		out = append(out, rg)
	}
	return out
}

// Start follows the APIServices, Services and EndpointSlices through the
// API server's loopback client cfg and runs kube-aggregator's
// availability controller on them, until ctx ends; stop returns once it
// has stopped.
func (a *Aggregator) Start(ctx context.Context, cfg *restclient.Config) (stop func(), _ error) {
	client, err := aggregatorclientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	factory := aggregatorinformers.NewSharedInformerFactory(client, 0)
	kubeFactory := informers.NewSharedInformerFactory(kube, 0)
	apis := factory.Apiregistration().V1().APIServices()
	certKey := func() ([]byte, []byte) {
		cert, key, _ := a.clientCert()
		return cert, key
	}
	ctrl, err := remote.New(apis, kubeFactory.Core().V1().Services(), kubeFactory.Discovery().V1().EndpointSlices(),
		client.ApiregistrationV1(), nil, certKey, a.opts.Resolver, availabilitymetrics.New())
	if err != nil {
		cancel()
		return nil, err
	}
	var mu sync.Mutex
	resync := func() {
		mu.Lock()
		defer mu.Unlock()
		all, err := apis.Lister().List(labels.Everything())
		if err == nil {
			a.sync(ctx, all)
		}
	}
	if _, err := apis.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { resync() },
		UpdateFunc: func(any, any) { resync() },
		DeleteFunc: func(any) { resync() },
	}, apiServiceResync); err != nil {
		cancel()
		return nil, err
	}
	factory.Start(ctx.Done())
	kubeFactory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { ctrl.Run(availabilityWorkers, ctx.Done()) })
	return func() {
		cancel()
		factory.Shutdown()
		kubeFactory.Shutdown()
		wg.Wait()
		a.disc.wait()
	}, nil
}

// clientCert reads the proxy client certificate and key; nil, nil
// without them.
func (a *Aggregator) clientCert() (cert, key []byte, _ error) {
	if a.opts.ProxyClientCertFile == "" {
		return nil, nil, nil
	}
	cert, err := os.ReadFile(a.opts.ProxyClientCertFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--proxy-client-cert-file: %w", err)
	}
	key, err = os.ReadFile(a.opts.ProxyClientKeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--proxy-client-key-file: %w", err)
	}
	return cert, key, nil
}

// sync rebuilds the remote services from the APIServices, and fetches
// the discovery of those available.
func (a *Aggregator) sync(ctx context.Context, all []*apiregistrationv1.APIService) {
	cert, key, err := a.clientCert()
	if err != nil {
		a.log.Error("aggregator: proxy client certificate", "err", err)
	}
	old := *a.remotes.Load()
	next := make(map[schema.GroupVersion]*remoteService, len(all))
	for _, api := range all {
		if api.Spec.Service == nil || api.Spec.Service.Port == nil {
			continue
		}
		gv := schema.GroupVersion{Group: api.Spec.Group, Version: api.Spec.Version}
		rs := &remoteService{api: api, cert: cert, available: apiregistrationhelper.IsAPIServiceConditionTrue(api, apiregistrationv1.Available)}
		if prev, ok := old[gv]; ok && prev.rtErr == nil && bytes.Equal(prev.cert, cert) &&
			apiequality.Semantic.DeepEqual(prev.api.Spec, api.Spec) {
			rs.rt = prev.rt
		} else {
			rs.rt, rs.rtErr = transport.New(remote.BuildTransportConfig(nil, cert, key, api))
		}
		next[gv] = rs
		if rs.available && rs.rtErr == nil {
			a.disc.refresh(ctx, gv, rs, apiServiceResync/2)
		} else {
			a.disc.stale(gv)
		}
	}
	for gv := range old {
		if _, ok := next[gv]; !ok {
			a.disc.forget(gv)
		}
	}
	a.remotes.Store(&next)
}

// discoveryVersion is the aggregated discovery of one remote group
// version.
func discoveryVersion(gv schema.GroupVersion, resources []apidiscoveryv2.APIResourceDiscovery, fresh bool) apidiscoveryv2.APIVersionDiscovery {
	d := apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Resources: slices.Clone(resources), Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
	if !fresh {
		d.Freshness = apidiscoveryv2.DiscoveryFreshnessStale
	}
	return d
}
