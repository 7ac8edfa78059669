//go:build !failpoint

package failpoint

// Compiled: this binary was built without -tags failpoint, as every
// production build is: the gateway and the worker refuse
// ONCEGATE_FAILPOINT at start.
const Compiled = false

// Crash is never reached without -tags failpoint (both configs refuse
// ONCEGATE_FAILPOINT).
func Crash() {}
