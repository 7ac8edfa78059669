package telemetry

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// SDKMetrics returns the Temporal SDK client's metrics handler (the worker's
// and the gateway's: requests and long requests by operation, polls, task
// latencies), exporting through
// OpenTelemetry into reg (series named temporal_*), and the meter
// provider to shut down at exit. The handler keeps the tagged handlers and
// instruments it hands out (CachedMetrics).
func SDKMetrics(reg prometheus.Registerer) (client.MetricsHandler, *sdkmetric.MeterProvider, error) {
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, nil, fmt.Errorf("temporal sdk metrics: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	h := temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:   mp.Meter("temporal-sdk-go"),
		OnError: func(err error) { slog.Warn("temporal sdk metric", "err", err) },
	})
	return CachedMetrics(h), mp, nil
}

// MaxCachedTagSets bounds how many tagged handlers CachedMetrics keeps;
// past it, a new tag set's handler is made on every ask, as without the
// cache. The SDK's tags (namespace, task queue, workflow and activity type,
// operation) are far fewer.
const MaxCachedTagSets = 1024

// CachedMetrics wraps h so that each tag set's handler and each of its
// instruments is made once. The SDK asks its handler for them on every
// request and every task, and the OpenTelemetry handler builds an
// attribute set and looks its instrument up again on each ask (a tenth of
// a worker's CPU under load). What is recorded is unchanged: the same
// instruments, with the same attributes, of h.
func CachedMetrics(h client.MetricsHandler) client.MetricsHandler {
	return &cachedMetrics{inner: h, tagSets: &tagSets{}}
}

// cachedMetrics is one tag set's handler and the instruments it made.
type cachedMetrics struct {
	inner client.MetricsHandler
	// key names the tag sets that made this handler, in order (WithTags's
	// cache key): equal keys, equal handlers.
	key                      string
	tagSets                  *tagSets
	counters, gauges, timers sync.Map // name → instrument of inner
}

// tagSets are every handler a CachedMetrics made, by key.
type tagSets struct {
	byKey sync.Map // key → *cachedMetrics
	n     atomic.Int64
}

var _ client.MetricsHandler = (*cachedMetrics)(nil)

// WithTags returns the handler of these tags on top of h's, made once.
func (h *cachedMetrics) WithTags(tags map[string]string) client.MetricsHandler {
	key := h.key + tagsKey(tags)
	if c, ok := h.tagSets.byKey.Load(key); ok {
		return c.(*cachedMetrics)
	}
	inner := h.inner.WithTags(tags)
	if h.tagSets.n.Load() >= MaxCachedTagSets {
		return inner
	}
	c, loaded := h.tagSets.byKey.LoadOrStore(key, &cachedMetrics{inner: inner, key: key, tagSets: h.tagSets})
	if !loaded {
		h.tagSets.n.Add(1)
	}
	return c.(*cachedMetrics)
}

// tagsKey is tags in a form that names them alone: sorted by key, each key
// and value preceded by its length.
func tagsKey(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteByte('{')
	for _, k := range keys {
		for _, s := range [2]string{k, tags[k]} {
			b.WriteString(strconv.Itoa(len(s)))
			b.WriteByte(':')
			b.WriteString(s)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// Counter returns the counter name of this tag set, made once.
func (h *cachedMetrics) Counter(name string) client.MetricsCounter {
	return instrument(&h.counters, name, h.inner.Counter)
}

// Gauge returns the gauge name of this tag set, made once.
func (h *cachedMetrics) Gauge(name string) client.MetricsGauge {
	return instrument(&h.gauges, name, h.inner.Gauge)
}

// Timer returns the timer name of this tag set, made once.
func (h *cachedMetrics) Timer(name string) client.MetricsTimer {
	return instrument(&h.timers, name, h.inner.Timer)
}

// Unwrap is the wrapped handler (what the SDK's and its contribs' helpers
// look for through a wrapper).
func (h *cachedMetrics) Unwrap() client.MetricsHandler { return h.inner }

// instrument is the instrument name in made, made by newInstrument on the
// first ask.
func instrument[T any](made *sync.Map, name string, newInstrument func(string) T) T {
	if v, ok := made.Load(name); ok {
		return v.(T)
	}
	v, _ := made.LoadOrStore(name, newInstrument(name))
	return v.(T)
}
