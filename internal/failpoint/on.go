//go:build failpoint

package failpoint

import (
	"os"
	"syscall"
)

// Compiled: this binary was built with -tags failpoint (the crash tests
// build the gateway and the worker so); production builds are not.
const Compiled = true

// Crash kills this process as `kill -9` would: no deferred function, no
// graceful shutdown, no answer to a caller, nothing more sent to Temporal.
// Only a configured failpoint calls it.
func Crash() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is delivered asynchronously; never go on
}
