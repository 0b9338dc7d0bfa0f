package apiserver

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kubegate/kubegate/authz"
)

// requestMetrics are kube-apiserver's request metrics, under its names,
// help texts and labels (D.7).
type requestMetrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	handler  http.Handler
}

func newRequestMetrics(reg *prometheus.Registry) *requestMetrics {
	m := &requestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apiserver_request_duration_seconds",
			Help: "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
			// kube-apiserver's buckets, made for its latency SLOs.
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}),
		handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
	}
	reg.MustRegister(m.total, m.duration)
	return m
}

// observe records one resource request that ended with code after
// elapsed.
func (m *requestMetrics) observe(r *http.Request, ri *authz.RequestInfo, code int, elapsed time.Duration) {
	scope := metricScope(r, ri)
	verb := metricVerb(r, scope)
	dry := metricDryRun(r.URL)
	m.total.WithLabelValues(verb, dry, ri.APIGroup, ri.APIVersion, ri.Resource, ri.Subresource, scope, "apiserver", strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(verb, dry, ri.APIGroup, ri.APIVersion, ri.Resource, ri.Subresource, scope, "apiserver").Observe(elapsed.Seconds())
}

// metricScope is "resource" for one object (a create, or a list narrowed
// to one name by its field selector), "namespace" for a namespace's
// collection, else "cluster".
func metricScope(r *http.Request, ri *authz.RequestInfo) string {
	name, ns := ri.Name, ri.Namespace
	if (ri.Verb == "list" || ri.Verb == "watch") && name == "" {
		if sel, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector")); err == nil {
			name, _ = sel.RequiresExactMatch("metadata.name")
			if v, ok := sel.RequiresExactMatch("metadata.namespace"); ok && ns == "" {
				ns = v
			}
		}
	}
	switch {
	case name != "" || ri.Verb == "create":
		return "resource"
	case ns != "":
		return "namespace"
	}
	return "cluster"
}

// metricVerb is the verb label: the method, with a GET of more than one
// object LIST, a watch WATCH and a server-side apply APPLY, as
// kube-apiserver reports them.
func metricVerb(r *http.Request, scope string) string {
	verb := strings.ToUpper(r.Method)
	if verb == http.MethodHead {
		verb = http.MethodGet
	}
	if verb == http.MethodGet {
		if v := r.URL.Query()["watch"]; len(v) > 0 && v[0] != "0" && strings.ToLower(v[0]) != "false" {
			return "WATCH"
		}
		if ri, ok := authz.RequestInfoFrom(r.Context()); ok && ri.Verb == "watch" {
			return "WATCH" // the old /watch/ paths
		}
		if scope != "resource" {
			return "LIST"
		}
	}
	if verb == http.MethodPatch && r.Header.Get("Content-Type") == "application/apply-patch+yaml" {
		return "APPLY"
	}
	return verb
}

// metricDryRun is the dry_run label: "" without the parameter, else its
// sorted distinct values, or "invalid".
func metricDryRun(u *url.URL) string {
	vs := u.Query()["dryRun"]
	if len(vs) == 0 {
		return ""
	}
	seen := map[string]bool{}
	var out []string
	for _, v := range vs {
		if v != "All" {
			return "invalid"
		}
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// withRequestMetrics records the resource requests that next serves.
func (s *Server) withRequestMetrics(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ri, _ := authz.RequestInfoFrom(r.Context())
		if ri == nil || !ri.IsResourceRequest {
			next(w, r)
			return
		}
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next(sw, r)
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		s.metrics.observe(r, ri, code, time.Since(start))
	}
}
