package regsync

import "github.com/prometheus/client_golang/prometheus"

// metrics are the sync job's collectors: outcomes, times, the version and
// digest served. A digest is a public content hash, never a secret.
type metrics struct {
	syncs       *prometheus.CounterVec // outcome
	lastAttempt prometheus.Gauge
	lastSuccess prometheus.Gauge
	version     prometheus.Gauge
	digest      *prometheus.GaugeVec // digest
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinned_broker_registry_syncs_total",
			Help: "Registry snapshot syncs by outcome: ok, unchanged, fetch_error, bad_signature, malformed, tampered, invalid_manifest, rolled_back.",
		}, []string{"outcome"}),
		lastAttempt: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pinned_broker_registry_last_sync_timestamp_seconds",
			Help: "Unix time of the last registry sync attempt, whatever its outcome.",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pinned_broker_registry_last_success_timestamp_seconds",
			Help: "Unix time the served registry snapshot was fetched and verified.",
		}),
		version: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pinned_broker_registry_snapshot_version",
			Help: "Version of the registry snapshot served at GET /registry (0 before the first good sync).",
		}),
		digest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pinned_broker_registry_snapshot_info",
			Help: "1 for the digest of the registry snapshot served at GET /registry.",
		}, []string{"digest"}),
	}
	if reg != nil {
		reg.MustRegister(m.syncs, m.lastAttempt, m.lastSuccess, m.version, m.digest)
	}
	return m
}

// Collectors returns the sync job's Prometheus collectors, for a caller
// that registers them itself (package broker, on its own registry).
func (s *Syncer) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.m.syncs, s.m.lastAttempt, s.m.lastSuccess, s.m.version, s.m.digest}
}
