package sidecar

import (
	"runtime"

	hostapi "github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/sidecar/api"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/elevenmessenger/pinned/internal/rotate"
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
	// stateDuration and stateErrors time and count the state store's
	// operations (record, forget, lock, unlock, grace, put_grace, ping).
	stateDuration *prometheus.HistogramVec
	stateErrors   *prometheus.CounterVec
	// research counts research sessions by stop reason or error code;
	// researchSteps their tool calls by service, op and outcome.
	research      *prometheus.CounterVec
	researchSteps *prometheus.CounterVec
	// flowRefused counts calls refused as cross-service flows, by
	// surface (research, mcp) and the services the value came from and
	// was to go to.
	flowRefused *prometheus.CounterVec
	// auditErrors counts audit records that could not be written.
	auditErrors prometheus.Counter
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
	metricAdopted  = "pinned_sidecar_token_refresh_adopted_total"
	metricStateDur = "pinned_sidecar_state_duration_seconds"
	metricStateErr = "pinned_sidecar_state_errors_total"
	metricResearch = "pinned_sidecar_research_total"
	metricResSteps = "pinned_sidecar_research_steps_total"
	metricFlow     = "pinned_sidecar_flow_refused_total"
	metricAuditErr = "pinned_sidecar_audit_errors_total"
	metricBuild    = "pinned_build_info"
)

// unknownLabel stands for a service or op not in the registry.
const unknownLabel = "unknown"

// replayGauges is what the in-memory store tells about its replay cache.
type replayGauges interface {
	ReplayLen() int
	ReplayMax() int
}

func newMetrics(reg prometheus.Registerer, store api.Store) *metrics {
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
		stateDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricStateDur,
			Help:    "Time of one state store operation (record, forget, lock, unlock, grace, put_grace, ping), by operation.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
		}, []string{"op"}),
		stateErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricStateErr,
			Help: "State store operations that failed (unreachable, past the bound, an error reply), by operation; ops refused for it answered unavailable.",
		}, []string{"op"}),
		research: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricResearch,
			Help: "POST /v1/research sessions by outcome: the stop reason (end_turn, tool_calls, turns, result_bytes, wall_time) or the error code.",
		}, []string{"outcome"}),
		researchSteps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricResSteps,
			Help: "Research tool calls that reached the enforcement path, by service, op and outcome (\"ok\" or the error code).",
		}, []string{"service", "op", "outcome"}),
		flowRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricFlow,
			Help: "Calls refused before anything was sent because their args carried a value another service returned in the session (cross_service_flow), by surface (research, mcp), the service the value came from and the service it was to go to.",
		}, []string{"surface", "from", "to"}),
		auditErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricAuditErr,
			Help: "Audit records that could not be written; after the first, ops are refused with unavailable until the log is fixed and the sidecar restarted.",
		}),
	}
	m.zero()
	if reg != nil {
		reg.MustRegister(m.ops, m.consent, m.duration, m.inFlight, m.denials, m.requests, m.refreshes, m.stateDuration, m.stateErrors, m.research, m.researchSteps, m.flowRefused, m.auditErrors)
		if g, ok := store.(replayGauges); ok {
			reg.MustRegister(
				prometheus.NewGaugeFunc(prometheus.GaugeOpts{
					Name: metricReplay,
					Help: "Grant nonces held by the in-memory replay cache (expired ones until the next grant).",
				}, func() float64 { return float64(g.ReplayLen()) }),
				prometheus.NewGaugeFunc(prometheus.GaugeOpts{
					Name: metricReplayMx,
					Help: "The in-memory replay cache's bound; at it, new grants are refused with busy.",
				}, func() float64 { return float64(g.ReplayMax()) }),
			)
		}
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
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: metricAdopted,
			Help: "Refreshes not made because another replica (or a flight that just ended) had rotated the credential first: its pair was used.",
		}, func() float64 { return float64(stats().Adopted) }),
	)
}

// stateOps are the state store's operation labels (instrumented).
var stateOps = []string{"record", "forget", "lock", "unlock", "grace", "put_grace", "ping"}

// zero creates every denial and state error series at 0, so a
// dashboard's rate and an alert on any increase work before the first
// event: the grant codes, the limits, every egress deny reason, auth, and
// each state store operation.
func (m *metrics) zero() {
	for _, c := range []Code{CodeGrantInvalid, CodeGrantExpired, CodeServiceMismatch, CodeAccessDenied, CodeGrantMismatch, CodeResourceDenied, CodeGrantReplayed} {
		m.denials.WithLabelValues("grant", string(c))
	}
	for _, l := range []string{limitBot, limitGrant, limitBackoff, limitBotDay, limitGrantB} {
		m.denials.WithLabelValues("limit", l)
	}
	for _, d := range hostapi.DenyReasons() {
		m.denials.WithLabelValues("egress", string(d))
	}
	m.denials.WithLabelValues("auth", string(CodeUnauthorized))
	for _, op := range stateOps {
		m.stateErrors.WithLabelValues(op)
	}
}

// registerBuild registers pinned_build_info{version, goversion}, always 1:
// the binary's version beside its Go version.
func registerBuild(reg prometheus.Registerer, version string) {
	if reg == nil {
		return
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        metricBuild,
		Help:        "The running binary: version (pinned version) and goversion labels; always 1.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
	})
	g.Set(1)
	reg.MustRegister(g)
}
