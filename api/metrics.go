package api

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// newMetrics registers the transport's collectors on reg (reusing ones
// already registered): the answers by status, and the confirms' time by
// status. The use cases count their own (package gateway).
func newMetrics(reg prometheus.Registerer) (*prometheus.CounterVec, *prometheus.HistogramVec, error) {
	responses := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oncegate_responses_total",
		Help: "Answers of the gateway, by status.",
	}, []string{"status"})
	confirm := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "oncegate_confirm_duration_seconds",
		Help:    "Time to answer a confirm, by the answer's status.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"status"})
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(responses); err != nil {
		if !errors.As(err, &are) {
			return nil, nil, fmt.Errorf("register metrics: %w", err)
		}
		responses = are.ExistingCollector.(*prometheus.CounterVec)
	}
	if err := reg.Register(confirm); err != nil {
		if !errors.As(err, &are) {
			return nil, nil, fmt.Errorf("register metrics: %w", err)
		}
		confirm = are.ExistingCollector.(*prometheus.HistogramVec)
	}
	return responses, confirm, nil
}
