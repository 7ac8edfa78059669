package gateway

import (
	"slices"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/status"
)

// Message keys that render a status other than under its own name
// (Answer.Key).
const (
	// KeyPreviewReadyRepeat renders preview_ready with the amnesia guard's
	// recent operation.
	KeyPreviewReadyRepeat = "preview_ready_repeat"
	// KeyInvalidFilter renders invalid_resolution for an ops list's filter.
	KeyInvalidFilter = "invalid_filter"
	// KeyInProgressPending renders in_progress with the downstream's
	// business state.
	KeyInProgressPending = "in_progress_pending"
	// KeyQuoteUnavailable renders temporarily_unavailable when preview
	// could not get a quote.
	KeyQuoteUnavailable = "quote_unavailable"
)

// AltKeys lists, by status, the message keys other than its name that
// render the gateway's answers of it.
var AltKeys = map[status.Status][]string{
	status.PreviewReady:           {KeyPreviewReadyRepeat},
	status.TemporarilyUnavailable: {KeyQuoteUnavailable},
	status.InvalidResolution:      {KeyInvalidFilter},
	status.InProgress:             {KeyInProgressPending},
}

// Message keys of the detail fragments the gateway's answers name
// (Answer.Detail) besides the quotes' (quoteDetails).
const (
	// DetailWorkflowEngine: the workflow engine could not be reached.
	DetailWorkflowEngine = "detail.workflow_engine"
	// DetailPostgresDown: the PostgreSQL truth is unreachable.
	DetailPostgresDown = "detail.postgres_unreachable"
)

// DetailKeys lists every detail fragment key the service's answers name,
// so that a renderer can check it has a text for each in every language.
func DetailKeys() []string {
	keys := []string{DetailWorkflowEngine, DetailPostgresDown}
	for _, k := range quoteDetails {
		keys = append(keys, k)
	}
	for _, k := range reasonDetails {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// reasonDetails are the fragments that say each reason in words.
var reasonDetails = map[approval.Reason]string{
	approval.ReasonAlways:         "detail.reason_always",
	approval.ReasonAboveThreshold: "detail.reason_amount_above_threshold",
	approval.ReasonNoThreshold:    "detail.reason_currency_without_threshold",
	approval.ReasonNewPayee:       "detail.reason_new_payee",
}

// ReasonDetail is the detail fragment key that says reason r in words.
func ReasonDetail(r approval.Reason) (string, bool) {
	key, ok := reasonDetails[r]
	return key, ok
}
