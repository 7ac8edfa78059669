package operation

// Application error types the activities return and the workflow tells
// apart (the type strings of temporal.NewApplicationError, recorded in
// histories: they must not change).
const (
	// ErrTypeBusinessRefusal is a definite refusal by the downstream (a 4xx
	// such as 422 insufficient_funds): nothing was executed. Non-retryable;
	// its details are a BusinessRefusal.
	ErrTypeBusinessRefusal = "BusinessRefusal"
	// ErrTypeNotSent means the request could not even be built (bad params
	// JSON, bad URL): nothing was sent. Non-retryable.
	ErrTypeNotSent = "NotSent"
	// ErrTypeDownstreamUnavailable is a 5xx, 408, 429 or a transport error:
	// the outcome is unknown. Retryable.
	ErrTypeDownstreamUnavailable = "DownstreamUnavailable"
	// ErrTypeNoStatusEndpoint means the action has no status endpoint, so
	// the outcome cannot be reconciled. Non-retryable.
	ErrTypeNoStatusEndpoint = "NoStatusEndpoint"
	// ErrTypeParamMismatch means the truth holds the operation with another
	// param_hash: a security event; nothing is executed. Non-retryable.
	ErrTypeParamMismatch = "ParamMismatch"
	// ErrTypeAlreadyTerminal means the truth is already DONE or FAILED with
	// another outcome; truth is never overwritten. Non-retryable.
	ErrTypeAlreadyTerminal = "AlreadyTerminal"
	// ErrTypeNotOwner means the truth record belongs to another owner.
	// Non-retryable.
	ErrTypeNotOwner = "NotOwner"
)

// ReasonNotExecuted is the FAILED reason (the start of it) when
// reconciliation proves that the downstream has no record of the operation.
const ReasonNotExecuted = "not executed: the downstream has no record of it"
