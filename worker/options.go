package worker

import (
	"fmt"
	"strconv"

	sdkworker "go.temporal.io/sdk/worker"
)

// EnvPollers is the environment variable that sets how many pollers the
// worker runs per task kind (workflow tasks and activity tasks); unset,
// the Temporal SDK's defaults apply.
const EnvPollers = "ONCEGATE_WORKER_POLLERS"

// PollerOptions returns worker options with n workflow-task and n
// activity-task pollers; n ≤ 0 leaves the SDK's defaults.
func PollerOptions(n int) sdkworker.Options {
	if n <= 0 {
		return sdkworker.Options{}
	}
	return sdkworker.Options{MaxConcurrentWorkflowTaskPollers: n, MaxConcurrentActivityTaskPollers: n}
}

// OptionsFromEnv returns the worker options the environment sets
// (EnvPollers), or an error naming a malformed value.
func OptionsFromEnv(getenv func(string) string) (sdkworker.Options, error) {
	v := getenv(EnvPollers)
	if v == "" {
		return sdkworker.Options{}, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return sdkworker.Options{}, fmt.Errorf("%s=%q: want a positive number of pollers such as 4", EnvPollers, v)
	}
	return PollerOptions(n), nil
}
