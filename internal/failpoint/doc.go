// Package failpoint is the one switch of the crash tests' failpoints
// (ONCEGATE_FAILPOINT): whether this binary was built with them (-tags
// failpoint) and the crash a configured failpoint causes. The gateway and
// the worker name their own points.
package failpoint
