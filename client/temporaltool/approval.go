package temporaltool

import (
	"go.temporal.io/sdk/workflow"
)

// AwaitApproval is the Approver that asks the user: it shows the preview
// through QueryPendingApproval and waits for a SignalApproval about its
// operation, until the fingerprint expires (then ErrApprovalExpired).
// Approvals of other operations — late answers to earlier calls — are
// ignored. The signal and the preview are both in the workflow's history,
// so a worker that dies while the user thinks loses neither.
func AwaitApproval(ctx workflow.Context, p Preview) (Approval, error) {
	pending := &p
	if err := workflow.SetQueryHandler(ctx, QueryPendingApproval, func() (*Preview, error) { return pending, nil }); err != nil {
		return Approval{}, err
	}
	defer func() { pending = nil }()
	ctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	expired := false
	var timerErr error
	signals := workflow.GetSignalChannel(ctx, SignalApproval)
	var got Approval
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(signals, func(c workflow.ReceiveChannel, _ bool) {
		var a Approval
		c.Receive(ctx, &a)
		if a.OperationID == p.OperationID {
			got = a
			return
		}
		workflow.GetLogger(ctx).Warn("approval of another operation ignored", "operation_id", a.OperationID, "pending", p.OperationID)
	})
	if !p.ExpiresAt.IsZero() {
		timer := workflow.NewTimer(ctx, max(p.ExpiresAt.Sub(workflow.Now(ctx)), 0))
		sel.AddFuture(timer, func(f workflow.Future) { expired, timerErr = true, f.Get(ctx, nil) })
	}
	for got.OperationID == "" && !expired {
		sel.Select(ctx)
	}
	switch {
	case timerErr != nil: // the workflow was canceled
		return Approval{OperationID: p.OperationID}, timerErr
	case expired:
		return Approval{OperationID: p.OperationID}, ErrApprovalExpired
	}
	return got, nil
}
