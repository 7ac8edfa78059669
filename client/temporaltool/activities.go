package temporaltool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/oncegate/oncegate/client"

	"github.com/oncegate/oncegate/status"
)

// heartbeatEvery is how often Confirm heartbeats while the gateway works, so
// that a confirm whose worker died is retried within the heartbeat timeout.
const heartbeatEvery = time.Second

// Activities are the oncegate activities of an agent's worker: methods on a
// struct that holds the gateway client (its token is the agent's subject).
type Activities struct {
	// Client calls the gateway.
	Client *client.Client
}

// Register registers the activities on w under the names Activity*.
func Register(w worker.ActivityRegistry, a *Activities) {
	w.RegisterActivityWithOptions(a, activity.RegisterOptions{Name: activityPrefix})
}

// PreviewRequest is the input of Preview.
type PreviewRequest struct {
	// Scope is the action, such as payments.transfer.
	Scope string `json:"scope"`
	// Params are the action's params.
	Params json.RawMessage `json:"params"`
}

// Preview is a preview_ready answer as the agent's history keeps it.
type Preview struct {
	// Scope is the action.
	Scope string `json:"scope"`
	// Params are the params previewed, sent again with the confirm.
	Params json.RawMessage `json:"params"`
	// OperationID is the operation the fingerprint is for.
	OperationID string `json:"operation_id"`
	// Fingerprint is what the confirm sends.
	Fingerprint string `json:"fingerprint"`
	// ExpiresAt is when the fingerprint can no longer be confirmed.
	ExpiresAt time.Time `json:"expires_at"`
	// Detail is the gateway's preview (normalized params, free params, quote) to show the user.
	Detail json.RawMessage `json:"detail"`
	// Meaning is the gateway's text about the preview.
	Meaning string `json:"meaning"`
	// Instruction is the gateway's advice to the agent about the preview.
	Instruction string `json:"instruction"`
	// RecentOperation is the identical recent operation the gateway found, if any:
	// the user must say whether to do it again (Approval.AcknowledgeRepeat).
	RecentOperation *client.RecentOperation `json:"recent_operation,omitempty"`
}

// ConfirmRequest is the input of Confirm.
type ConfirmRequest struct {
	// Scope is the action.
	Scope string `json:"scope"`
	// Fingerprint is the recorded preview's fingerprint.
	Fingerprint string `json:"fingerprint"`
	// Params are the params previewed.
	Params json.RawMessage `json:"params"`
	// AcknowledgeRepeatOf acknowledges the preview's recent operation.
	AcknowledgeRepeatOf string `json:"acknowledge_repeat_of,omitempty"`
}

// Outcome is an operation's state as the agent's history keeps it.
type Outcome struct {
	// OperationID is the operation.
	OperationID string `json:"operation_id"`
	// Status is completed, failed, in_progress or needs_manual_review (or a replay).
	Status client.Status `json:"status"`
	// Result is the downstream's result when completed.
	Result json.RawMessage `json:"result,omitempty"`
	// ResultRef is the business reference when completed.
	ResultRef string `json:"result_ref,omitempty"`
	// Reason is why it failed.
	Reason string `json:"reason,omitempty"`
	// FailureKind is how the failure is known.
	FailureKind string `json:"failure_kind,omitempty"`
	// PollAfterMS is how long to wait before polling again.
	PollAfterMS int64 `json:"poll_after_ms,omitempty"`
}

// Preview asks the gateway for a fingerprint. It writes nothing at the
// gateway, so a retried Preview is harmless; a refusal is a non-retryable
// error whose type is the answer's status (see StatusOf).
func (a *Activities) Preview(ctx context.Context, req PreviewRequest) (Preview, error) {
	ans, err := a.Client.Preview(ctx, req.Scope, req.Params)
	if err != nil {
		return Preview{}, activityError("preview "+req.Scope, err)
	}
	if ans.Status != status.PreviewReady || ans.Fingerprint == "" {
		return Preview{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("preview %s: answer %s without a fingerprint", req.Scope, ans.Status), string(status.InternalError), nil)
	}
	return Preview{
		Scope: req.Scope, Params: req.Params, OperationID: ans.OperationID, Fingerprint: ans.Fingerprint,
		ExpiresAt: ans.ExpiresAt, Detail: ans.Preview, Meaning: ans.Meaning, Instruction: ans.Instruction,
		RecentOperation: ans.RecentOperation,
	}, nil
}

// Confirm sends the recorded fingerprint. Every attempt sends the same one,
// so the gateway executes the operation once and answers later attempts
// with its state or its first outcome. It heartbeats while it waits.
func (a *Activities) Confirm(ctx context.Context, req ConfirmRequest) (Outcome, error) {
	stop := heartbeat(ctx)
	defer stop()
	var opts []client.ConfirmOption
	if req.AcknowledgeRepeatOf != "" {
		opts = append(opts, client.AcknowledgeRepeatOf(req.AcknowledgeRepeatOf))
	}
	ans, err := a.Client.Confirm(ctx, req.Scope, req.Fingerprint, req.Params, opts...)
	if err != nil {
		return Outcome{}, activityError("confirm "+req.Scope, err)
	}
	return outcomeOf(ans), nil
}

// Status asks the operation's current state once.
func (a *Activities) Status(ctx context.Context, operationID string) (Outcome, error) {
	ans, err := a.Client.Status(ctx, operationID)
	if err != nil {
		return Outcome{}, activityError("status "+operationID, err)
	}
	return outcomeOf(ans), nil
}

func outcomeOf(a *client.Answer) Outcome {
	return Outcome{OperationID: a.OperationID, Status: a.Status, Result: a.Result, ResultRef: a.ResultRef,
		Reason: a.Reason, FailureKind: a.FailureKind, PollAfterMS: a.PollAfterMS}
}

// activityError lets Temporal retry what may succeed when sent again (the
// gateway unreachable or temporarily unavailable) and makes every refusal
// a non-retryable ApplicationError of the answer's status, with the
// answer's problems and recent operation as details.
func activityError(step string, err error) error {
	var e *client.Error
	if !errors.As(err, &e) || e.Status == status.TemporarilyUnavailable {
		return fmt.Errorf("%s: %w", step, err)
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s: %v", step, err), string(e.Status), err,
		Refusal{Problems: e.Problems, RecentOperation: e.RecentOperation, TraceID: e.TraceID})
}

// Refusal is the detail of a refusal's ApplicationError.
type Refusal struct {
	// Problems are the fields that failed (invalid_params, downstream_refused).
	Problems []client.Problem `json:"problems,omitempty"`
	// RecentOperation is the unacknowledged recent operation (repeat_unacknowledged).
	RecentOperation *client.RecentOperation `json:"recent_operation,omitempty"`
	// TraceID identifies the request in the gateway's logs.
	TraceID string `json:"trace_id,omitempty"`
}

// heartbeat records a heartbeat every heartbeatEvery until stop is called.
func heartbeat(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}
