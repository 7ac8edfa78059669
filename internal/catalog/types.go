// Package catalog loads the action catalog (YAML): for each action the bound
// and free params, the three TTLs and the downstream it calls. Loading
// validates every action and refuses TTLs that would open a hole in the
// idempotency guarantee.
package catalog

import (
	"regexp"
	"time"

	"github.com/oncegate/oncegate/internal/plan"
)

// FieldType is the type of a bound param.
type FieldType string

const (
	// TypeString is a JSON string (NFC-normalized before hashing).
	TypeString FieldType = "string"
	// TypeDecimal is an exact decimal given as a JSON number or a string.
	TypeDecimal FieldType = "decimal"
	// TypeInteger is an exact integer given as a JSON number or a string.
	TypeInteger FieldType = "integer"
	// TypeBoolean is a JSON boolean.
	TypeBoolean FieldType = "boolean"
)

// StringKind refines what a string field may hold.
type StringKind string

const (
	// KindCurrency is an active ISO 4217 currency code, such as USD.
	KindCurrency StringKind = "currency"
	// KindIdentifier is an identifier: no control, format, invisible,
	// white-space or compatibility (such as full-width) characters; the
	// PRECIS IdentifierClass of RFC 8264.
	KindIdentifier StringKind = "identifier"
)

// Field declares one bound param. The constraints (Min to Kind) only
// refuse values; they never change one, so they never change a param_hash.
// Strings are checked after their normalizers, decimals by exact value.
type Field struct {
	// Type is the field's type.
	Type FieldType `yaml:"type" json:"type"`
	// Required refuses params that lack the field (or carry null).
	Required bool `yaml:"required" json:"required"`
	// Normalize lists normalizers applied in order: trim, upper, lower.
	Normalize []string `yaml:"normalize" json:"normalize,omitempty"`
	// Description is shown in tool schemas.
	Description string `yaml:"description" json:"description,omitempty"`

	// Min is the smallest allowed value of a decimal or integer (inclusive).
	Min *Decimal `yaml:"min" json:"min,omitempty"`
	// ExclusiveMin is a value a decimal or integer must be greater than.
	ExclusiveMin *Decimal `yaml:"exclusive_min" json:"exclusive_min,omitempty"`
	// Max is the largest allowed value of a decimal or integer (inclusive).
	Max *Decimal `yaml:"max" json:"max,omitempty"`
	// ExclusiveMax is a value a decimal or integer must be less than.
	ExclusiveMax *Decimal `yaml:"exclusive_max" json:"exclusive_max,omitempty"`
	// Scale is the most decimal places a decimal may have (trailing zeros
	// do not count: 12.50 has one).
	Scale *int `yaml:"scale" json:"scale,omitempty"`
	// ScaleFrom names a bound currency field whose ISO 4217 minor units
	// are the most decimal places this decimal may have (2 for USD, 0 for JPY).
	ScaleFrom string `yaml:"scale_from" json:"scale_from,omitempty"`

	// MaxLength is the most characters (Unicode code points) a string may
	// have; 0 means no limit.
	MaxLength int `yaml:"max_length" json:"max_length,omitempty"`
	// Enum lists the only values a string may take.
	Enum []string `yaml:"enum" json:"enum,omitempty"`
	// Pattern is a regular expression (RE2 syntax, unanchored as in JSON
	// Schema) a string must match.
	Pattern string `yaml:"pattern" json:"pattern,omitempty"`
	// Kind refines a string: currency or identifier.
	Kind StringKind `yaml:"kind" json:"kind,omitempty"`

	// pattern is Pattern compiled at load.
	pattern *regexp.Regexp
}

// PatternRegexp returns the compiled Pattern, or nil when there is none.
func (f Field) PatternRegexp() *regexp.Regexp { return f.pattern }

// FreeField declares a param passed to the downstream but not bound.
type FreeField struct {
	// Type is the JSON type expected (string by default).
	Type FieldType `yaml:"type" json:"type"`
	// Description is shown in tool schemas.
	Description string `yaml:"description" json:"description,omitempty"`
	// MaxLength is the most characters (Unicode code points) a string may
	// have; 0 means no limit.
	MaxLength int `yaml:"max_length" json:"max_length,omitempty"`
}

// Downstream describes the API an action calls.
type Downstream struct {
	// Kind is the protocol: plan.KindHTTP (empty means it too) or plan.KindMCP.
	Kind string `yaml:"kind" json:"kind,omitempty"`
	// Execute is the URL the workflow POSTs the params to (for plan.KindMCP: the
	// MCP server's streamable HTTP endpoint).
	Execute string `yaml:"execute" json:"execute"`
	// Tool is, for plan.KindMCP, the tool that executes the operation.
	Tool string `yaml:"tool" json:"tool,omitempty"`
	// IdempotencyArgument is, for plan.KindMCP, the tool's argument that takes
	// the operation id as an idempotency key; set, the tool honours the key
	// (HonorsIdempotencyKey) and is retried with it.
	IdempotencyArgument string `yaml:"idempotency_argument" json:"idempotency_argument,omitempty"`
	// StatusTool is, for plan.KindMCP, the read-only tool reconciliation calls:
	// a result holding the ResultRef field is found, one without it not
	// found, one with isError no answer.
	StatusTool string `yaml:"status_tool" json:"status_tool,omitempty"`
	// StatusArguments maps the status tool's arguments to values: the word
	// operation_id stands for the operation id, anything else is sent as is.
	StatusArguments map[string]string `yaml:"status_arguments" json:"status_arguments,omitempty"`
	// AuthEnv names the environment variable holding a bearer token for the
	// downstream (plan.KindMCP); the token itself never enters a workflow's history.
	AuthEnv string `yaml:"auth_env" json:"auth_env,omitempty"`
	// HonorsIdempotencyKey says whether the downstream deduplicates by the
	// Idempotency-Key header. When false it is called exactly once and
	// reconciled through Status after an unknown answer.
	HonorsIdempotencyKey bool `yaml:"honors_idempotency_key" json:"honors_idempotency_key"`
	// Status is an optional URL answering GET ?client_reference=<operation_id>
	// with 200 and the transfer, or 404 when none exists.
	Status string `yaml:"status" json:"status,omitempty"`
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
	// ReconcileDelay is how long to wait before asking Status after an unknown answer.
	ReconcileDelay time.Duration `yaml:"reconcile_delay" json:"reconcile_delay"`
	// ReconcileAttempts bounds the attempts of one status query (its
	// retries when the status endpoint fails) before NEEDS_REVIEW.
	ReconcileAttempts int `yaml:"reconcile_attempts" json:"reconcile_attempts"`
	// MaxProcessingTime is, for a downstream that ignores the key, how long
	// after a request was sent it may still commit it (real servers go on
	// processing after the caller gave up). A status "not found" proves "not
	// executed" only once this window, plus StatusLag, has passed since the
	// last send. Zero means undeclared: "not found" then proves nothing and
	// the operation goes to manual review.
	MaxProcessingTime time.Duration `yaml:"max_processing_time" json:"max_processing_time,omitempty"`
	// StatusLag is how long after a commit the status endpoint may still
	// answer "not found" (a replica or an index behind the primary).
	StatusLag time.Duration `yaml:"status_lag" json:"status_lag,omitempty"`
	// IdempotencyKeyRetention is, for a downstream that honours the key, how
	// long it remembers a key after its first use. No attempt is sent after
	// that: a resend could execute the operation again.
	IdempotencyKeyRetention time.Duration `yaml:"idempotency_key_retention" json:"idempotency_key_retention,omitempty"`
	// BusinessState, for a downstream whose answer carries its own verdict
	// (payouts: pending, then paid or failed), says where it is and what it
	// means; a 2xx alone is then not "done". Nil for a downstream whose 2xx
	// is the outcome.
	BusinessState *plan.BusinessState `yaml:"business_state" json:"business_state,omitempty"`
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

// Action is one scope of the catalog.
type Action struct {
	// Scope is the action's name, such as payments.transfer.
	Scope string `yaml:"-" json:"scope"`
	// Description tells a model what the action does.
	Description string `yaml:"description" json:"description"`
	// Bind lists the fields that enter the fingerprint's param_hash.
	Bind map[string]Field `yaml:"bind" json:"bind"`
	// Free lists fields passed to the downstream but not bound.
	Free map[string]FreeField `yaml:"free" json:"free"`
	// FingerprintTTL is how long a preview's fingerprint may be consumed.
	FingerprintTTL time.Duration `yaml:"fingerprint_ttl" json:"fingerprint_ttl"`
	// InFlightTTL is how long an IN_FLIGHT claim lives in Redis.
	InFlightTTL time.Duration `yaml:"in_flight_ttl" json:"in_flight_ttl"`
	// TerminalTTL is how long a terminal result is replayed.
	TerminalTTL time.Duration `yaml:"terminal_ttl" json:"terminal_ttl"`
	// DuplicateIntentWindow is how far back the amnesia guard looks (default 24h).
	DuplicateIntentWindow time.Duration `yaml:"duplicate_intent_window" json:"duplicate_intent_window"`
	// SummaryField names the bound field shown in summaries (such as amount).
	SummaryField string `yaml:"summary_field" json:"summary_field,omitempty"`
	// Downstream is the API the action calls.
	Downstream Downstream `yaml:"downstream" json:"downstream"`
}

// Catalog is the loaded, validated set of actions.
type Catalog struct {
	// Actions maps a scope to its action.
	Actions map[string]*Action
	// GatewayWait is the gateway's own wait for an outcome at confirm; it is
	// part of every action's worst case.
	GatewayWait time.Duration
}

// IntentWindow is how far back the amnesia guard looks for the action:
// its duplicate_intent_window, or DefaultDuplicateIntentWindow.
func (a *Action) IntentWindow() time.Duration {
	if a.DuplicateIntentWindow <= 0 {
		return DefaultDuplicateIntentWindow
	}
	return a.DuplicateIntentWindow
}

// MaxIntentWindow is the longest IntentWindow of the catalog's actions:
// how far back a warm-up of the recent-intent index must look.
func (c *Catalog) MaxIntentWindow() time.Duration {
	longest := DefaultDuplicateIntentWindow
	for _, a := range c.Actions {
		longest = max(longest, a.IntentWindow())
	}
	return longest
}

// Lookup returns the action of scope, or false.
func (c *Catalog) Lookup(scope string) (*Action, bool) {
	a, ok := c.Actions[scope]
	return a, ok
}
