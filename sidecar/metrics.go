package sidecar

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the sidecar's Prometheus collectors. Labels hold only
// registry names (service, op), codes, deny reasons, route patterns and
// HTTP statuses: a bounded set. A service or op a caller named that is not
// in the registry is counted as "unknown", so callers cannot grow the
// label set.
type metrics struct {
	ops      *prometheus.CounterVec
	consent  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	denials  *prometheus.CounterVec
	requests *prometheus.CounterVec
}

// Metric names, documented in docs/OPERATING.md.
const (
	metricOps      = "pinned_sidecar_ops_total"
	metricConsent  = "pinned_sidecar_consent_total"
	metricDuration = "pinned_sidecar_op_duration_seconds"
	metricInFlight = "pinned_sidecar_in_flight"
	metricDenials  = "pinned_sidecar_denials_total"
	metricRequests = "pinned_sidecar_http_requests_total"
	metricReplay   = "pinned_sidecar_replay_cache_entries"
	metricReplayMx = "pinned_sidecar_replay_cache_capacity"
)

// unknownLabel stands for a service or op not in the registry.
const unknownLabel = "unknown"

func newMetrics(reg prometheus.Registerer, replayLen func() float64, replayMax float64) *metrics {
	m := &metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricOps,
			Help: "POST /v1/ops requests by service, op and outcome (\"ok\" or the error code).",
		}, []string{"service", "op", "outcome"}),
		consent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricConsent,
			Help: "POST /v1/consent requests by service, op and outcome (\"ok\" or the error code).",
		}, []string{"service", "op", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricDuration,
			Help:    "Time to run an op in the sandbox, upstream call included, by service and op (ops that reached the engine).",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30},
		}, []string{"service", "op"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricInFlight,
			Help: "Ops and consent checks holding a concurrency slot right now.",
		}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricDenials,
			Help: "Refusals by source and reason: source \"grant\" (reason: the grant_* / access_denied / service_mismatch code), \"egress\" (reason: the host's deny reason), \"auth\" (reason: unauthorized).",
		}, []string{"source", "reason"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricRequests,
			Help: "HTTP requests by route pattern and status.",
		}, []string{"route", "status"}),
	}
	if reg != nil {
		reg.MustRegister(m.ops, m.consent, m.duration, m.inFlight, m.denials, m.requests,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: metricReplay,
				Help: "Grant nonces held by the replay cache (expired ones until the next grant).",
			}, replayLen),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: metricReplayMx,
				Help: "The replay cache's bound; at it, new grants are refused with busy.",
			}, func() float64 { return replayMax }),
		)
	}
	return m
}
