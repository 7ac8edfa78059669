package telemetry

import (
	"fmt"
	"log/slog"

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
// provider to shut down at exit.
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
	return h, mp, nil
}
