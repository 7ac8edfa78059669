// Package testenv starts the real parts the tests run against — Redis,
// PostgreSQL, the Temporal dev server and the project's own binaries — on free
// loopback ports, with data in temporary directories, so that tests never touch
// a running `make up` stack and work on a fresh machine.
//
// Servers that are slow to start (PostgreSQL, Temporal) are shared by the
// tests of one package: call Main from TestMain so they are stopped at the end.
// Each test still gets isolated state (its own database, its own task queue).
package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is one child process started by the harness.
type Process struct {
	// Name labels the process in errors and logs.
	Name string
	// LogPath is where its stdout and stderr go.
	LogPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	args []string
	env  []string
	cred *syscall.Credential
}

// StartProcess starts name with args, its output in logPath. extraEnv is
// appended to the current environment. The process receives SIGKILL if the
// test binary dies.
func StartProcess(name, logPath string, args, extraEnv []string, cred *syscall.Credential) (*Process, error) {
	p := &Process{Name: name, LogPath: logPath, args: args, env: extraEnv, cred: cred}
	if err := p.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// Start (re)starts the process with the arguments it was created with.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	logFile, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log of %s: %w", p.Name, err)
	}
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), p.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true, Credential: p.cred}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// SetEnv replaces the extra environment used by the next Start.
func (p *Process) SetEnv(extraEnv []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.env = extraEnv
}

// Pid returns the process id of the running process.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to the process group and waits for the exit.
func (p *Process) Kill() { p.signal(syscall.SIGKILL, 10*time.Second) }

// Terminate sends SIGTERM and waits up to wait for the process to exit by
// itself, reporting whether it did (a graceful shutdown).
func (p *Process) Terminate(wait time.Duration) bool { return p.signal(syscall.SIGTERM, wait) }

// Stop sends SIGTERM, then SIGKILL after a grace period, and waits for the exit.
func (p *Process) Stop() {
	if !p.signal(syscall.SIGTERM, 10*time.Second) {
		p.signal(syscall.SIGKILL, 10*time.Second)
	}
}

func (p *Process) signal(sig syscall.Signal, wait time.Duration) bool {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return true
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-done:
		return true
	case <-time.After(wait):
		return false
	}
}

// Log returns the process's log so far, for failure messages.
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// MustFreePort is FreePort for tests.
func MustFreePort(t testing.TB) int {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// WaitFor polls check until it returns nil or the deadline passes.
func WaitFor(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %s: %w", timeout, errors.Join(ctx.Err(), last))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// RepoRoot returns the module root (the folder holding go.mod).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/oncegate/oncegate")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: go.mod of oncegate not found above the working directory")
		}
		dir = parent
	}
}

// shared holds the servers shared by the tests of one package.
var shared struct {
	mu       sync.Mutex
	stoppers []func()
}

func registerShared(stop func()) {
	shared.mu.Lock()
	shared.stoppers = append(shared.stoppers, stop)
	shared.mu.Unlock()
}

// Main runs the tests of a package and then stops the shared servers. When
// a test failed, the tail of each shared server's log is printed first.
func Main(m *testing.M) {
	code := m.Run()
	if code != 0 {
		for _, p := range sharedProcesses() {
			fmt.Fprintf(os.Stderr, "--- %s log (tail) ---\n%s\n", p.Name, p.Log())
		}
	}
	stopShared()
	os.Exit(code)
}

// stopShared stops the shared servers, the last started first.
func stopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for i := len(shared.stoppers) - 1; i >= 0; i-- {
		shared.stoppers[i]()
	}
	shared.stoppers = nil
	forgetShared()
}

// forgetShared forgets the stopped shared servers and binaries, so that a
// later use starts them anew: a benchmark command that starts one stack
// after another (cmd/bench-scale, one per size of the truth) gets a
// running PostgreSQL, Temporal dev server and binaries each time.
func forgetShared() {
	builtBinaries.once, builtBinaries.dir, builtBinaries.err = sync.Once{}, "", nil
	sharedPostgres.once, sharedPostgres.pg, sharedPostgres.err = sync.Once{}, nil, nil
	sharedTemporal.mu.Lock()
	sharedTemporal.once, sharedTemporal.tp, sharedTemporal.err = sync.Once{}, nil, nil
	sharedTemporal.mu.Unlock()
}

// sharedProcesses returns the processes of the shared servers started so far.
func sharedProcesses() []*Process {
	var out []*Process
	if sharedTemporal.tp != nil {
		out = append(out, sharedTemporal.tp.proc)
	}
	if sharedPostgres.pg != nil {
		out = append(out, sharedPostgres.pg.proc)
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }
