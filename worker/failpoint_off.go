//go:build !failpoint

package worker

// failpointsCompiled: this worker was built without -tags failpoint, as
// every production build is: ONCEGATE_FAILPOINT is refused at start.
const failpointsCompiled = false

// crashNow is never reached without -tags failpoint (ConfigFromEnv refuses
// ONCEGATE_FAILPOINT).
func crashNow() {}
