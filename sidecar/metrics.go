package sidecar

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/elevenmessenger/pinned/sidecar/rotate"
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
	// refreshes counts calls to the broker's refresh (each one a refresh
	// at the provider), by service and outcome.
	refreshes *prometheus.CounterVec
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
	metricRefresh  = "pinned_sidecar_token_refreshes_total"
	metricGrace    = "pinned_sidecar_token_grace_hits_total"
	metricShared   = "pinned_sidecar_token_refresh_shared_total"
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
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricRefresh,
			Help: "Token refreshes sent to the broker, by service and outcome: \"ok\", \"retryable\" (timeout, 5xx, rate limit, network), \"reconnect\" (invalid_grant) or \"failed\" (a configuration problem).",
		}, []string{"service", "outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.ops, m.consent, m.duration, m.inFlight, m.denials, m.requests, m.refreshes,
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

// registerRotation registers the rotator's counters (zero when rotation is
// off).
func (m *metrics) registerRotation(reg prometheus.Registerer, rot *rotate.Rotator) {
	if reg == nil {
		return
	}
	stats := func() rotate.Stats {
		if rot == nil {
			return rotate.Stats{}
		}
		return rot.Stats()
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: metricGrace,
			Help: "Ops that arrived with a pair rotated within the grace window and got the fresh pair instead of refreshing again.",
		}, func() float64 { return float64(stats().GraceHits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: metricShared,
			Help: "Ops that waited on a refresh of the same credential together with other ops (single flight; the op that started it included).",
		}, func() float64 { return float64(stats().Shared) }),
	)
}
