package telemetry

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExportingOnlyWithAnEndpoint(t *testing.T) {
	assert.False(t, Config{}.Exporting())
	assert.True(t, Config{Endpoint: "http://127.0.0.1:4318"}.Exporting())
	assert.True(t, Config{TracesEndpoint: "http://127.0.0.1:4318/v1/traces"}.Exporting())

	tp, err := NewTracerProvider(context.Background(), "test", Config{})
	require.NoError(t, err)
	require.NoError(t, tp.Shutdown(context.Background()))
}
