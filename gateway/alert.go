package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/oncegate/oncegate/status"
)

// Kinds of security events.
const (
	// EventParamMismatch means the confirm's params differ from the fingerprint's.
	EventParamMismatch = "param_mismatch"
	// EventStoreParamMismatch means the store holds the operation with another param_hash.
	EventStoreParamMismatch = "store_param_mismatch"
	// EventSubjectMismatch means a fingerprint issued to another subject was presented.
	EventSubjectMismatch = "subject_mismatch"
	// EventScopeMismatch means a fingerprint issued for another action was presented.
	EventScopeMismatch = "scope_mismatch"
	// EventInvalidFingerprint means a forged, altered or malformed fingerprint was presented.
	EventInvalidFingerprint = "fingerprint_invalid"
)

// SecurityEventKind describes one kind of security event.
type SecurityEventKind struct {
	// Kind is the event's name: the `kind` of logs, metrics and alerts.
	Kind string
	// Status is the answer the caller gets.
	Status status.Status
	// When says what happened, for docs/reference.md.
	When string
}

// SecurityEventKinds is the one list of security events: the gateway logs,
// counts (oncegate_security_events_total{kind}) and alerts exactly these,
// and docs/reference.md's list is generated from it (api's TestDocsSecurityEvents).
var SecurityEventKinds = []SecurityEventKind{
	{EventParamMismatch, status.ParamMismatch, "a confirm's bound params differ from the fingerprint's"},
	{EventStoreParamMismatch, status.ParamMismatch, "the store holds the operation with another param_hash than the confirm's"},
	{EventSubjectMismatch, status.SubjectMismatch, "a fingerprint issued to another subject was presented"},
	{EventScopeMismatch, status.ScopeMismatch, "a fingerprint issued for another action was presented"},
	{EventInvalidFingerprint, status.FingerprintInvalid, "a forged, altered, truncated or malformed fingerprint was presented"},
}

// isSecurityEventKind reports whether kind is in SecurityEventKinds.
func isSecurityEventKind(kind string) bool {
	return slices.ContainsFunc(SecurityEventKinds, func(k SecurityEventKind) bool { return k.Kind == kind })
}

// SecurityEvent is what an AlertHook receives.
type SecurityEvent struct {
	// Kind is one of the Event* constants.
	Kind string `json:"kind"`
	// Subject is the authenticated caller.
	Subject string `json:"subject"`
	// Scope is the action the request was for.
	Scope string `json:"scope"`
	// OperationID is the fingerprint's nonce when it could be read.
	OperationID string `json:"operation_id,omitempty"`
	// TraceID is the request's trace id.
	TraceID string `json:"trace_id"`
	// Detail is a short technical description.
	Detail string `json:"detail,omitempty"`
	// At is when the gateway saw it.
	At time.Time `json:"at"`
}

// AlertHook is told about every security event. The server calls it on its
// own goroutine with a context that outlives the request, so an
// implementation may block briefly but never delays an answer.
type AlertHook interface {
	// Alert delivers one event.
	Alert(ctx context.Context, ev SecurityEvent)
}

// NopAlert drops every event (they are still logged and counted).
type NopAlert struct{}

// Alert implements AlertHook.
func (NopAlert) Alert(context.Context, SecurityEvent) {}

// WebhookAlert posts each event as JSON to a URL (ONCEGATE_ALERT_WEBHOOK).
type WebhookAlert struct {
	url    string
	client *http.Client
	logger *slog.Logger
}

// NewWebhookAlert returns a hook posting to url with client (a client with a
// 5s timeout when nil), logging delivery failures to logger.
func NewWebhookAlert(url string, client *http.Client, logger *slog.Logger) *WebhookAlert {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &WebhookAlert{url: url, client: client, logger: logger}
}

// Alert implements AlertHook: one POST, failures logged, never retried.
func (w *WebhookAlert) Alert(ctx context.Context, ev SecurityEvent) {
	if err := w.post(ctx, ev); err != nil {
		w.logger.WarnContext(ctx, "alert webhook failed", "kind", ev.Kind, "operation_id", ev.OperationID, "err", err)
	}
}

func (w *WebhookAlert) post(ctx context.Context, ev SecurityEvent) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode alert: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("post alert: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("post alert: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post alert: HTTP %d", resp.StatusCode)
	}
	return nil
}
