package catalog

import (
	"maps"

	"github.com/oncegate/oncegate/internal/plan"
)

// Plan resolves d into the plain values an operation's workflow runs: its
// kind and endpoint, the schedules of the execute call and of a status
// query, the reconciliation window and the business-state rules. It is
// pure, so a workflow may call it on a downstream recorded in an old history.
func (d *Downstream) Plan() plan.Downstream {
	p := plan.Downstream{
		Kind: d.Kind,
		Endpoint: plan.Endpoint{
			Execute: d.Execute, Status: d.Status, Tool: d.Tool, IdempotencyArgument: d.IdempotencyArgument,
			StatusTool: d.StatusTool, StatusArguments: maps.Clone(d.StatusArguments), AuthEnv: d.AuthEnv,
		},
		ResultRef:         d.ResultRef,
		KeyRetention:      d.IdempotencyKeyRetention, // zero unless it honours the key (validated)
		Execute:           d.executeRetry(),
		StatusQuery:       d.retry(d.ReconcileAttempts),
		ReconcileDelay:    d.ReconcileDelay,
		MaxProcessingTime: d.MaxProcessingTime,
		StatusLag:         d.StatusLag,
	}
	if p.Kind == "" {
		p.Kind = plan.KindHTTP
	}
	if d.BusinessState != nil {
		p.Business = &plan.Business{State: *d.BusinessState, CompletionDeadline: d.CompletionDeadline, PollInterval: d.PollInterval}
	}
	return p
}

// retry is the schedule of attempts calls of d's timeout and backoff.
func (d *Downstream) retry(attempts int) plan.Retry {
	initial := d.Backoff
	if initial <= 0 {
		initial = DefaultRetryInterval
	}
	maxInterval := d.BackoffMax
	if maxInterval <= 0 {
		maxInterval = plan.SatMul(initial, DefaultBackoffMaxFactor)
	}
	return plan.Retry{Timeout: d.Timeout, Attempts: max(attempts, 1), Initial: initial, Max: maxInterval}
}

// executeRetry is the schedule of the execute call: the catalog's attempts
// for a downstream that honours the key, exactly one call for one that does
// not (a second send could execute the operation twice).
func (d *Downstream) executeRetry() plan.Retry {
	if !d.HonorsIdempotencyKey {
		return d.retry(1)
	}
	return d.retry(d.Attempts)
}
