package temporaltool

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/client"

	"github.com/oncegate/oncegate/status"
)

// Defaults of Options.
const (
	// DefaultActivityTimeout bounds one attempt of Preview and Status, and of
	// Confirm between heartbeats' deadline and its own (longer than the
	// client's request timeout).
	DefaultActivityTimeout = 45 * time.Second
	// DefaultHeartbeatTimeout is how soon a Confirm whose worker died is retried.
	DefaultHeartbeatTimeout = 5 * time.Second
	// DefaultConfirmWithin bounds all attempts of one Confirm. Retrying it is
	// always safe (the same fingerprint); giving up leaves the call's state
	// to be asked with Wait.
	DefaultConfirmWithin = 24 * time.Hour
	// DefaultMaxPollAfter caps the wait between polls.
	DefaultMaxPollAfter = time.Minute
)

// ErrDeclined means the user did not approve the tool call: nothing was confirmed.
var ErrDeclined = errors.New("temporaltool: the user declined the tool call")

// ErrApprovalExpired means no approval came before the fingerprint expired:
// nothing was confirmed; preview again to ask again.
var ErrApprovalExpired = errors.New("temporaltool: no approval before the fingerprint expired")

// Approval is the user's answer to a preview (the payload of SignalApproval).
type Approval struct {
	// OperationID is the previewed operation being answered; an approval of
	// another operation is ignored.
	OperationID string `json:"operation_id"`
	// Approved is true when the user wants the call executed.
	Approved bool `json:"approved"`
	// AcknowledgeRepeat is true when the user wants it executed although the
	// preview named an identical recent operation.
	AcknowledgeRepeat bool `json:"acknowledge_repeat,omitempty"`
	// By names who answered.
	By string `json:"by,omitempty"`
}

// Approver decides a preview inside the workflow: AwaitApproval waits for
// the user's signal; a workflow may pass its own rule (an amount limit, say).
type Approver func(ctx workflow.Context, p Preview) (Approval, error)

// Result is one tool call as the agent's history records it.
type Result struct {
	// Preview is the recorded preview.
	Preview Preview `json:"preview"`
	// Approval is the user's answer.
	Approval Approval `json:"approval"`
	// Outcome is the operation's last known state (empty when not confirmed).
	Outcome Outcome `json:"outcome"`
}

// Options tunes Call. The zero value uses the defaults.
type Options struct {
	// ActivityTimeout is the StartToCloseTimeout of each activity attempt.
	ActivityTimeout time.Duration
	// HeartbeatTimeout is the Confirm activity's heartbeat timeout.
	HeartbeatTimeout time.Duration
	// ConfirmWithin is the ScheduleToCloseTimeout of the Confirm activity.
	ConfirmWithin time.Duration
	// MaxPollAfter caps the wait between status polls.
	MaxPollAfter time.Duration
}

func (o Options) withDefaults() Options {
	if o.ActivityTimeout <= 0 {
		o.ActivityTimeout = DefaultActivityTimeout
	}
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if o.ConfirmWithin <= 0 {
		o.ConfirmWithin = DefaultConfirmWithin
	}
	if o.MaxPollAfter <= 0 {
		o.MaxPollAfter = DefaultMaxPollAfter
	}
	return o
}

// retryPolicy retries transient failures; refusals are non-retryable errors.
var retryPolicy = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second}

// Call performs one tool call exactly once: preview, approve, confirm with
// the recorded fingerprint, then wait for the outcome. It returns when the
// operation is completed or failed (a failed one is a Result with
// Outcome.Status failed and a nil error: a business answer, not an error of
// the call), with ErrDeclined or ErrApprovalExpired when nothing was
// confirmed, with an error matching client.ErrNeedsManualReview when a person
// has to decide (Wait again later), and with an error matching the refusal's
// class (see StatusOf) when the gateway refused.
func Call(ctx workflow.Context, scope string, params any, approve Approver, opts ...Options) (Result, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o = o.withDefaults()
	raw, err := json.Marshal(params)
	if err != nil {
		return Result{}, fmt.Errorf("encode params of %s: %w", scope, err)
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: o.ActivityTimeout, RetryPolicy: retryPolicy})
	var res Result
	if err := workflow.ExecuteActivity(actx, ActivityPreview, PreviewRequest{Scope: scope, Params: raw}).Get(ctx, &res.Preview); err != nil {
		return res, classify(err)
	}
	if res.Approval, err = approve(ctx, res.Preview); err != nil {
		return res, err
	}
	if !res.Approval.Approved {
		return res, ErrDeclined
	}
	req := ConfirmRequest{Scope: scope, Fingerprint: res.Preview.Fingerprint, Params: res.Preview.Params}
	if res.Approval.AcknowledgeRepeat && res.Preview.RecentOperation != nil {
		req.AcknowledgeRepeatOf = res.Preview.RecentOperation.OperationID
	}
	cctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: o.ActivityTimeout, HeartbeatTimeout: o.HeartbeatTimeout,
		ScheduleToCloseTimeout: o.ConfirmWithin, RetryPolicy: retryPolicy,
	})
	if err := workflow.ExecuteActivity(cctx, ActivityConfirm, req).Get(ctx, &res.Outcome); err != nil {
		return res, classify(err)
	}
	if res.Outcome.Status.Terminal() {
		return res, nil
	}
	res.Outcome, err = wait(ctx, res.Outcome, o)
	return res, err
}

// Wait polls the status of operationID from the workflow, with durable
// timers, until it is completed or failed; it stops with an error matching
// client.ErrNeedsManualReview when a person has to decide.
func Wait(ctx workflow.Context, operationID string, opts ...Options) (Outcome, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	return wait(ctx, Outcome{OperationID: operationID, Status: status.InProgress}, o.withDefaults())
}

func wait(ctx workflow.Context, last Outcome, o Options) (Outcome, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: o.ActivityTimeout, RetryPolicy: retryPolicy})
	for !last.Status.Terminal() {
		if last.Status == status.NeedsManualReview {
			return last, fmt.Errorf("operation %s: %w", last.OperationID, client.ErrNeedsManualReview)
		}
		pause := client.DefaultPollAfter
		if last.PollAfterMS > 0 {
			pause = time.Duration(last.PollAfterMS) * time.Millisecond
		}
		if err := workflow.Sleep(ctx, min(pause, o.MaxPollAfter)); err != nil {
			return last, err
		}
		if err := workflow.ExecuteActivity(actx, ActivityStatus, last.OperationID).Get(ctx, &last); err != nil {
			return last, classify(err)
		}
	}
	return last, nil
}

// StatusOf returns the gateway status of a refusal an activity of this
// package failed with ("" when err is not one).
func StatusOf(err error) client.Status {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && client.Status(app.Type()).Known() {
		return client.Status(app.Type())
	}
	return ""
}

// classify makes an activity's refusal match the client's class of its
// status with errors.Is (client.ErrSecurity, client.ErrInvalidParams, ...),
// keeping the ActivityError in the chain.
func classify(err error) error {
	class := client.ClassOf(StatusOf(err))
	if StatusOf(err) == "" || class == nil {
		return err
	}
	return fmt.Errorf("%w: %w", class, err)
}
