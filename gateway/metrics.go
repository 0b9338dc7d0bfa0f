package gateway

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's Prometheus series.
type metrics struct {
	requests        *prometheus.CounterVec   // code, verb, authenticator
	authnLatency    prometheus.Histogram     // seconds spent authenticating
	upstreamLatency *prometheus.HistogramVec // code; seconds to the upstream's response header
	certTimeLeft    prometheus.Histogram     // seconds a presented client cert has left

	mu             sync.RWMutex
	byLabels       map[requestKey]prometheus.Counter
	upstreamByCode map[int]prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		byLabels:       map[requestKey]prometheus.Counter{},
		upstreamByCode: map[int]prometheus.Observer{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubegate_gateway_requests_total",
			Help: "Requests handled, by HTTP status code, verb and the authenticator that matched.",
		}, []string{"code", "verb", "authenticator"}),
		authnLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubegate_gateway_authentication_duration_seconds",
			Help:    "Time spent authenticating a request.",
			Buckets: []float64{1e-6, 5e-6, 25e-6, 1e-4, 5e-4, 2.5e-3, 1e-2, 5e-2},
		}),
		upstreamLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kubegate_gateway_upstream_duration_seconds",
			Help:    "Time from forwarding a request to the upstream's response header, by status code.",
			Buckets: prometheus.ExponentialBuckets(1e-4, 4, 10),
		}, []string{"code"}),
		certTimeLeft: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubegate_gateway_client_certificate_expiration_seconds",
			Help: "Time left on the client certificates presented, in seconds.",
			Buckets: []float64{0, 1800, 3600, 7200, 21600, 43200, 86400, 172800, 345600,
				604800, 2592000, 7776000, 15552000, 31104000},
		}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.authnLatency, m.upstreamLatency, m.certTimeLeft)
	}
	return m
}

// countRequest increments the request counter for a request with the
// given method.
func (m *metrics) countRequest(code int, method, authenticator string) {
	m.requestCounter(requestKey{code, verbLabel(method), authenticator}).Inc()
}

// verbLabel maps a request method to the verb label: the standard
// methods name themselves, anything else a client makes up is "other",
// so that clients cannot add series. The label is one of the constants,
// never the request's own string, which may point into its whole head.
func verbLabel(method string) string {
	for _, m := range standardMethods {
		if method == m {
			return m
		}
	}
	return "other"
}

var standardMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace,
}

// codeLabel is the code label: a three-digit HTTP status as text, or
// "other" for anything outside 100-599, so that neither clients nor the
// upstream can add series with odd status codes.
func codeLabel(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code)
}

// requestCounter returns the request counter for k, whose verb must come
// from verbLabel. The counters are cached, so that a request costs no
// label hashing.
func (m *metrics) requestCounter(k requestKey) prometheus.Counter {
	m.mu.RLock()
	c := m.byLabels[k]
	m.mu.RUnlock()
	if c == nil {
		// Copies of the label values: none may keep a request's memory
		// alive.
		k.verb, k.authenticator = strings.Clone(k.verb), strings.Clone(k.authenticator)
		c = m.requests.WithLabelValues(codeLabel(k.code), k.verb, k.authenticator)
		m.mu.Lock()
		if len(m.byLabels) < maxCachedLabelSets {
			m.byLabels[k] = c
		}
		m.mu.Unlock()
	}
	return c
}

// observeUpstream records the upstream's time to its response header.
func (m *metrics) observeUpstream(code int, d time.Duration) {
	m.upstreamObserver(code).Observe(d.Seconds())
}

// upstreamObserver returns the upstream latency histogram for code.
func (m *metrics) upstreamObserver(code int) prometheus.Observer {
	m.mu.RLock()
	o := m.upstreamByCode[code]
	m.mu.RUnlock()
	if o == nil {
		o = m.upstreamLatency.WithLabelValues(codeLabel(code))
		m.mu.Lock()
		if len(m.upstreamByCode) < maxCachedLabelSets {
			m.upstreamByCode[code] = o
		}
		m.mu.Unlock()
	}
	return o
}

// maxCachedLabelSets bounds the caches, whatever the labels.
const maxCachedLabelSets = 1024

type requestKey struct {
	code                int
	verb, authenticator string
}

// upstreamMetrics are the series of the gateway's upstreams, labelled by
// each upstream's host and port (docs/kubernetes-behaviour.md, J.5).
type upstreamMetrics struct {
	healthy   *prometheus.GaugeVec   // upstream
	ejections *prometheus.CounterVec // upstream, reason
	retries   *prometheus.CounterVec // upstream, reason
}

func newUpstreamMetrics() *upstreamMetrics {
	return &upstreamMetrics{
		healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubegate_gateway_upstream_healthy",
			Help: "Whether an upstream takes requests (1) or is ejected (0).",
		}, []string{"upstream"}),
		ejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubegate_gateway_upstream_ejections_total",
			Help: "Upstreams taken out of rotation, by the failure that ejected them: a connection or the health check.",
		}, []string{"upstream", "reason"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubegate_gateway_upstream_retries_total",
			Help: "Requests sent again to another upstream after this one failed, by whether the request had been sent to it.",
		}, []string{"upstream", "reason"}),
	}
}

func (m *upstreamMetrics) register(reg prometheus.Registerer) {
	reg.MustRegister(m.healthy, m.ejections, m.retries)
}
