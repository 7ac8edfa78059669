package benche2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
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

// StartBareWorker runs a worker of BareTransfer on taskQueue with opts
// (those oncegate's worker has too); the caller stops it.
func StartBareWorker(c client.Client, taskQueue string, opts sdkworker.Options) (sdkworker.Worker, error) {
	w := sdkworker.New(c, taskQueue, opts)
	w.RegisterWorkflow(BareTransfer)
	w.RegisterActivity(&BareActivities{HTTP: &http.Client{}})
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start bare worker: %w", err)
	}
	return w, nil
}
