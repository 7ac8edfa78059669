//go:build failpoint

package api

import (
	"os"
	"syscall"
)

// failpointsCompiled: this gateway was built with -tags failpoint (the crash
// tests build it so); production builds are not.
const failpointsCompiled = true

// crashNow kills this process as `kill -9` would: no deferred function, no
// graceful shutdown, no answer to the caller. Only a configured failpoint
// calls it.
func crashNow() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is delivered asynchronously; never go on
}
