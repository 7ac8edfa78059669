package worker

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/internal/envconfig"
	"github.com/oncegate/oncegate/internal/failpoint"
	"github.com/oncegate/oncegate/internal/pprofserver"
	"github.com/oncegate/oncegate/internal/storeconn"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/internal/temporalconn"
)

// EnvPollers is the variable of Config.Pollers, for the programs that start
// a worker with a number of pollers (a test asserts it is the tag's name).
const EnvPollers = "ONCEGATE_WORKER_POLLERS"

// ReapLimits are the reaper's bounds of one pass (ReapBatchRows,
// ReapMaxRows); a zero field takes pgstore.DefaultReapLimits.
func (c Config) ReapLimits() pgstore.ReapLimits {
	return pgstore.ReapLimits{BatchRows: c.ReapBatchRows, MaxRows: c.ReapMaxRows}
}

// Config is the worker's configuration (ARCHITECTURE.md, Configuration),
// parsed from the environment by ConfigFromEnv.
type Config struct {
	// Config names the PostgreSQL truth (DATABASE_URL, required) and the
	// Redis fast path (REDIS_URL, or REDIS_ADDRS for Redis Cluster nodes).
	storeconn.Config
	// Temporal is where and how the Temporal client connects
	// (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TLS*).
	Temporal temporalconn.Config
	// Pprof serves the runtime profiles when set (ONCEGATE_PPROF_ADDR).
	Pprof pprofserver.Config
	// Telemetry exports traces when an OTLP endpoint is set.
	Telemetry telemetry.Config
	// MetricsURL is where Prometheus metrics are served (DefaultMetricsURL).
	MetricsURL string `env:"WORKER_METRICS_URL" envDefault:"http://127.0.0.1:9091/metrics"`
	// ReapInterval is how often expired terminal truth records are
	// deleted; 0 disables the reaper.
	ReapInterval time.Duration `env:"ONCEGATE_REAP_INTERVAL" envDefault:"10m"`
	// ReapBatchRows is how many rows one reaper DELETE removes at most,
	// each batch its own short transaction; unset or 0:
	// pgstore.DefaultReapLimits.
	ReapBatchRows int `env:"ONCEGATE_REAP_BATCH_ROWS"`
	// ReapMaxRows is how many rows of each table one reaper pass removes at
	// most; the rest waits for the next pass. Unset or 0:
	// pgstore.DefaultReapLimits.
	ReapMaxRows int `env:"ONCEGATE_REAP_MAX_ROWS"`
	// StopTimeout is how long running activities may finish at SIGTERM:
	// longer than a downstream call's timeout in the dev catalog.
	StopTimeout time.Duration `env:"ONCEGATE_WORKER_STOP_TIMEOUT" envDefault:"30s"`
	// Pollers is the number of pollers per task kind (workflow tasks and
	// activity tasks); nil, the Temporal SDK's defaults apply.
	Pollers *int `env:"ONCEGATE_WORKER_POLLERS"`
	// Failpoint makes the worker kill itself at a named point, for crash
	// tests only (ONCEGATE_FAILPOINT, in a worker built with -tags
	// failpoint). FailpointAfterFinalize: right after Finalize recorded an
	// outcome; FailpointAfterExecuteFinalized: right after the Execute
	// activity finalized a DONE outcome; FailpointBrokenLostReply breaks
	// the worker on purpose. Empty in every real deployment.
	Failpoint string `env:"ONCEGATE_FAILPOINT"`
	// Versioning is the worker's part in a rollout: its Worker Versioning
	// deployment version and the workflow changes it holds back.
	Versioning
}

// FailpointAfterFinalize kills the worker with SIGKILL right after the
// Finalize activity recorded the outcome, before the workflow task that ran
// it as a local activity completed: its marker is never recorded.
const FailpointAfterFinalize = "after_finalize"

// FailpointAfterExecuteFinalized kills the worker with SIGKILL right after
// the Execute activity finalized a DONE outcome itself
// (operation.Input.ExecuteFinalizes), before its completion reaches
// Temporal: the activity times out and runs again.
const FailpointAfterExecuteFinalized = "after_execute_finalized"

// FailpointBrokenLostReply is no crash but a deliberately broken worker,
// for the tests that prove the history checker (harness/history) and the
// soak catch one: an Execute whose downstream reply was lost (an unknown
// outcome: the downstream may have executed it) is reported as the
// downstream's definite refusal, so the operation ends "failed,
// downstream_refused" — nothing executed — although it may have.
const FailpointBrokenLostReply = "broken_lost_reply_refused"

// ConfigFromEnv reads the configuration from environ (envconfig.OS() in
// main) and loads the Temporal TLS files; every problem is reported at once.
func ConfigFromEnv(environ map[string]string) (Config, error) {
	c, err := envconfig.Parse[Config](environ)
	errs := []error{err, c.Config.Validate(), c.Temporal.Load(), c.Versioning.Validate(),
		envconfig.Positive(environ, "ONCEGATE_WORKER_STOP_TIMEOUT", c.StopTimeout)}
	if c.ReapInterval < 0 {
		errs = append(errs, fmt.Errorf("ONCEGATE_REAP_INTERVAL=%q: want a non-negative Go duration such as 10m, or 0 to disable",
			environ["ONCEGATE_REAP_INTERVAL"]))
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"ONCEGATE_REAP_BATCH_ROWS", c.ReapBatchRows}, {"ONCEGATE_REAP_MAX_ROWS", c.ReapMaxRows}} {
		if v.n < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a non-negative number of rows, or 0 for the default", v.name, environ[v.name]))
		}
	}
	if c.Failpoint != "" && !failpoint.Compiled {
		errs = append(errs, errors.New("ONCEGATE_FAILPOINT needs a worker built with -tags failpoint (the crash tests build it so): unset it"))
	}
	// A malformed value leaves a zero behind, already reported by Parse.
	if v := strings.TrimSpace(environ[EnvPollers]); c.Pollers != nil && *c.Pollers < 1 && v == strconv.Itoa(*c.Pollers) {
		errs = append(errs, fmt.Errorf("%s=%q: want a positive number of pollers such as 4", EnvPollers, v))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("worker config: %w", err)
	}
	return c, nil
}

// Options returns the SDK worker's options: the pollers, the stop timeout
// and the versioning.
func (c Config) Options() sdkworker.Options {
	o := sdkworker.Options{}
	if c.Pollers != nil {
		o = PollerOptions(*c.Pollers)
	}
	o.WorkerStopTimeout = c.StopTimeout
	c.Versioning.apply(&o)
	return o
}

// PollerOptions returns worker options with n workflow-task and n
// activity-task pollers; n ≤ 0 leaves the SDK's defaults.
func PollerOptions(n int) sdkworker.Options {
	if n <= 0 {
		return sdkworker.Options{}
	}
	return sdkworker.Options{MaxConcurrentWorkflowTaskPollers: n, MaxConcurrentActivityTaskPollers: n}
}
