// Package plan holds what one operation's workflow and activities run: its
// downstream resolved from the catalog into plain values — the kind and its
// endpoint, the schedules of the execute call and of a status query, the
// reconciliation window and the business-state rules — and the sums that
// the catalog's TTL check takes of them. The workflow builds its retry
// policies from a Downstream and the check adds up the same Downstream
// (Worst), so the two cannot disagree.
//
// A Downstream is part of the workflow's durable input: its JSON shape is
// recorded in Temporal histories and must only ever grow.
package plan

import (
	"math"
	"time"
)

// The downstream kinds the catalog knows (downstream.Register names).
const (
	// KindHTTP is a JSON HTTP API: execute is a POST with the
	// Idempotency-Key header, status a GET ?client_reference=.
	KindHTTP = "http"
	// KindMCP is a tool on an MCP server (streamable HTTP): execute is a
	// tools/call with the operation id in the tool's idempotency argument when
	// the tool takes one; reconciliation calls the status tool.
	KindMCP = "mcp"
)

// RetryCoefficient is the factor by which each retry interval grows.
const RetryCoefficient = 2

// MaxReconcilePoll caps the interval between status queries while a "not
// found" cannot prove anything yet, and between the status queries of a
// pending operation: they start reconcile_delay (or poll_interval) apart and
// double up to this.
const MaxReconcilePoll = time.Minute

// Downstream is an operation's downstream, resolved: every default filled,
// nothing left for the workflow to look up.
type Downstream struct {
	// Kind names the protocol: KindHTTP or KindMCP (or a kind registered by
	// a test).
	Kind string `json:"kind"`
	// Endpoint is where and with what the kind calls.
	Endpoint Endpoint `json:"endpoint"`
	// ResultRef is the top-level field of the downstream's answer holding
	// the business reference, such as "id".
	ResultRef string `json:"result_ref,omitempty"`
	// Execute is the schedule of the execute call: the catalog's attempts
	// for a downstream that honours the key, exactly one call otherwise.
	Execute Retry `json:"execute"`
	// KeyRetention is how long a downstream that honours the key remembers
	// it (no attempt is sent after it); zero for one that ignores the key.
	KeyRetention time.Duration `json:"key_retention,omitempty"`
	// StatusQuery is the schedule of one status query (reconciliation and
	// the polls of a pending operation).
	StatusQuery Retry `json:"status_query"`
	// Window is when a status "not found" proves "not executed" (its
	// fields are inlined in the JSON, as in every recorded input).
	Window
	// Business holds the business-state rules of a downstream whose answer
	// carries its own verdict (payouts); nil when a 2xx is the outcome.
	Business *Business `json:"business,omitempty"`
}

// Window says when a status "not found" proves that the downstream did not
// execute an operation: the catalog's reconcile_delay, max_processing_time
// and status_lag.
type Window struct {
	// ReconcileDelay is how long to wait before the first status query
	// after an unknown answer.
	ReconcileDelay time.Duration `yaml:"reconcile_delay" json:"reconcile_delay,omitempty"`
	// MaxProcessingTime is, for a downstream that ignores the key, how long
	// after a request was sent it may still commit it (real servers go on
	// processing after the caller gave up). A status "not found" proves "not
	// executed" only once this window, plus StatusLag, has passed since the
	// last send. Zero means undeclared: "not found" then proves nothing and
	// the operation goes to manual review.
	MaxProcessingTime time.Duration `yaml:"max_processing_time" json:"max_processing_time,omitempty"`
	// StatusLag is how long after a commit a status query may still answer
	// "not found" (a replica or an index behind the primary).
	StatusLag time.Duration `yaml:"status_lag" json:"status_lag,omitempty"`
}

// Endpoint is where a kind sends its calls.
type Endpoint struct {
	// Execute is the URL of the execute call (for KindMCP the server's
	// streamable HTTP endpoint).
	Execute string `yaml:"execute" json:"execute"`
	// Status is the URL of the status query; empty when the downstream has
	// no way to ask (then nothing can be reconciled).
	Status string `yaml:"status" json:"status,omitempty"`
	// Tool is, for KindMCP, the tool that executes the operation.
	Tool string `yaml:"tool" json:"tool,omitempty"`
	// IdempotencyArgument is, for KindMCP, the tool's argument that takes
	// the operation id.
	IdempotencyArgument string `yaml:"idempotency_argument" json:"idempotency_argument,omitempty"`
	// StatusTool is, for KindMCP, the read-only tool reconciliation calls.
	StatusTool string `yaml:"status_tool" json:"status_tool,omitempty"`
	// StatusArguments maps the status tool's arguments to values (the word
	// operation_id stands for the operation id).
	StatusArguments map[string]string `yaml:"status_arguments" json:"status_arguments,omitempty"`
	// AuthEnv names the environment variable holding the bearer token (the
	// token itself never enters a history).
	AuthEnv string `yaml:"auth_env" json:"auth_env,omitempty"`
}

// Business is how a downstream's answer says where an operation is, and how
// long it may stay pending.
type Business struct {
	// State says which field holds the business state and what its values mean.
	State BusinessState `json:"state"`
	// CompletionDeadline is how long after the execute call an operation
	// may stay pending; past it, a person decides.
	CompletionDeadline time.Duration `json:"completion_deadline,omitempty"`
	// PollInterval is the first wait between the status queries of a
	// pending operation; it doubles up to MaxReconcilePoll.
	PollInterval time.Duration `json:"poll_interval,omitempty"`
}

// Retry is the schedule of one activity: the workflow turns it into its
// Temporal retry policy and Worst adds it up.
type Retry struct {
	// Timeout bounds one attempt (the activity's start-to-close timeout).
	Timeout time.Duration `json:"timeout"`
	// Attempts is the maximum number of attempts.
	Attempts int `json:"attempts"`
	// Initial is the first retry interval; each next one is
	// RetryCoefficient times longer, capped at Max.
	Initial time.Duration `json:"initial"`
	// Max caps one retry interval.
	Max time.Duration `json:"max"`
}

// Waits returns the sum of the intervals between Attempts attempts.
func (r Retry) Waits() time.Duration {
	var total time.Duration
	wait := r.Initial
	for i := 1; i < r.Attempts; i++ {
		total = SatAdd(total, min(wait, r.Max))
		wait = SatMul(wait, RetryCoefficient)
	}
	return total
}

// Worst returns the longest the activity can run with all its retries:
// Timeout × Attempts + Waits.
func (r Retry) Worst() time.Duration {
	return SatAdd(SatMul(r.Timeout, int64(r.Attempts)), r.Waits())
}

// Reconciles reports whether an unknown answer is reconciled through a
// status query (the downstream has a way to ask).
func (d *Downstream) Reconciles() bool { return d.Endpoint.Status != "" }

// ProvesNotExecuted reports whether a status "not found" can ever prove
// that the downstream did not execute an operation: only when it can be
// asked and declares its processing window.
func (d *Downstream) ProvesNotExecuted() bool { return d.Reconciles() && d.MaxProcessingTime > 0 }

// NotFoundProvesAfter returns the moment from which a status "not found"
// proves "not executed" for a request last sent at lastSent: after the
// processing window and the status lag have both passed. The workflow asks
// again until then; ProvesNotExecuted must hold.
func (d *Downstream) NotFoundProvesAfter(lastSent time.Time) time.Time {
	return lastSent.Add(SatAdd(d.MaxProcessingTime, d.StatusLag))
}

// ReconcileWorst returns the longest reconciliation can take after the
// execute call ended with an unknown answer, as the workflow runs it: the
// settle delay and one status query; and, when "not found" needs the
// processing window to pass, status queries (never a wait past the
// window's end) until one is asked after the window and the status lag:
// at most the window plus two queries (the one running when the window
// ends and the one after it).
func (d *Downstream) ReconcileWorst() time.Duration {
	if !d.Reconciles() {
		return 0
	}
	query := d.StatusQuery.Worst()
	w := SatAdd(d.ReconcileDelay, query)
	if d.ProvesNotExecuted() {
		w = SatAdd(w, SatAdd(SatAdd(d.MaxProcessingTime, d.StatusLag), query))
	}
	return w
}

// Pends reports whether the downstream's answers can be pending.
func (d *Downstream) Pends() bool { return d.Business != nil && len(d.Business.State.Pending) > 0 }

// PendingWorst is how long a pending operation may stay in flight after its
// execute call: the completion deadline plus the status query running when
// it passes; zero when answers cannot be pending.
func (d *Downstream) PendingWorst() time.Duration {
	if !d.Pends() {
		return 0
	}
	return SatAdd(d.Business.CompletionDeadline, d.StatusQuery.Worst())
}

// Worst returns the longest an operation can stay IN_FLIGHT before its
// outcome is known or it goes to manual review, beside gatewayWait: the
// execute call with all its retries, the reconciliation after an unknown
// answer, and the pending wait.
func (d *Downstream) Worst(gatewayWait time.Duration) time.Duration {
	return SatAdd(SatAdd(SatAdd(d.Execute.Worst(), gatewayWait), d.ReconcileWorst()), d.PendingWorst())
}

// SatAdd adds two durations, saturating at the largest one.
func SatAdd(a, b time.Duration) time.Duration {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// SatMul multiplies a duration by n, saturating at the largest one.
func SatMul(a time.Duration, n int64) time.Duration {
	if n != 0 && a > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return a * time.Duration(n)
}
