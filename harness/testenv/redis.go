package testenv

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a redis-server started for one test; it can be stopped and
// started again on the same port to test degradation and recovery.
type Redis struct {
	// Addr is host:port.
	Addr string
	// URL is the redis:// URL of database 0.
	URL  string
	proc *Process
}

// StartRedis starts a private redis-server (no persistence) for t and stops it
// at the end of the test.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	r, err := NewRedis(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// NewRedis starts a redis-server with its files in dir.
func NewRedis(dir string) (*Redis, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	proc, err := StartProcess("redis", filepath.Join(dir, "redis.log"), []string{
		"redis-server", "--port", itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--protected-mode", "no",
	}, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("start redis (apt-get install -y redis-server?): %w", err)
	}
	r := &Redis{Addr: addr, URL: "redis://" + addr + "/0", proc: proc}
	if err := r.waitReady(); err != nil {
		proc.Kill()
		return nil, err
	}
	return r, nil
}

func (r *Redis) waitReady() error {
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	if err := WaitFor(context.Background(), 15*time.Second, func(ctx context.Context) error {
		return c.Ping(ctx).Err()
	}); err != nil {
		return fmt.Errorf("redis on %s not ready: %w\n%s", r.Addr, err, r.proc.Log())
	}
	return nil
}

// Pid returns the process id of the server (a new one after Restart).
func (r *Redis) Pid() int { return r.proc.Pid() }

// Client returns a new client of the server; the caller closes it.
func (r *Redis) Client() *redis.Client { return redis.NewClient(&redis.Options{Addr: r.Addr}) }

// Stop stops the server (its data is lost).
func (r *Redis) Stop() { r.proc.Stop() }

// Kill kills the server with SIGKILL.
func (r *Redis) Kill() { r.proc.Kill() }

// Restart starts the server again on the same port, empty.
func (r *Redis) Restart() error {
	if err := r.proc.Start(); err != nil {
		return err
	}
	return r.waitReady()
}

// Running reports whether the server process is alive.
func (r *Redis) Running() bool { return r.proc.Running() }
