package plan

import (
	"maps"
	"time"
)

// Defaults the resolution of a Source applies to what it leaves out.
const (
	// DefaultRetryInterval is the first retry interval when backoff is left
	// out or zero (Temporal's own default initial interval).
	DefaultRetryInterval = time.Second
	// DefaultBackoffMaxFactor sets backoff_max, when left out, to this many
	// times the initial retry interval (Temporal's default maximum interval).
	DefaultBackoffMaxFactor = 100
)

// Source is a downstream as an action of the catalog declares it, every
// default filled: where and how it is called, its retries, its
// reconciliation and business-state settings, and what only the gateway
// reads (the quote URL, the webhook). Plan resolves it into the Downstream
// a workflow runs. Its JSON is what gateways recorded in workflow inputs
// before the plan existed (OperationInput's "downstream"), so it must only
// ever grow.
type Source struct {
	// Kind names the registered kind (downstream.Register): KindHTTP, KindMCP
	// or one a test registers; empty means KindHTTP (KindName).
	Kind string `yaml:"kind" json:"kind,omitempty"`
	// Endpoint is where and with what the kind calls (execute, status and,
	// for KindMCP, the tools, their arguments and the token's variable):
	// the plan's own Endpoint, inlined in the catalog and in old inputs.
	Endpoint `yaml:",inline"`
	// HonorsIdempotencyKey says whether the downstream deduplicates by the
	// Idempotency-Key header. When false it is called exactly once and
	// reconciled through Status after an unknown answer.
	HonorsIdempotencyKey bool `yaml:"honors_idempotency_key" json:"honors_idempotency_key"`
	// Quote is an optional URL the preview POSTs the bound params to; its
	// answer's expires_at caps the fingerprint's exp.
	Quote string `yaml:"quote" json:"quote,omitempty"`
	// Timeout bounds one call.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// Attempts is the maximum number of calls (1 for a downstream that ignores the key).
	Attempts int `yaml:"attempts" json:"attempts"`
	// Backoff is the initial retry interval; it doubles up to BackoffMax.
	Backoff time.Duration `yaml:"backoff" json:"backoff"`
	// BackoffMax caps one retry interval.
	BackoffMax time.Duration `yaml:"backoff_max" json:"backoff_max"`
	// ResultRef is the top-level field of the downstream's JSON answer that
	// holds the business reference, such as "id".
	ResultRef string `yaml:"result_ref" json:"result_ref"`
	// ReconcileAttempts bounds the attempts of one status query (its
	// retries when the status endpoint fails) before NEEDS_REVIEW.
	ReconcileAttempts int `yaml:"reconcile_attempts" json:"reconcile_attempts"`
	// Window is when a status "not found" proves "not executed": the
	// plan's own, inlined.
	Window `yaml:",inline"`
	// IdempotencyKeyRetention is, for a downstream that honours the key, how
	// long it remembers a key after its first use. No attempt is sent after
	// that: a resend could execute the operation again.
	IdempotencyKeyRetention time.Duration `yaml:"idempotency_key_retention" json:"idempotency_key_retention,omitempty"`
	// BusinessState, for a downstream whose answer carries its own verdict
	// (payouts: pending, then paid or failed), says where it is and what it
	// means; a 2xx alone is then not "done". Nil for a downstream whose 2xx
	// is the outcome.
	BusinessState *BusinessState `yaml:"business_state" json:"business_state,omitempty"`
	// CompletionDeadline is how long after the execute call a pending
	// operation may stay pending; past it, a person decides.
	CompletionDeadline time.Duration `yaml:"completion_deadline" json:"completion_deadline,omitempty"`
	// PollInterval is the first wait between status queries of a pending
	// operation; it doubles up to MaxReconcilePoll.
	PollInterval time.Duration `yaml:"poll_interval" json:"poll_interval,omitempty"`
	// Webhook, when set, lets the downstream report a final state by a
	// signed POST to /v1/webhooks/{scope}.
	Webhook *Webhook `yaml:"webhook" json:"webhook,omitempty"`
}

// Webhook describes how a downstream signs the events it POSTs: the
// simulator's and Stripe's scheme, a header "t=<unix>,v1=<hex HMAC-SHA256
// of "<t>.<body>">".
type Webhook struct {
	// SecretEnv names the environment variable holding the signing secret
	// (the secret itself never enters the catalog or a workflow's history).
	SecretEnv string `json:"secret_env"`
	// SignatureHeader is the header carrying the signature.
	SignatureHeader string `json:"signature_header"`
	// Tolerance bounds the age of an event's timestamp (and its lead).
	Tolerance time.Duration `json:"tolerance"`
	// ReferenceField is the dotted path of the operation id (the
	// client_reference oncegate sent) in the event.
	ReferenceField string `json:"reference_field"`
	// ObjectField is the dotted path of the downstream's record in the event,
	// read with BusinessState like a status answer.
	ObjectField string `json:"object_field"`
}

// KindName is the kind of d: its Kind, or KindHTTP when it names none (the
// one place the default kind is applied).
func (d *Source) KindName() string {
	if d.Kind == "" {
		return KindHTTP
	}
	return d.Kind
}

// Plan resolves d into the plain values an operation's workflow runs: its
// kind and endpoint, the schedules of the execute call and of a status
// query, the reconciliation window and the business-state rules. It is
// pure, so a workflow may call it on a downstream recorded in an old history.
func (d *Source) Plan() Downstream {
	p := Downstream{
		Kind:         d.KindName(),
		Endpoint:     d.Endpoint,
		ResultRef:    d.ResultRef,
		KeyRetention: d.IdempotencyKeyRetention, // zero unless it honours the key (validated)
		Execute:      d.executeRetry(),
		StatusQuery:  d.retry(d.ReconcileAttempts),
		Window:       d.Window,
	}
	p.Endpoint.StatusArguments = maps.Clone(d.StatusArguments)
	if d.BusinessState != nil {
		p.Business = &Business{State: *d.BusinessState, CompletionDeadline: d.CompletionDeadline, PollInterval: d.PollInterval}
	}
	return p
}

// retry is the schedule of attempts calls of d's timeout and backoff.
func (d *Source) retry(attempts int) Retry {
	initial := d.Backoff
	if initial <= 0 {
		initial = DefaultRetryInterval
	}
	maxInterval := d.BackoffMax
	if maxInterval <= 0 {
		maxInterval = SatMul(initial, DefaultBackoffMaxFactor)
	}
	return Retry{Timeout: d.Timeout, Attempts: max(attempts, 1), Initial: initial, Max: maxInterval}
}

// executeRetry is the schedule of the execute call: the catalog's attempts
// for a downstream that honours the key, exactly one call for one that does
// not (a second send could execute the operation twice).
func (d *Source) executeRetry() Retry {
	if !d.HonorsIdempotencyKey {
		return d.retry(1)
	}
	return d.retry(d.Attempts)
}
