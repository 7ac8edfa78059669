package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// Temporal is a Temporal dev server (the official CLI's start-dev) on free ports.
type Temporal struct {
	// Address is the frontend's host:port.
	Address string
	// UIURL is the Web UI's URL.
	UIURL string
	// Namespace is the namespace the tests use.
	Namespace string
	// MetricsURL is where the server serves its Prometheus metrics.
	MetricsURL string
	dir        string
	proc       *Process
}

var sharedTemporal struct {
	mu   sync.Mutex
	once sync.Once
	tp   *Temporal
	err  error
}

// SharedTemporal returns the package's shared dev server, starting it on first use.
func SharedTemporal(t testing.TB) *Temporal {
	t.Helper()
	sharedTemporal.mu.Lock()
	defer sharedTemporal.mu.Unlock()
	sharedTemporal.once.Do(func() {
		sharedTemporal.tp, sharedTemporal.err = NewTemporal()
		if sharedTemporal.err == nil {
			registerShared(func() { sharedTemporal.tp.Stop() })
		}
	})
	if sharedTemporal.err != nil {
		t.Fatal(sharedTemporal.err)
	}
	// A server that died under an earlier test must not fail every later
	// one: start a new one (its log tells what happened to the old one).
	if err := sharedTemporal.tp.healthy(); err != nil {
		t.Logf("shared Temporal dev server unhealthy (%v); starting a new one. Its log:\n%s", err, sharedTemporal.tp.proc.Log())
		old := sharedTemporal.tp
		old.Stop()
		tp, err := NewTemporal()
		if err != nil {
			t.Fatal(err)
		}
		sharedTemporal.tp = tp
	}
	return sharedTemporal.tp
}

// TemporalCLI returns the path of the Temporal CLI built into ./bin by `make`.
func TemporalCLI() (string, error) {
	if p := os.Getenv("ONCEGATE_TEMPORAL_CLI"); p != "" {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "temporal")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("testenv: %s missing: run `make bin/temporal` (or `make test`, which builds it)", p)
	}
	return p, nil
}

// DevServerDynamicConfig is the dynamic configuration of every dev server
// NewTemporal starts, as KEY=JSON_VALUE (the CLI's --dynamic-config-value):
// what scripts/stack.sh gives the dev stack's server (DEV_DYNAMIC_CONFIG
// there) and deployments/prod-local/temporal/dynamicconfig.yaml the
// production-like profile's, so that the tests run the servers users run.
//   - Eager activity execution hands a workflow task's worker the activity
//     it schedules in the task's completion when that worker polls the
//     activity's task queue, saving the activity's dispatch through matching
//     (45 ms of a first confirm's 150 on the dev server when it was
//     measured, with the queue readers below still throttled;
//     docs/benchmarks.md).
//   - One partition per task queue (the server's default is 4): with a
//     worker's few pollers, a task written to a partition no poller waits
//     on is forwarded to one that has a poller only after a delay, and a
//     first confirm among ten concurrent ones then took about 2 s instead
//     of 0.3 (answering in_progress). One partition carries far more than
//     a dev stack's load.
//   - The history queues' readers may read their shard's tasks 1000 times a
//     second, not 20 (the server's default is per shard, sized for clusters
//     of hundreds of shards; the dev server has one). At 20, a workflow
//     task waited about 30 ms for the transfer queue's reader under a
//     steady ten operations a second, and every first confirm and bare
//     workflow took 100 ms instead of 30 (docs/benchmarks.md).
//   - The search attributes are read from the server's cache, as a
//     production server reads them (the server's default), not again from
//     the database on every read (the CLI's dev default, so that one
//     created while it runs is seen at once): every upsert of a search
//     attribute, and a start that sets some, then waited about 2.5 ms for
//     that read (docs/benchmarks.md). The project's search attributes are
//     given at start (--search-attribute), written with the namespace
//     before the server serves, so the cache holds them from the first
//     read.
var DevServerDynamicConfig = []string{
	"system.enableActivityEagerExecution=true",
	"matching.numTaskqueueReadPartitions=1",
	"matching.numTaskqueueWritePartitions=1",
	"history.transferProcessorMaxPollRPS=1000",
	"history.timerProcessorMaxPollRPS=1000",
	"history.visibilityProcessorMaxPollRPS=1000",
	"system.forceSearchAttributesCacheRefreshOnRead=false",
}

// TemporalDynamicConfig holds extra dynamic configuration of the dev
// servers NewTemporal starts, after DevServerDynamicConfig (a later value
// of a key wins). Set it before the first server starts; the tests leave it
// empty.
var TemporalDynamicConfig []string

// NewTemporal starts a dev server with an in-memory store (tests need no
// history across restarts of the server, and memory is faster than a file on
// a loaded machine) and the search attributes of oncegate registered.
func NewTemporal() (*Temporal, error) {
	dir, err := os.MkdirTemp("", "oncegate-temporal-")
	if err != nil {
		return nil, err
	}
	return startTemporal(dir)
}

// startTemporal starts a dev server with its log in dir and extraArgs
// appended to its command line.
func startTemporal(dir string, extraArgs ...string) (*Temporal, error) {
	cli, err := TemporalCLI()
	if err != nil {
		return nil, err
	}
	ports := make([]int, 4)
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			return nil, err
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	args := []string{
		cli, "server", "start-dev", "--ip", "127.0.0.1",
		"--port", itoa(ports[0]), "--ui-port", itoa(ports[1]), "--http-port", itoa(ports[2]), "--metrics-port", itoa(ports[3]),
		"--search-attribute", "IdemState=Keyword", "--search-attribute", "IdemScope=Keyword", "--search-attribute", "IdemSubject=Keyword",
		"--log-level", "warn",
	}
	for _, kv := range slices.Concat(DevServerDynamicConfig, TemporalDynamicConfig) {
		args = append(args, "--dynamic-config-value", kv)
	}
	proc, err := StartProcess("temporal", filepath.Join(dir, "temporal.log"), append(args, extraArgs...), nil, nil)
	if err != nil {
		return nil, err
	}
	tp := &Temporal{Address: addr, UIURL: fmt.Sprintf("http://127.0.0.1:%d", ports[1]), Namespace: "default",
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[3]), dir: dir, proc: proc}
	if err := tp.waitReady(); err != nil {
		tp.Stop()
		return nil, err
	}
	return tp, nil
}

func (tp *Temporal) waitReady() error {
	return WaitFor(context.Background(), 90*time.Second, func(ctx context.Context) error {
		if !tp.proc.Running() {
			return fmt.Errorf("temporal exited:\n%s", tp.proc.Log())
		}
		c, err := client.Dial(client.Options{HostPort: tp.Address, Namespace: tp.Namespace, Logger: quietLogger{}})
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
		if err != nil {
			return err
		}
		// The search attributes must be visible before workflows use them.
		resp, err := c.OperatorService().ListSearchAttributes(ctx, listSearchAttributesRequest(tp.Namespace))
		if err != nil {
			return err
		}
		if _, ok := resp.GetCustomAttributes()["IdemState"]; !ok {
			return fmt.Errorf("search attribute IdemState not registered yet")
		}
		return nil
	})
}

// healthy checks that the server runs and answers.
func (tp *Temporal) healthy() error {
	if !tp.proc.Running() {
		return fmt.Errorf("process exited")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(client.Options{HostPort: tp.Address, Namespace: tp.Namespace, Logger: quietLogger{}})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return err
	}
	_, err = c.WorkflowService().DescribeNamespace(ctx, describeNamespaceRequest(tp.Namespace))
	return err
}

// Client dials the server; the client is closed at the end of the test.
func (tp *Temporal) Client(t testing.TB) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: tp.Address, Namespace: tp.Namespace, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Stop stops the server and removes its files.
func (tp *Temporal) Stop() {
	tp.proc.Stop()
	_ = os.RemoveAll(tp.dir)
}

// Pid returns the process id of the dev server.
func (tp *Temporal) Pid() int { return tp.proc.Pid() }

// LogPath is the dev server's log file (every test of the process shares
// the server, so it holds every test's traffic).
func (tp *Temporal) LogPath() string { return tp.proc.LogPath }

// WaitPolling waits up to timeout until queue has a workflow-task poller and
// an activity-task poller, that is until a worker serves it: a gateway that
// is healthy answers before its worker has connected, and a first confirm
// made then waits for a worker that is still starting. p, when not nil, is
// the worker's process and must not exit meanwhile.
func (tp *Temporal) WaitPolling(queue string, p *Process, timeout time.Duration) error {
	c, err := client.Dial(client.Options{HostPort: tp.Address, Namespace: tp.Namespace, Logger: quietLogger{}})
	if err != nil {
		return err
	}
	defer c.Close()
	return WaitFor(context.Background(), timeout, func(ctx context.Context) error {
		if p != nil && !p.Running() {
			return fmt.Errorf("%s exited", p.Name)
		}
		for _, kind := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
			resp, err := c.DescribeTaskQueue(ctx, queue, kind)
			if err != nil {
				return err
			}
			if len(resp.GetPollers()) == 0 {
				return fmt.Errorf("task queue %s has no %s poller yet", queue, kind)
			}
		}
		return nil
	})
}
