package activities

import "time"

// SetHeartbeatEvery shortens heartbeatEvery for a test (which must not run
// in parallel) and returns what restores it.
func SetHeartbeatEvery(d time.Duration) (restore func()) {
	old := heartbeatEvery
	heartbeatEvery = d
	return func() { heartbeatEvery = old }
}
