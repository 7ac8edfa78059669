package gateway

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncegate/oncegate/internal/watch"
)

// metrics are the service's Prometheus collectors (the transport counts
// its answers and times its confirms itself).
type metrics struct {
	security  *prometheus.CounterVec
	claims    *prometheus.CounterVec
	webhooks  *prometheus.CounterVec
	approvals *prometheus.CounterVec

	reservations  *prometheus.CounterVec
	limitRefusals *prometheus.CounterVec
	rateLimited   *prometheus.CounterVec
	rateFailOpen  *prometheus.CounterVec
	limitResets   *prometheus.CounterVec
	// waits counts the waits for an outcome by how they ended (waitEnds).
	waits *prometheus.CounterVec
	watch watch.Metrics
}

// How a wait for an operation's outcome ended: the labels of
// oncegate_confirm_waits_total.
const (
	// waitByFeed: the outcome feed told the outcome the fast path recorded.
	waitByFeed = "feed"
	// waitByWorkflow: the workflow's result was the outcome.
	waitByWorkflow = "workflow"
	// waitByStore: no outcome within the wait; the store's record answered.
	waitByStore = "store"
)

// waitEnds are the labels of oncegate_confirm_waits_total.
var waitEnds = []string{waitByFeed, waitByWorkflow, waitByStore}

// newMetrics registers the collectors on reg (reusing ones already registered).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		security: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oncegate_security_events_total",
			Help: "Security events seen by the gateway, by kind (every kind of gateway.SecurityEventKinds).",
		}, []string{"kind"}),
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
	m.reservations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oncegate_budget_reservations_total",
		Help: "Amounts reserved of a subject's budgets with a claim, by currency (one per operation claimed with windows to fit).",
	}, []string{"currency"})
	m.limitRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oncegate_limit_refusals_total",
		Help: "Confirms refused limit_exceeded, by budget and window.",
	}, []string{"limit", "window"})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oncegate_rate_limited_total",
		Help: "Requests refused rate_limited, by kind (preview, confirm).",
	}, []string{"kind"})
	m.rateFailOpen = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oncegate_rate_limiter_fail_open_total",
		Help: "Requests let through without a rate check because the limiter (Redis) could not answer, by kind.",
	}, []string{"kind"})
	m.limitResets = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oncegate_limit_resets_total",
		Help: "Operators' resets of a subject's budget windows (oncegate-ops limits reset), by operator.",
	}, []string{"operator"})
	m.waits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oncegate_confirm_waits_total",
		Help: "Waits for an operation's outcome (one per watcher, shared by the concurrent confirms of the operation), by how they ended: feed (the fast path's announcement, ONCEGATE_OUTCOME_FEED), workflow (the workflow's result), store (no outcome within ONCEGATE_CONFIRM_WAIT: the store's record answered).",
	}, []string{"by"})
	var err error
	if m.security, err = register(reg, m.security); err != nil {
		return nil, err
	}
	// Every kind is exported from the start, at 0, so that an alert rule on
	// a kind that never happened yet still has a series to watch.
	for _, k := range SecurityEventKinds {
		m.security.WithLabelValues(k.Kind)
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
	for _, c := range []**prometheus.CounterVec{&m.reservations, &m.limitRefusals, &m.rateLimited, &m.rateFailOpen, &m.limitResets, &m.waits} {
		if *c, err = register(reg, *c); err != nil {
			return nil, err
		}
	}
	for _, by := range waitEnds {
		m.waits.WithLabelValues(by)
	}
	for _, k := range []string{"preview", "confirm"} {
		m.rateLimited.WithLabelValues(k)
		m.rateFailOpen.WithLabelValues(k)
	}
	if m.watch, err = watchMetrics(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// watchMetrics registers the watchers' collectors (reusing ones already
// registered).
func watchMetrics(reg prometheus.Registerer) (watch.Metrics, error) {
	counter := func(name, help string) (prometheus.Counter, error) {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				if existing, ok := are.ExistingCollector.(prometheus.Counter); ok {
					return existing, nil
				}
			}
			return nil, fmt.Errorf("register metrics: %w", err)
		}
		return c, nil
	}
	var m watch.Metrics
	var err error
	active := prometheus.NewGauge(prometheus.GaugeOpts{Name: "oncegate_watchers",
		Help: "Operations whose outcome the gateway waits for now (each on the outcome feed or a Temporal long poll)."})
	if err := reg.Register(active); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return m, fmt.Errorf("register metrics: %w", err)
		}
		active, _ = are.ExistingCollector.(prometheus.Gauge)
	}
	m.Active = active
	if m.Started, err = counter("oncegate_watchers_started_total", "Watchers started: each is one wait on one operation's workflow result."); err != nil {
		return m, err
	}
	if m.Shared, err = counter("oncegate_watch_shared_total", "Confirms whose wait for the outcome was shared with concurrent calls of the same operation."); err != nil {
		return m, err
	}
	if m.Busy, err = counter("oncegate_watchers_busy_total", "Confirms answered in_progress at once because ONCEGATE_MAX_WATCHERS watchers were running."); err != nil {
		return m, err
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
