package broker

import "github.com/prometheus/client_golang/prometheus"

// metrics are the broker's Prometheus collectors. Labels are route
// patterns, service ids and outcome codes only: never a token, a code, a
// state, a client id or a URL.
type metrics struct {
	requests *prometheus.CounterVec // route, status
	flows    *prometheus.CounterVec // service, step (start|callback), outcome
	tokens   *prometheus.CounterVec // service, grant (authorization_code|refresh_token|revoke_refresh_token|revoke_access_token), outcome
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinned_broker_http_requests_total",
			Help: "HTTP requests served by the broker, by route pattern and status.",
		}, []string{"route", "status"}),
		flows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinned_broker_oauth_flows_total",
			Help: "OAuth connection steps by service, step (start, callback) and outcome code (ok on success).",
		}, []string{"service", "step", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinned_broker_token_requests_total",
			Help: "Calls to providers' token endpoints by service, grant type and outcome code (ok on success).",
		}, []string{"service", "grant", "outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.flows, m.tokens)
	}
	return m
}
