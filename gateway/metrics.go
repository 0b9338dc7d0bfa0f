package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's Prometheus series.
type metrics struct {
	requests        *prometheus.CounterVec   // code, verb, authenticator
	authnLatency    prometheus.Histogram     // seconds spent authenticating
	upstreamLatency *prometheus.HistogramVec // code; seconds to the upstream's response header
	certTimeLeft    prometheus.Histogram     // seconds a presented client cert has left
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
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
