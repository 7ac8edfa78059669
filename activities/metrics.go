package activities

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/oncegate/oncegate/operation"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the activities' Prometheus collectors. Labels are bounded:
// the action (from the catalog), the call, the HTTP status, the outcome;
// never an operation id.
type Metrics struct {
	downstream *prometheus.HistogramVec
	reconciled *prometheus.CounterVec
	inFlight   *prometheus.HistogramVec
	releases   *prometheus.CounterVec
}

// NewMetrics registers the activities' collectors on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		downstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "oncegate_downstream_request_duration_seconds",
			Help:    "Downstream calls of the activities, by action, call (execute, reconcile) and HTTP status (error when no answer).",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"action", "call", "status"}),
		reconciled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oncegate_reconcile_answers_total",
			Help: "Answers of the status endpoint during reconciliation, by action and answer (found, not_found, error).",
		}, []string{"action", "answer"}),
		inFlight: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "oncegate_in_flight_duration_seconds",
			Help:    "Time from the truth claim to the recorded terminal outcome, by action and final state.",
			Buckets: []float64{.1, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400},
		}, []string{"action", "state"}),
	}
	m.releases = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oncegate_budget_releases_total",
		Help: "Finalized outcomes that release the operation's budget reservation (a failure that proves nothing was executed, or an operator's failed decision), by action and failure kind; an activity retry may count one twice.",
	}, []string{"action", "failure_kind"})
	for _, c := range []prometheus.Collector{m.downstream, m.reconciled, m.inFlight, m.releases} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("register activity metrics: %w", err)
			}
		}
	}
	return m, nil
}

// observeDownstream records one downstream call; status 0 is "error".
func (m *Metrics) observeDownstream(action, call string, status int, took time.Duration) {
	if m == nil {
		return
	}
	label := "error"
	if status > 0 {
		label = strconv.Itoa(status)
	}
	m.downstream.WithLabelValues(action, call, label).Observe(took.Seconds())
}

// observeRelease records a finalized outcome that releases the budget reservation.
func (m *Metrics) observeRelease(action string, kind operation.FailureKind) {
	if m == nil {
		return
	}
	m.releases.WithLabelValues(action, string(kind)).Inc()
}

// observeReconcile records one reconciliation answer.
func (m *Metrics) observeReconcile(action, answer string) {
	if m == nil {
		return
	}
	m.reconciled.WithLabelValues(action, answer).Inc()
}

// observeInFlight records the time an operation spent before its outcome.
func (m *Metrics) observeInFlight(action, state string, claimedAt time.Time) {
	if m == nil || claimedAt.IsZero() {
		return
	}
	m.inFlight.WithLabelValues(action, state).Observe(time.Since(claimedAt).Seconds())
}
