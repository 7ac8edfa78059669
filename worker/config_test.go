package worker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/envconfig"
)

func TestConfigFromEnv(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x", "REDIS_URL": "redis://x"}
	c, err := ConfigFromEnv(base)
	require.NoError(t, err)
	assert.Equal(t, "oncegate", c.Temporal.TaskQueue, "the tag's default")
	assert.Equal(t, DefaultMetricsURL, c.MetricsURL, "the tag's default is the constant")
	assert.Equal(t, 10*time.Minute, c.ReapInterval)
	assert.Equal(t, 30*time.Second, c.StopTimeout)
	assert.Equal(t, "127.0.0.1:7233", c.Temporal.Address)
	o := c.Options()
	assert.Zero(t, o.MaxConcurrentWorkflowTaskPollers, "unset keeps the SDK's defaults")
	assert.Equal(t, 30*time.Second, o.WorkerStopTimeout)

	with := func(kv ...string) map[string]string {
		env := map[string]string{"DATABASE_URL": "postgres://x", "REDIS_URL": "redis://x"}
		for i := 0; i+1 < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	c, err = ConfigFromEnv(with(EnvPollers, "6", "ONCEGATE_REAP_INTERVAL", "0", "ONCEGATE_WORKER_STOP_TIMEOUT", "5s"))
	require.NoError(t, err)
	o = c.Options()
	assert.Equal(t, 6, o.MaxConcurrentWorkflowTaskPollers)
	assert.Equal(t, 6, o.MaxConcurrentActivityTaskPollers)
	assert.Equal(t, 5*time.Second, o.WorkerStopTimeout)
	assert.Zero(t, c.ReapInterval, "0 disables the reaper")

	for _, bad := range [][]string{
		{EnvPollers, "0", `ONCEGATE_WORKER_POLLERS="0": want a positive number`},
		{EnvPollers, "four", `ONCEGATE_WORKER_POLLERS="four"`},
		{"ONCEGATE_REAP_INTERVAL", "-1m", `ONCEGATE_REAP_INTERVAL="-1m": want a non-negative Go duration`},
		{"ONCEGATE_REAP_INTERVAL", "often", `ONCEGATE_REAP_INTERVAL="often": unable to parse duration`},
		{"ONCEGATE_WORKER_STOP_TIMEOUT", "0s", `ONCEGATE_WORKER_STOP_TIMEOUT="0s": want a positive duration`},
		{"REDIS_URL", "", "REDIS_URL (one server) or REDIS_ADDRS (Redis Cluster nodes) is required"},
		{"DATABASE_URL", "", `"DATABASE_URL" should not be empty`},
		// Tests are built without -tags failpoint, as production is.
		{"ONCEGATE_FAILPOINT", FailpointAfterFinalize, "ONCEGATE_FAILPOINT needs a worker built with -tags failpoint"},
	} {
		_, err := ConfigFromEnv(with(bad[0], bad[1]))
		assert.ErrorContains(t, err, bad[2], bad[0]+"="+bad[1])
		assert.LessOrEqual(t, strings.Count(err.Error(), bad[0]+"=\""), 1, "one error for %s=%s: %v", bad[0], bad[1], err)
	}
}

func TestEnvPollersIsTheTag(t *testing.T) {
	vars, err := envconfig.Vars[Config]()
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(vars, func(v envconfig.Var) bool { return v.Name == EnvPollers }))
}
