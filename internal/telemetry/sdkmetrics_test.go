package telemetry

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// otelHandler is the SDK's OpenTelemetry handler on a reader of its own.
func otelHandler() (client.MetricsHandler, *sdkmetric.ManualReader) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{Meter: mp.Meter("test")}), r
}

// useLikeTheSDK records through h what the SDK records for a few requests
// and tasks: tags added in steps, a later tag overriding an earlier one,
// the same tagged handler and instrument asked for again on each use.
func useLikeTheSDK(h client.MetricsHandler) {
	ns := h.WithTags(map[string]string{"namespace": "default"})
	for i := range 3 {
		for _, op := range []string{"StartWorkflowExecution", "PollWorkflowTaskQueue"} {
			r := ns.WithTags(map[string]string{"operation": op})
			r.Counter("temporal_request").Inc(1)
			r.Timer("temporal_request_latency").Record(time.Duration(i+1) * time.Millisecond)
		}
		tq := ns.WithTags(map[string]string{"task_queue": "oncegate", "workflow_type": "Operation"})
		tq.Gauge("temporal_worker_task_slots_available").Update(float64(10 - i))
		tq.WithTags(map[string]string{"task_queue": "sticky"}).Counter("temporal_sticky_cache_hit").Inc(2)
		// The same tags on another handler: another tag set.
		h.WithTags(map[string]string{"namespace": "other"}).WithTags(map[string]string{"operation": "StartWorkflowExecution"}).
			Counter("temporal_request").Inc(5)
	}
}

// What the cached handler records is what the SDK's handler records,
// instrument by instrument and attribute by attribute.
func TestCachedMetricsRecordWhatTheHandlerRecords(t *testing.T) {
	t.Parallel()
	plain, plainReader := otelHandler()
	cached, cachedReader := otelHandler()
	useLikeTheSDK(plain)
	useLikeTheSDK(CachedMetrics(cached))
	var want, got metricdata.ResourceMetrics
	require.NoError(t, plainReader.Collect(context.Background(), &want))
	require.NoError(t, cachedReader.Collect(context.Background(), &got))
	require.Len(t, got.ScopeMetrics, 1)
	require.Len(t, got.ScopeMetrics[0].Metrics, 4)
	metricdatatest.AssertEqual(t, want.ScopeMetrics[0], got.ScopeMetrics[0], metricdatatest.IgnoreTimestamp())
}

// countingHandler counts what it is asked to make.
type countingHandler struct {
	tags        map[string]string
	withTags    *int
	instruments map[string]int
}

func (h countingHandler) WithTags(tags map[string]string) client.MetricsHandler {
	*h.withTags++
	merged := map[string]string{}
	for k, v := range h.tags {
		merged[k] = v
	}
	for k, v := range tags {
		merged[k] = v
	}
	return countingHandler{tags: merged, withTags: h.withTags, instruments: h.instruments}
}

func (h countingHandler) Counter(name string) client.MetricsCounter {
	h.instruments[fmt.Sprint(h.tags, name)]++
	return client.MetricsNopHandler.Counter(name)
}

func (h countingHandler) Gauge(name string) client.MetricsGauge {
	h.instruments[fmt.Sprint(h.tags, name)]++
	return client.MetricsNopHandler.Gauge(name)
}

func (h countingHandler) Timer(name string) client.MetricsTimer {
	h.instruments[fmt.Sprint(h.tags, name)]++
	return client.MetricsNopHandler.Timer(name)
}

// Each tag set's handler and each of its instruments is made once; a new
// tag set past the bound is made on every ask and not kept.
func TestCachedMetricsMakeEachOnce(t *testing.T) {
	t.Parallel()
	withTags, instruments := 0, map[string]int{}
	h := CachedMetrics(countingHandler{withTags: &withTags, instruments: instruments})
	for range 5 {
		useLikeTheSDK(h)
	}
	assert.Equal(t, 7, withTags, "two namespaces, three operations, the task queue and the sticky queue")
	assert.Len(t, instruments, 7)
	for k, n := range instruments {
		assert.Equal(t, 1, n, k)
	}

	// Past the bound: made on every ask, not kept.
	c := h.(*cachedMetrics)
	for i := c.tagSets.n.Load(); i < MaxCachedTagSets; i++ {
		h.WithTags(map[string]string{"filler": fmt.Sprint(i)})
	}
	before := withTags
	for range 3 {
		h.WithTags(map[string]string{"one": "more"}).Counter("c").Inc(1)
	}
	assert.Equal(t, before+3, withTags)
	assert.EqualValues(t, MaxCachedTagSets, c.tagSets.n.Load())
}

// A tag set's key names it alone: no two sets share one.
func TestTagsKey(t *testing.T) {
	t.Parallel()
	sets := []map[string]string{
		nil, {"a": "b"}, {"ab": ""}, {"a": "", "b": ""}, {"a": "1:b"}, {"a": "1", "b": ""}, {"a": "b", "c": "d"}, {"a": "bc", "": "d"},
	}
	seen := map[string]int{}
	for i, tags := range sets {
		k := tagsKey(tags)
		if j, dup := seen[k]; dup {
			t.Errorf("sets %d and %d share the key %q", j, i, k)
		}
		seen[k] = i
	}
	assert.Equal(t, tagsKey(map[string]string{"x": "1", "y": "2"}), tagsKey(map[string]string{"y": "2", "x": "1"}))
}

// The SDK's sequence of asks and records, through the SDK's handler alone
// and through the cache.
func BenchmarkSDKMetrics(b *testing.B) {
	for name, wrap := range map[string]func(client.MetricsHandler) client.MetricsHandler{
		"handler": func(h client.MetricsHandler) client.MetricsHandler { return h },
		"cached":  CachedMetrics,
	} {
		b.Run(name, func(b *testing.B) {
			h, _ := otelHandler()
			h = wrap(h)
			b.ReportAllocs()
			for b.Loop() {
				useLikeTheSDK(h)
			}
		})
	}
}
