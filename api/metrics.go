package api

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's Prometheus collectors.
type metrics struct {
	security  *prometheus.CounterVec
	responses *prometheus.CounterVec
	claims    *prometheus.CounterVec
	webhooks  *prometheus.CounterVec
	approvals *prometheus.CounterVec
	confirm   *prometheus.HistogramVec
}

// newMetrics registers the collectors on reg (reusing ones already registered).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		security: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oncegate_security_events_total",
			Help: "Security events seen by the gateway, by kind (every kind of api.SecurityEventKinds).",
		}, []string{"kind"}),
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oncegate_responses_total",
			Help: "Answers of the gateway, by status.",
		}, []string{"status"}),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oncegate_claims_total",
			Help: "Claims decided at confirm, by the claim's decision (ACQUIRED, IN_FLIGHT, DONE, FAILED, PARAM_MISMATCH).",
		}, []string{"decision"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oncegate_webhooks_total",
			Help: "Downstream webhook events, by action and result (accepted, refused).",
		}, []string{"scope", "result"}),
		approvals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oncegate_approval_events_total",
			Help: "Approval and passkey events, by event (approval_requested, approved, declined, ceremony_refused, passkey_invited, passkey_enrolled, passkey_revoked).",
		}, []string{"event"}),
	}
	m.confirm = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "oncegate_confirm_duration_seconds",
		Help:    "Time to answer a confirm, by the answer's status.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"status"})
	if err := reg.Register(m.confirm); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
		m.confirm = are.ExistingCollector.(*prometheus.HistogramVec)
	}
	var err error
	if m.security, err = register(reg, m.security); err != nil {
		return nil, err
	}
	// Every kind is exported from the start, at 0, so that an alert rule on
	// a kind that never happened yet still has a series to watch.
	for _, k := range SecurityEventKinds {
		m.security.WithLabelValues(k.Kind)
	}
	if m.responses, err = register(reg, m.responses); err != nil {
		return nil, err
	}
	if m.claims, err = register(reg, m.claims); err != nil {
		return nil, err
	}
	if m.webhooks, err = register(reg, m.webhooks); err != nil {
		return nil, err
	}
	if m.approvals, err = register(reg, m.approvals); err != nil {
		return nil, err
	}
	for _, e := range approvalEvents {
		m.approvals.WithLabelValues(e)
	}
	return m, nil
}

// register registers c, or returns the collector already registered under its name.
func register(reg prometheus.Registerer, c *prometheus.CounterVec) (*prometheus.CounterVec, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing, nil
			}
		}
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	return c, nil
}

// catalogCollector exports each action's in_flight_ttl, so that an alert
// can compare the oldest IN_FLIGHT operation's age with it.
type catalogCollector struct {
	ttl  *prometheus.Desc
	ttls map[string]float64
}

// newCatalogCollector returns the collector of oncegate_action_in_flight_ttl_seconds.
func newCatalogCollector(ttls map[string]float64) *catalogCollector {
	return &catalogCollector{ttls: ttls, ttl: prometheus.NewDesc("oncegate_action_in_flight_ttl_seconds",
		"The in_flight_ttl of each action of the catalog.", []string{"action"}, nil)}
}

// Describe sends the descriptor.
func (c *catalogCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.ttl }

// Collect sends one gauge per action.
func (c *catalogCollector) Collect(ch chan<- prometheus.Metric) {
	for action, ttl := range c.ttls {
		ch <- prometheus.MustNewConstMetric(c.ttl, prometheus.GaugeValue, ttl, action)
	}
}
