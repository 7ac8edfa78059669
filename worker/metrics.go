package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/internal/listen"
)

// DefaultMetricsURL is where the worker serves /metrics when
// WORKER_METRICS_URL is unset.
const DefaultMetricsURL = "http://127.0.0.1:9091/metrics"

// stateAgesTimeout bounds the truth query of one scrape.
const stateAgesTimeout = 5 * time.Second

// StateAger reads the non-terminal states' counts and oldest ages.
type StateAger interface {
	// StateAges counts IN_FLIGHT and NEEDS_REVIEW records by action.
	StateAges(ctx context.Context) ([]pgstore.StateAge, error)
}

// truthCollector exports, at each scrape, how many operations are
// IN_FLIGHT and NEEDS_REVIEW per action and how long the oldest waits.
type truthCollector struct {
	truth  StateAger
	now    func() time.Time
	count  *prometheus.Desc
	oldest *prometheus.Desc
	up     *prometheus.Desc
}

// NewTruthCollector returns the collector of oncegate_operations and
// oncegate_operation_oldest_age_seconds (labels state and action).
func NewTruthCollector(truth StateAger) prometheus.Collector {
	return &truthCollector{
		truth: truth,
		now:   time.Now,
		count: prometheus.NewDesc("oncegate_operations",
			"Operations in a non-terminal state (IN_FLIGHT, NEEDS_REVIEW) in the truth, by state and action.",
			[]string{"state", "action"}, nil),
		oldest: prometheus.NewDesc("oncegate_operation_oldest_age_seconds",
			"How long the oldest operation in the state has been in it (since updated_at), by state and action.",
			[]string{"state", "action"}, nil),
		up: prometheus.NewDesc("oncegate_truth_scrape_success",
			"1 when the truth answered the metrics query of this scrape.", nil, nil),
	}
}

// Describe sends the descriptors.
func (c *truthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.count
	ch <- c.oldest
	ch <- c.up
}

// Collect queries the truth.
func (c *truthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), stateAgesTimeout)
	defer cancel()
	ages, err := c.truth.StateAges(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for _, a := range ages {
		ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(a.Count), string(a.State), a.Scope)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, c.now().Sub(a.Oldest).Seconds(), string(a.State), a.Scope)
	}
}

// NewRegistry returns a registry with the Go runtime and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// MetricsListener is the bound address the worker serves its metrics on.
type MetricsListener struct {
	ln   net.Listener
	url  string
	path string
}

// ListenMetrics binds metricsURL's host, before the worker connects to
// anything, so that a taken port stops it at once with an error naming the
// port and WORKER_METRICS_URL.
func ListenMetrics(metricsURL string) (*MetricsListener, error) {
	u, err := url.Parse(metricsURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("WORKER_METRICS_URL=%q: want a URL such as %s", metricsURL, DefaultMetricsURL)
	}
	path := u.Path
	if path == "" {
		path = "/metrics"
	}
	ln, err := listen.TCP("WORKER_METRICS_URL", metricsURL, u.Host)
	if err != nil {
		return nil, fmt.Errorf("serve metrics: %w", err)
	}
	return &MetricsListener{ln: ln, url: metricsURL, path: path}, nil
}

// Close releases the address (when Serve is never called).
func (m *MetricsListener) Close() error { return m.ln.Close() }

// Serve serves gath on the listener until ctx ends.
func (m *MetricsListener) Serve(ctx context.Context, gath prometheus.Gatherer, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.Handle(m.path, promhttp.HandlerFor(gath, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	log.Info("serving metrics", "url", m.url)
}
