package host

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Metrics are the host's Prometheus collectors (Config.Metrics), made by
// NewMetrics:
//
//   - pinned_egress_denied_total{service, reason}: refused egress
//     attempts by DenyReason;
//   - pinned_egress_total{service, op, outcome}: egress attempts by
//     outcome Code ("ok" on success);
//   - pinned_upstream_body_bytes{service}: a histogram of the decoded
//     size of upstream bodies, in bytes (buckets 256 B to 16 MiB, ×4).
//
// They carry service, op and reason labels only: never a credential, an
// argument or a URL. Metrics is a prometheus.Collector of the three.
type Metrics struct {
	deniedTotal   *prometheus.CounterVec
	egressTotal   *prometheus.CounterVec
	upstreamBytes *prometheus.HistogramVec
}

// NewMetrics creates the collectors and registers them with reg (when not
// nil; it panics, as prometheus.MustRegister does, when reg already holds
// collectors of these names).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		deniedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinned_egress_denied_total",
			Help: "Egress attempts refused by the host, by service and deny reason.",
		}, []string{"service", "reason"}),
		egressTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinned_egress_total",
			Help: "Egress attempts by service, op and outcome code.",
		}, []string{"service", "op", "outcome"}),
		upstreamBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pinned_upstream_body_bytes",
			Help:    "Decoded size of upstream response bodies in bytes.",
			Buckets: prometheus.ExponentialBuckets(256, 4, 9),
		}, []string{"service"}),
	}
	if reg != nil {
		reg.MustRegister(m)
	}
	return m
}

// Describe sends the descriptors of the three collectors
// (prometheus.Collector).
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.deniedTotal.Describe(ch)
	m.egressTotal.Describe(ch)
	m.upstreamBytes.Describe(ch)
}

// Collect sends the current values of the three collectors
// (prometheus.Collector).
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.deniedTotal.Collect(ch)
	m.egressTotal.Collect(ch)
	m.upstreamBytes.Collect(ch)
}

// audit writes the one event of an egress attempt (accepted or denied):
// service, op, method, host, path template, the request target as sent
// (path and query; target is empty for a denied request, which was not
// sent), status, bytes raw and projected, duration, deny reason and, on a
// write that failed after it was sent, applied. The target is the bound
// request's (host/internal/egress: exactly what was sent) with the value of every arg
// the manifest marks secret replaced by "[redacted]"; the event never
// holds the credential or a body.
func (e *Engine) audit(ctx context.Context, p *prepared, res *Result, err *Error, status int, raw int64, start time.Time, target string) {
	log := e.logger(ctx)
	outcome := "ok"
	var deny api.DenyReason
	projected := 0
	if err != nil {
		outcome = string(err.Code)
		deny = err.Deny
	}
	if res != nil {
		projected = len(res.Data)
	}
	ev := log.Info()
	if err != nil {
		ev = log.Warn()
	}
	ev = ev.Str("event", "egress").
		Str("service", p.m.ID).
		Str("op", p.name).
		Str("method", p.op.Method).
		Str("host", p.m.Host).
		Str("path", p.op.Path).
		Int("status", status).
		Int64("bytes_raw", raw).
		Int("bytes_projected", projected).
		Float64("duration_ms", float64(time.Since(start).Microseconds())/1000).
		Str("outcome", outcome)
	if target != "" && !e.cfg.OmitTarget {
		ev = ev.Str("target", target)
	}
	if deny != "" {
		ev = ev.Str("deny", string(deny))
	}
	if err != nil && err.Applied != "" {
		ev = ev.Str("applied", string(err.Applied))
	}
	if err != nil && err.cause != nil {
		ev = ev.Str("cause", redactCause(err.cause))
	}
	ev.Msg("egress")
	if m := e.cfg.Metrics; m != nil {
		m.egressTotal.WithLabelValues(p.m.ID, p.name, outcome).Inc()
		if deny != "" {
			m.deniedTotal.WithLabelValues(p.m.ID, string(deny)).Inc()
		}
		if raw > 0 {
			m.upstreamBytes.WithLabelValues(p.m.ID).Observe(float64(raw))
		}
	}
}

// Logger returns the engine's logger (Config.Logger, or a disabled one).
// A caller that wants the host's events for one op to carry more fields
// (a request id) derives from it and attaches the result to the op's
// context with zerolog's WithContext.
func (e *Engine) Logger() zerolog.Logger { return e.log }

// logger is the logger a context carries (zerolog.Ctx: the sidecar
// attaches one with the request id), else the engine's own.
func (e *Engine) logger(ctx context.Context) *zerolog.Logger {
	if l := zerolog.Ctx(ctx); l != zerolog.Ctx(context.Background()) {
		return l
	}
	return &e.log
}

// redactCause renders an internal cause for the log. Causes come from the
// transport and the decoders, which never see the credential header; a
// *url.Error's URL is dropped because it carries argument values.
func redactCause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}
