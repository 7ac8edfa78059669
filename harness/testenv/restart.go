package testenv

import (
	"path/filepath"
	"syscall"
	"time"
)

// This file holds what a chaos harness needs beyond the tests' own use:
// servers that keep their data when they are stopped and started again.

// NewPersistentTemporal starts a dev server whose state is kept in a SQLite
// file under dir (its log goes there too), so that a Kill and Start keep
// every workflow, as a restarted Temporal service does. Stop removes dir.
func NewPersistentTemporal(dir string) (*Temporal, error) {
	return startTemporal(dir, "--db-filename", filepath.Join(dir, "temporal.db"))
}

// Kill kills the server with SIGKILL (its persisted state, if any, stays).
func (tp *Temporal) Kill() { tp.proc.Kill() }

// Start starts the server again on the same ports and waits until it
// answers with the search attributes registered.
func (tp *Temporal) Start() error {
	if err := tp.proc.Start(); err != nil {
		return err
	}
	return tp.waitReady()
}

// Running reports whether the server process is alive.
func (tp *Temporal) Running() bool { return tp.proc.Running() }

// Shutdown stops the cluster with a fast shutdown (SIGINT: open
// transactions are rolled back, committed ones are kept), keeping its data
// for Start. It falls back to SIGKILL after a grace period.
func (pg *Postgres) Shutdown() {
	if !pg.proc.signal(syscall.SIGINT, 20*time.Second) {
		pg.proc.Kill()
	}
}

// Start starts a cluster stopped by Shutdown again on the same port and
// waits until it accepts connections.
func (pg *Postgres) Start() error {
	if err := pg.proc.Start(); err != nil {
		return err
	}
	return pg.waitReady()
}

// Running reports whether the postmaster is alive.
func (pg *Postgres) Running() bool { return pg.proc.Running() }
