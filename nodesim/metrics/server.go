package metrics

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	listersv1 "k8s.io/client-go/listers/core/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/nodesim"
)

// Options configure a Server.
type Options struct {
	// UsagePercent is a container's usage as a percentage of its
	// requests when its pod's annotations do not set it; 0 means
	// DefaultUsagePercent.
	UsagePercent int
	// NodeBaseCPU and NodeBaseMemory are what a node uses without pods;
	// zero means DefaultNodeBaseCPU and DefaultNodeBaseMemory.
	NodeBaseCPU, NodeBaseMemory resource.Quantity
	// Window is the window every sample reports; 0 means 15 s,
	// metrics-server's default resolution.
	Window time.Duration
	// Now is the clock of the samples' timestamps; nil means time.Now.
	Now func() time.Time
	// Logger: nil means slog.Default().
	Logger *slog.Logger
}

// Validate names the first option that is wrong.
func (o *Options) Validate() error {
	switch {
	case o.UsagePercent < 0:
		return fmt.Errorf("usage percent %d is negative", o.UsagePercent)
	case o.NodeBaseCPU.Sign() < 0 || o.NodeBaseMemory.Sign() < 0:
		return errors.New("a node's base usage is negative")
	case o.Window < 0:
		return fmt.Errorf("window %s is negative", o.Window)
	}
	return nil
}

// defaultWindow is metrics-server's default --metric-resolution.
const defaultWindow = 15 * time.Second

// Server serves metrics.k8s.io/v1beta1 from the pods and nodes its
// listers hold.
type Server struct {
	o     Options
	log   *slog.Logger
	pods  listersv1.PodLister
	nodes listersv1.NodeLister
	auth  authn.Request
	codec serializer.CodecFactory
}

// New returns a Server reading pods and nodes, which authenticates every
// request but the health checks with auth (the request-header
// authenticator of the front-proxy CA).
func New(pods listersv1.PodLister, nodes listersv1.NodeLister, auth authn.Request, o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if pods == nil || nodes == nil || auth == nil {
		return nil, errors.New("metrics server: the pod and node listers and the authenticator are required")
	}
	if o.UsagePercent == 0 {
		o.UsagePercent = DefaultUsagePercent
	}
	if o.NodeBaseCPU.IsZero() {
		o.NodeBaseCPU = DefaultNodeBaseCPU
	}
	if o.NodeBaseMemory.IsZero() {
		o.NodeBaseMemory = DefaultNodeBaseMemory
	}
	if o.Window == 0 {
		o.Window = defaultWindow
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{o: o, log: o.Logger, pods: pods, nodes: nodes, auth: auth}
	if s.log == nil {
		s.log = slog.Default()
	}
	scheme := runtime.NewScheme()
	if err := metricsv1beta1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	s.codec = serializer.NewCodecFactory(scheme)
	return s, nil
}

var (
	nodeMetricsGR = metricsv1beta1.Resource("nodes")
	podMetricsGR  = metricsv1beta1.Resource("pods")
)

// ServeHTTP serves the health checks to anyone and the API to the
// authenticated aggregator.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz", "/livez", "/readyz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
		return
	}
	if _, ok, err := s.auth.AuthenticateRequest(r); err != nil || !ok {
		if err != nil {
			s.log.Debug("metrics server: authentication failed", "path", r.URL.Path, "err", err)
		}
		s.writeErr(w, r, apierrors.NewUnauthorized("Unauthorized"))
		return
	}
	if r.Method != http.MethodGet {
		s.writeErr(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Group: metricsv1beta1.GroupName}, r.Method))
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "apis":
		s.write(w, r, &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{apiGroup()}})
	case len(parts) == 2 && parts[0] == "apis" && parts[1] == metricsv1beta1.GroupName:
		g := apiGroup()
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		s.write(w, r, &g)
	case len(parts) >= 3 && parts[0] == "apis" && parts[1] == metricsv1beta1.GroupName && parts[2] == "v1beta1":
		s.serveAPI(w, r, parts[3:])
	default:
		http.NotFound(w, r)
	}
}

func apiGroup() metav1.APIGroup {
	gv := metav1.GroupVersionForDiscovery{GroupVersion: metricsv1beta1.SchemeGroupVersion.String(), Version: "v1beta1"}
	return metav1.APIGroup{Name: metricsv1beta1.GroupName, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}
}

// resources is metrics-server's discovery of metrics.k8s.io/v1beta1.
func resources() *metav1.APIResourceList {
	return &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: metricsv1beta1.SchemeGroupVersion.String(), APIResources: []metav1.APIResource{
			{Name: "nodes", SingularName: "", Namespaced: false, Kind: "NodeMetrics", Verbs: metav1.Verbs{"get", "list"}},
			{Name: "pods", SingularName: "", Namespaced: true, Kind: "PodMetrics", Verbs: metav1.Verbs{"get", "list"}},
		}}
}

// serveAPI serves the paths under /apis/metrics.k8s.io/v1beta1.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, parts []string) {
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		s.writeErr(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	switch {
	case len(parts) == 0:
		s.write(w, r, resources())
	case parts[0] == "nodes" && len(parts) <= 2:
		if len(parts) == 2 {
			s.serveNode(w, r, parts[1])
			return
		}
		s.serveNodes(w, r, sel)
	case parts[0] == "pods" && len(parts) == 1:
		s.servePods(w, r, "", sel)
	case parts[0] == "namespaces" && len(parts) >= 3 && parts[2] == "pods" && len(parts) <= 4:
		if len(parts) == 4 {
			s.servePod(w, r, parts[1], parts[3])
			return
		}
		s.servePods(w, r, parts[1], sel)
	default:
		http.NotFound(w, r)
	}
}

// sampleTime is the timestamp of a sample: the clock, to the second.
func (s *Server) sampleTime() metav1.Time {
	return metav1.NewTime(s.o.Now().Truncate(time.Second))
}

// reported reports whether the pod has metrics: it runs on a node.
func reported(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
}

// simulatedReady reports whether n is a simulated node that is Ready:
// one whose kubelet would answer a scrape.
func simulatedReady(n *corev1.Node) bool {
	if n.Labels[nodesim.InstanceTypeLabel] != nodesim.InstanceType {
		return false
	}
	return slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
}

func (s *Server) podMetrics(p *corev1.Pod, ts metav1.Time) metricsv1beta1.PodMetrics {
	return metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, CreationTimestamp: ts},
		Timestamp:  ts, Window: metav1.Duration{Duration: s.o.Window},
		Containers: podUsage(p, int64(s.o.UsagePercent)),
	}
}

// byNode groups pods by the node they are bound to.
func byNode(pods []*corev1.Pod) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p)
		}
	}
	return out
}

// nodeMetrics is n's usage: its base and that of pods, the pods bound to
// it.
func (s *Server) nodeMetrics(n *corev1.Node, pods []*corev1.Pod, ts metav1.Time) metricsv1beta1.NodeMetrics {
	usage := corev1.ResourceList{corev1.ResourceCPU: s.o.NodeBaseCPU.DeepCopy(), corev1.ResourceMemory: s.o.NodeBaseMemory.DeepCopy()}
	for _, p := range pods {
		if reported(p) {
			sumUsage(usage, podUsage(p, int64(s.o.UsagePercent)))
		}
	}
	return metricsv1beta1.NodeMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, CreationTimestamp: ts},
		Timestamp:  ts, Window: metav1.Duration{Duration: s.o.Window}, Usage: usage,
	}
}

func (s *Server) serveNodes(w http.ResponseWriter, r *http.Request, sel labels.Selector) {
	nodes, err := s.nodes.List(sel)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	pods, err := s.pods.List(labels.Everything())
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	ts := s.sampleTime()
	bound := byNode(pods)
	list := &metricsv1beta1.NodeMetricsList{Items: []metricsv1beta1.NodeMetrics{}}
	for _, n := range nodes {
		if simulatedReady(n) {
			list.Items = append(list.Items, s.nodeMetrics(n, bound[n.Name], ts))
		}
	}
	s.write(w, r, list)
}

func (s *Server) serveNode(w http.ResponseWriter, r *http.Request, name string) {
	n, err := s.nodes.Get(name)
	if err != nil || !simulatedReady(n) {
		s.writeErr(w, r, apierrors.NewNotFound(nodeMetricsGR, name))
		return
	}
	pods, err := s.pods.List(labels.Everything())
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	m := s.nodeMetrics(n, byNode(pods)[n.Name], s.sampleTime())
	s.write(w, r, &m)
}

func (s *Server) servePods(w http.ResponseWriter, r *http.Request, namespace string, sel labels.Selector) {
	var pods []*corev1.Pod
	var err error
	if namespace == "" {
		pods, err = s.pods.List(sel)
	} else {
		pods, err = s.pods.Pods(namespace).List(sel)
	}
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	ts := s.sampleTime()
	list := &metricsv1beta1.PodMetricsList{Items: []metricsv1beta1.PodMetrics{}}
	for _, p := range pods {
		if reported(p) {
			list.Items = append(list.Items, s.podMetrics(p, ts))
		}
	}
	s.write(w, r, list)
}

func (s *Server) servePod(w http.ResponseWriter, r *http.Request, namespace, name string) {
	p, err := s.pods.Pods(namespace).Get(name)
	if err != nil || !reported(p) {
		s.writeErr(w, r, apierrors.NewNotFound(podMetricsGR, name))
		return
	}
	m := s.podMetrics(p, s.sampleTime())
	s.write(w, r, &m)
}

// write answers obj in the media type the request accepts (JSON, YAML or
// protobuf), as metrics-server does.
func (s *Server) write(w http.ResponseWriter, r *http.Request, obj runtime.Object) {
	gv := metricsv1beta1.SchemeGroupVersion
	switch obj.(type) {
	case *metav1.APIGroupList, *metav1.APIGroup, *metav1.APIResourceList:
		gv = schema.GroupVersion{Version: "v1"}
	}
	responsewriters.WriteObjectNegotiated(s.codec, negotiation.DefaultEndpointRestrictions, gv, w, r, http.StatusOK, obj, false)
}

// writeErr answers err as a Status; an error that is not one is a 500
// whose text stays in the log.
func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		s.log.Error("metrics server: request failed", "path", r.URL.Path, "err", err)
		err = apierrors.NewInternalError(errors.New("reading the metrics failed"))
	}
	responsewriters.ErrorNegotiated(err, s.codec, schema.GroupVersion{Version: "v1"}, w, r)
}
