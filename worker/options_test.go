package worker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkworker "go.temporal.io/sdk/worker"
)

func TestOptionsFromEnv(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvPollers {
				return v
			}
			return ""
		}
	}
	got, err := OptionsFromEnv(env(""))
	require.NoError(t, err)
	assert.Equal(t, sdkworker.Options{}, got, "unset keeps the SDK's defaults")

	got, err = OptionsFromEnv(env("6"))
	require.NoError(t, err)
	assert.Equal(t, 6, got.MaxConcurrentWorkflowTaskPollers)
	assert.Equal(t, 6, got.MaxConcurrentActivityTaskPollers)

	for _, bad := range []string{"0", "-1", "four"} {
		_, err := OptionsFromEnv(env(bad))
		assert.ErrorContains(t, err, EnvPollers, bad)
	}
}
