package benche2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/internal/envconfig"
	"github.com/oncegate/oncegate/internal/temporalconn"
	"github.com/oncegate/oncegate/worker"
)

// BareInput is the bare workflow's input: the transfer to POST.
type BareInput struct {
	// URL is the simulator's execute endpoint (the one payments.transfer uses).
	URL string
	// Params is the JSON body, client_reference included.
	Params json.RawMessage
}

// BareResult is the bare workflow's result: the downstream's answer.
type BareResult struct {
	// StatusCode is the downstream's HTTP status.
	StatusCode int
	// Body is the downstream's answer.
	Body json.RawMessage
}

// BareTransfer is the floor of a first confirm: the naive workflow a team
// would write without oncegate — one activity POSTing the transfer, with the
// workflow ID as Idempotency-Key, retried by Temporal.
func BareTransfer(ctx workflow.Context, in BareInput) (BareResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, MaximumAttempts: 5},
	})
	var out BareResult
	err := workflow.ExecuteActivity(ctx, (*BareActivities).PostTransfer, in).Get(ctx, &out)
	return out, err
}

// BareActivities holds the bare workflow's one activity.
type BareActivities struct {
	// HTTP calls the downstream.
	HTTP *http.Client
}

// PostTransfer POSTs in.Params to in.URL with Idempotency-Key = the
// workflow ID; a non-2xx answer is a (retryable) error.
func (a *BareActivities) PostTransfer(ctx context.Context, in BareInput) (BareResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.URL, bytes.NewReader(in.Params))
	if err != nil {
		return BareResult{}, fmt.Errorf("post transfer: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", activity.GetInfo(ctx).WorkflowExecution.ID)
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return BareResult{}, fmt.Errorf("post transfer: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return BareResult{}, fmt.Errorf("read transfer answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return BareResult{}, fmt.Errorf("post transfer: HTTP %d: %s", resp.StatusCode, body)
	}
	return BareResult{StatusCode: resp.StatusCode, Body: body}, nil
}

// BareWorkerFlag is the command-line flag that makes the benchmark binary
// run the bare workflow's worker instead of the benchmark (RunBareWorker):
// the bare workflow's worker is a process of its own, as oncegate's is.
const BareWorkerFlag = "-bare-worker"

// RunBareWorker is the bare worker process: it serves BareTransfer on
// taskQueue with pollers per task kind (0: the SDK's defaults) until SIGINT
// or SIGTERM, connected to Temporal as oncegate's worker is — the
// temporalconn configuration from the environment (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_TLS_*), so that on the production-like
// profile it speaks the same mTLS to the same server.
func RunBareWorker(taskQueue string, pollers int) error {
	cfg, err := envconfig.Parse[temporalconn.Config](envconfig.OS())
	if err == nil {
		err = cfg.Load()
	}
	if err != nil {
		return err
	}
	c, err := client.Dial(cfg.Apply(client.Options{Logger: quietLogger{}}))
	if err != nil {
		return fmt.Errorf("dial temporal: %w", err)
	}
	defer c.Close()
	w := newBareWorker(c, taskQueue, worker.PollerOptions(pollers))
	return w.Run(sdkworker.InterruptCh())
}

// startBareWorkerProcess starts this binary as the bare worker with env
// (its Temporal connection) and waits until the task queue has a poller.
func startBareWorkerProcess(logDir string, c client.Client, env []string, taskQueue string, pollers int) (*testenv.Process, error) {
	return startSelf(logDir, "bare-worker", []string{BareWorkerFlag, taskQueue, strconv.Itoa(pollers)}, env,
		func(ctx context.Context) error {
			resp, err := c.DescribeTaskQueue(ctx, taskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
			if err != nil {
				return err
			}
			if len(resp.GetPollers()) == 0 {
				return errors.New("no poller yet")
			}
			return nil
		})
}

// startSelf starts this binary as the process name (its log in logDir)
// with args and env, and waits until ready answers nil; a process that
// exits or is not ready within 30 s is killed, and its log is in the error.
func startSelf(logDir, name string, args, env []string, ready func(context.Context) error) (*testenv.Process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p, err := testenv.StartProcess(name, filepath.Join(logDir, name+".log"), append([]string{self}, args...), env, nil)
	if err != nil {
		return nil, err
	}
	err = testenv.WaitFor(context.Background(), 30*time.Second, func(ctx context.Context) error {
		if !p.Running() {
			return fmt.Errorf("%s exited:\n%s", name, p.Log())
		}
		return ready(ctx)
	})
	if err != nil {
		p.Kill()
		return nil, err
	}
	return p, nil
}

// newBareWorker builds the bare workflow's worker.
func newBareWorker(c client.Client, taskQueue string, opts sdkworker.Options) sdkworker.Worker {
	w := sdkworker.New(c, taskQueue, opts)
	w.RegisterWorkflow(BareTransfer)
	w.RegisterActivity(&BareActivities{HTTP: &http.Client{}})
	return w
}
