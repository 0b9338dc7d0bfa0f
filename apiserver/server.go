package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/applyconfigurations"

	"github.com/kubegate/kubegate/authz"
)

// Server is a Kubernetes-compatible API server over a store.Store.
type Server struct {
	cfg Config
	// system serves the server's own writes at start (the default
	// ServiceCIDR), as its loopback client, past authorization, as
	// kube-apiserver's authorizer lets system:masters do anything.
	system http.Handler
	log    *slog.Logger
	now    func() time.Time
	scheme *runtime.Scheme
	codecs serializer.CodecFactory
	// The serializers of the three media types.
	json, yaml, protobuf runtime.SerializerInfo

	// reg is the registry requests resolve their resources in, swapped
	// whole by SetResources.
	reg atomic.Pointer[registry]
	// regMu serializes the swaps.
	regMu sync.Mutex
	// The caches admission reads (Lister), and their followers' ends.
	ns *watchCache[*corev1.Namespace]
	// terminating holds the namespaces this server has marked for
	// deletion and its cache may not show so yet (G.9).
	terminating     sync.Map
	limitRanges     *watchCache[*corev1.LimitRange]
	serviceAccounts *watchCache[*corev1.ServiceAccount]
	priorityClasses *watchCache[*schedulingv1.PriorityClass]
	cachesDone      []chan struct{}
	svcAlloc        *serviceAllocator
	// endpoints keeps the kubernetes Service's endpoints; nil when the
	// server writes none.
	endpoints *endpointReconciler

	watchEvents sharedEvents

	typeConverter managedfields.TypeConverter
	fieldManagers sync.Map // fieldManagerKey → *managedfields.FieldManager

	metrics *requestMetrics
	// items caches the JSON encodings of list items.
	items *itemCache

	openapiOnce sync.Once
	openapi     *openAPIDocs
	// openapiCustom holds the documents with those of the custom
	// resources of the registry they were made for.
	openapiCustom atomic.Pointer[customOpenAPI]

	handler http.Handler
	stop    context.CancelFunc
	done    chan struct{}
}

// systemNamespaces exist from the start, as in every Kubernetes cluster.
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// New validates c, creates the system namespaces if they are missing and
// starts following the namespaces in the store. Call Close to stop.
func New(c Config) (*Server, error) {
	if c.Store == nil {
		return nil, errors.New("apiserver config: Store is required")
	}
	if c.Authenticator == nil {
		return nil, errors.New("apiserver config: Authenticator is required")
	}
	if c.Authorizer == nil {
		return nil, errors.New("apiserver config: Authorizer is required")
	}
	s := &Server{cfg: c, log: c.Logger, now: c.Now, done: make(chan struct{}), items: newItemCache(itemCacheBytes)}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if c.ServiceClusterIPRange == (netip.Prefix{}) {
		c.ServiceClusterIPRange = DefaultServiceClusterIPRange
	}
	if c.ServiceNodePortRange == (PortRange{}) {
		c.ServiceNodePortRange = DefaultServiceNodePortRange
	}
	if err := s.initCodecs(); err != nil {
		return nil, err
	}
	if err := s.initResources(c); err != nil {
		return nil, err
	}
	var err error
	if s.svcAlloc, err = newServiceAllocator(c.Store, c.ServiceClusterIPRange, c.ServiceNodePortRange); err != nil {
		return nil, fmt.Errorf("apiserver config: %w", err)
	}
	if err := s.holdIPsWithIPAddresses(); err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	reg := c.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s.metrics = newRequestMetrics(reg)

	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	if err := s.startCaches(ctx); err != nil {
		s.Close()
		return nil, err
	}
	for _, a := range c.Admission {
		if w, ok := a.(WantsLister); ok {
			w.SetLister(lister{s})
		}
		if w, ok := a.(WantsAuthorizer); ok {
			w.SetAuthorizer(c.Authorizer)
		}
		if w, ok := a.(WantsStatusWriter); ok {
			w.SetStatusWriter(loopbackStatus{s})
		}
	}
	if err := s.ensureSystemObjects(ctx, c); err != nil {
		cancel()
		return nil, err
	}
	s.handler = s.buildHandler()
	if err := s.startKubernetesEndpoints(c); err != nil {
		cancel()
		s.Close()
		return nil, err
	}
	if err := s.ensureDefaultServiceCIDR(ctx); err != nil {
		// Admission may not be ready before New returns; kube's
		// controller, too, writes it once the server serves.
		go s.retryDefaultServiceCIDR(ctx, err)
	}
	return s, nil
}

// initCodecs builds the scheme and the codecs of the three media types.
func (s *Server) initCodecs() error {
	var err error
	if s.scheme, err = newScheme(); err != nil {
		return err
	}
	// Lists are encoded one item at a time, as kube-apiserver 1.37 encodes
	// them (B.1): the answer goes out while it is encoded.
	s.codecs = serializer.NewCodecFactory(s.scheme, serializer.EnableStrict,
		serializer.WithStreamingCollectionEncodingToJSON(),
		serializer.WithStreamingCollectionEncodingToProtobuf())
	for _, info := range s.codecs.SupportedMediaTypes() {
		switch info.MediaType {
		case mediaJSON:
			s.json = info
		case mediaYAML:
			s.yaml = info
		case mediaProtobuf:
			s.protobuf = info
		}
	}
	if s.json.Serializer == nil || s.yaml.Serializer == nil || s.protobuf.Serializer == nil {
		return errors.New("apiserver: codec factory lacks JSON, YAML or protobuf")
	}
	return nil
}

// initResources registers c's Resources and c's Creators.
func (s *Server) initResources(c Config) error {
	seen := make(map[schema.GroupVersionResource]bool, len(c.Resources))
	for _, r := range c.Resources {
		if r == nil || r.GVR.Resource == "" || r.Kind == "" {
			return errors.New("apiserver config: a resource without a name or a kind")
		}
		if seen[r.GVR] {
			return fmt.Errorf("apiserver config: resource %s given twice", r.GVR)
		}
		seen[r.GVR] = true
	}
	s.reg.Store(newRegistry(c.Resources))
	if _, ok := s.registry().get(namespacesGVR); !ok {
		// The namespace lifecycle, and every namespaced write, needs them.
		return errors.New("apiserver config: no namespaces resource; give the core group's, apiserver/registry/core, in Resources")
	}
	for _, res := range s.registry().byGVR {
		if !res.virtual() {
			res.storedList = metadataFirst(s.newObject(res))
		}
	}
	if err := s.addCreators(c.Creators); err != nil {
		return err
	}
	s.typeConverter = applyconfigurations.NewTypeConverter(s.scheme)
	return nil
}

// ensureSystemObjects creates what every cluster has from the start when
// it is missing: the system namespaces, the resources' Initial objects
// (priority classes), and the kubernetes Service, whose endpoints
// startKubernetesEndpoints keeps.
func (s *Server) ensureSystemObjects(ctx context.Context, c Config) error {
	if err := s.ensureNamespaces(ctx); err != nil {
		return err
	}
	if err := s.ensureInitialObjects(ctx); err != nil {
		return err
	}
	return s.startKubernetesService(ctx, c.KubernetesServicePort)
}

// ensureInitialObjects creates each resource's Initial objects that are
// missing, in the order the resources were registered.
func (s *Server) ensureInitialObjects(ctx context.Context) error {
	for _, res := range s.registry().all {
		if res.Initial == nil {
			continue
		}
		for _, obj := range res.Initial() {
			if _, err := s.createStored(ctx, res, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				acc, _ := meta.Accessor(obj)
				return fmt.Errorf("create %s %s: %w", res.Singular, acc.GetName(), err)
			}
		}
	}
	return nil
}

// Close gives up the server's lease of the kubernetes endpoints, writing
// them without it, and stops following the store. Requests in flight are
// not interrupted.
func (s *Server) Close() error {
	s.stopKubernetesEndpoints()
	s.stop()
	for _, done := range s.cachesDone {
		<-done
	}
	return nil
}

// startCaches loads the caches admission reads through the Lister, as
// kube-apiserver's plugins read informers, and follows the store with
// them: namespaces, limit ranges, service accounts and priority classes.
func (s *Server) startCaches(ctx context.Context) (err error) {
	st := s.cfg.Store
	if s.ns, err = startWatchCache(ctx, st, namespacesGVR, false, func() *corev1.Namespace { return &corev1.Namespace{} }, s.log); err != nil {
		return err
	}
	s.cachesDone = append(s.cachesDone, s.ns.done)
	if s.limitRanges, err = startWatchCache(ctx, st, LimitRangesGVR, true, func() *corev1.LimitRange { return &corev1.LimitRange{} }, s.log); err != nil {
		return err
	}
	s.cachesDone = append(s.cachesDone, s.limitRanges.done)
	if s.serviceAccounts, err = startWatchCache(ctx, st, serviceAccountsGVR, true, func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} }, s.log); err != nil {
		return err
	}
	s.cachesDone = append(s.cachesDone, s.serviceAccounts.done)
	if s.priorityClasses, err = startWatchCache(ctx, st, PriorityClassesGVR, false, func() *schedulingv1.PriorityClass { return &schedulingv1.PriorityClass{} }, s.log); err != nil {
		return err
	}
	s.cachesDone = append(s.cachesDone, s.priorityClasses.done)
	return nil
}

// Handler returns the full filter chain and routes.
func (s *Server) Handler() http.Handler { return s.handler }

// Codecs returns the codecs (JSON, YAML, protobuf) for every registered type.
func (s *Server) Codecs() serializer.CodecFactory { return s.codecs }

// Scheme returns the scheme with every registered type.
func (s *Server) Scheme() *runtime.Scheme { return s.scheme }

func (s *Server) buildHandler() http.Handler {
	mux := chi.NewRouter()
	mux.NotFound(s.notFound)
	mux.MethodNotAllowed(s.notFound)
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		mux.Get(p, s.health)
		mux.Get(p+"/*", s.health)
	}
	mux.Get("/version", s.version)
	mux.Get("/version/", s.version) // kube-apiserver serves both, and RBAC's system:public-info-viewer names both
	mux.Get("/api", s.apiVersions)
	mux.Get("/api/", s.apiVersions)
	mux.Get("/apis", s.apiGroups)
	mux.Get("/apis/", s.apiGroups)
	mux.Get("/api/{version}", s.apiResources)
	mux.Get("/apis/{group}", s.apiGroup)
	mux.Get("/apis/{group}/{version}", s.apiResources)
	s.openAPIV2Service().RegisterOpenAPIVersionedService("/openapi/v2", mux)
	mux.Get("/openapi/v3", s.openAPIRoot)
	mux.Get("/openapi/v3/*", s.openAPIDoc)
	mux.Get("/metrics", s.metrics.handler.ServeHTTP)
	mux.HandleFunc("/api/{version}/*", s.withRequestMetrics(s.serveResource))
	mux.HandleFunc("/apis/{group}/{version}/*", s.withRequestMetrics(s.serveResource))

	var h http.Handler = mux
	s.system = s.withRequestInfo(s.withAuthentication(mux))
	h = s.withAuthorization(h)
	h = s.withImpersonation(h)
	h = s.withAuthentication(h)
	h = s.withRequestDeadline(h)
	h = s.withRequestInfo(h)
	h = s.withRecovery(h)
	h = s.withRequestLog(h)
	return h
}

// notFound answers a path the server serves nothing at as kube does (D.5):
// under /api, or under /apis/GROUP of a served group, with its NotFound
// Status; anywhere else (an unknown group, a group of custom resources
// alone, outside the API) with Go's plain-text 404, which clients turn
// into the same message (I.2).
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	api := p == "/api" || strings.HasPrefix(p, "/api/")
	if g, ok := strings.CutPrefix(p, "/apis/"); ok {
		g, _, _ = strings.Cut(g, "/")
		api = g != "" && s.registry().servesTyped(g)
	}
	if !api {
		http.NotFound(w, r)
		return
	}
	s.writeErr(w, r, errNotServed)
}

// errNotServed is kube's Status for a resource or subresource it does not
// serve.
var errNotServed = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound,
	Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource", Details: &metav1.StatusDetails{}}}

// health answers /healthz, /livez and /readyz from a read of the store's
// revision within the check's timeout; a failure's detail goes to the log
// only, as kube-apiserver withholds it (J.4).
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	timeout := s.cfg.HealthcheckTimeout
	if strings.HasPrefix(r.URL.Path, "/readyz") {
		timeout = s.cfg.ReadycheckTimeout
	}
	if timeout <= 0 {
		timeout = DefaultStoreCheckTimeout
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	if _, err := s.cfg.Store.CurrentRevision(ctx); err != nil {
		s.log.Warn("store check failed", logPath, r.URL.Path, "err", err)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "[-]etcd failed: reason withheld\nhealthz check failed\n")
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	fmt.Fprint(w, "ok")
}

// takesAnyPath reports whether sub is given the path after its name.
func takesAnyPath(sub Subresource) bool {
	a, ok := sub.(AnyPathEntry)
	return ok && a.TakesAnyPath()
}

// serveResource dispatches a resource request on its RequestInfo.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request) {
	ri, _ := authz.RequestInfoFrom(r.Context())
	if ri == nil || !ri.IsResourceRequest || strings.HasPrefix(r.URL.Path, "/apis/") && ri.APIGroup == "" {
		s.notFound(w, r)
		return
	}
	gvr := schema.GroupVersionResource{Group: ri.APIGroup, Version: ri.APIVersion, Resource: ri.Resource}
	res, ok := s.registry().get(gvr)
	if ok && res.virtual() {
		s.serveVirtual(w, r, ri, res)
		return
	}
	if !ok {
		if h, remote := s.remoteHandler(r, gvr.GroupVersion()); remote {
			h.ServeHTTP(w, r)
			return
		}
	}
	if !ok || len(ri.Parts) > 3 && !takesAnyPath(res.Subresources[ri.Subresource]) {
		s.notFound(w, r)
		return
	}
	ns := ri.Namespace
	if gvr == namespacesGVR {
		ns = ""
	}
	if !res.Namespaced && ns != "" {
		s.notFound(w, r)
		return
	}
	name := ri.Name
	if len(ri.Parts) < 2 {
		name = "" // a collection; list and watch take Name from a metadata.name field selector
	}
	switch {
	case res.Deprecation != "":
		r = withWarnings(w, r)
		warning.AddWarning(r.Context(), "", res.Deprecation)
	case ri.Verb == "create", ri.Verb == "update", ri.Verb == "patch", ri.Verb == "delete", ri.Verb == "deletecollection":
		r = withWarnings(w, r) // admission may warn (D.8)
	}
	req := &request{s: s, w: w, r: r, res: res, ns: ns, name: name, sub: ri.Subresource, verb: ri.Verb}
	req.serve()
}

// serveVirtual serves a virtual resource by its entry "": only at the
// resource's own scope and as RESOURCE or RESOURCE/NAME, kube's 404
// elsewhere, unless the entry takes any path; then the verb must be one
// of the entry's, or 405.
func (s *Server) serveVirtual(w http.ResponseWriter, r *http.Request, ri *authz.RequestInfo, res *Resource) {
	e := res.Subresources[""]
	var err error
	switch {
	case !takesAnyPath(e) && (len(ri.Parts) > 2 || res.Namespaced != (ri.Namespace != "")):
		// A cluster-scoped review has no namespaced path, nor a
		// namespaced one a cluster-wide path: authorizing it in a
		// namespace would grant it there.
		err = errNotServed
	case !slices.Contains(e.Verbs(), ri.Verb):
		err = methodNotAllowed()
	default:
		if res.Deprecation != "" {
			r = withWarnings(w, r)
			warning.AddWarning(r.Context(), "", res.Deprecation)
		}
		q := &request{s: s, w: w, r: r, res: res, ns: ri.Namespace, name: ri.Name, sub: ri.Subresource, verb: ri.Verb}
		err = e.Serve(&Request{q})
	}
	if err != nil {
		s.writeErr(w, r, err)
	}
}
