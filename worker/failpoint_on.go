//go:build failpoint

package worker

import (
	"os"
	"syscall"
)

// failpointsCompiled: this worker was built with -tags failpoint (the crash
// tests build it so); production builds are not.
const failpointsCompiled = true

// crashNow kills this process as `kill -9` would: no deferred function, no
// graceful shutdown, nothing more sent to Temporal. Only a configured
// failpoint calls it.
func crashNow() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is delivered asynchronously; never go on
}
