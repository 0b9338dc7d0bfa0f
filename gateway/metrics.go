package gateway

import (
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

// countRequest increments the request counter for one label set.
func (m *metrics) countRequest(code int, verb, authenticator string) {
	m.requestCounter(requestKey{code, verb, authenticator}).Inc()
}

// requestCounter returns the request counter for k. The counters are
// cached, so that a request costs no label hashing.
func (m *metrics) requestCounter(k requestKey) prometheus.Counter {
	m.mu.RLock()
	c := m.byLabels[k]
	m.mu.RUnlock()
	if c == nil {
		c = m.requests.WithLabelValues(strconv.Itoa(k.code), k.verb, k.authenticator)
		// The verb may point into a whole request head; keep only itself.
		k.verb = strings.Clone(k.verb)
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
		o = m.upstreamLatency.WithLabelValues(strconv.Itoa(code))
		m.mu.Lock()
		if len(m.upstreamByCode) < maxCachedLabelSets {
			m.upstreamByCode[code] = o
		}
		m.mu.Unlock()
	}
	return o
}

// maxCachedLabelSets bounds the caches: a client choosing odd verbs
// cannot grow them without limit.
const maxCachedLabelSets = 1024

type requestKey struct {
	code                int
	verb, authenticator string
}
