package gateway

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/plan"
	"github.com/oncegate/oncegate/operation"
)

// Why a webhook is refused (the answer's reason; each is logged).
var (
	errWebhookUnsigned = errors.New("no signature header, or not of the form t=<unix>,v1=<hex>")
	errWebhookStale    = errors.New("the signature's timestamp is outside the tolerance")
	errWebhookBadSig   = errors.New("the signature does not match the body")
	errWebhookNoSecret = errors.New("the gateway has no signing secret for this action")
)

// Webhook takes a downstream's report of the final (or a new) business
// state of an operation. It is authenticated by the downstream's
// signature, not by a bearer token: the signature must verify with the
// secret of the action's webhook.secret_env, within its tolerance, in
// constant time; the event must name an operation of this action (its
// client_reference is the operation_id) and must not have been accepted
// before. Then the operation's workflow is told; the first final state it
// learns, by webhook or by polling, wins. A refused event changes nothing.
func (s *Service) Webhook(ctx context.Context, req WebhookRequest) Answer {
	scope := req.Scope
	action, ok := s.cat.Lookup(scope)
	if !ok || action.Downstream.Webhook == nil {
		return UnknownActionAnswer(scope)
	}
	wh := action.Downstream.Webhook
	refuse := func(why error) Answer {
		s.log.WarnContext(ctx, "webhook refused", "scope", scope, "reason", why.Error())
		s.metrics.webhooks.WithLabelValues(scope, "refused").Inc()
		return webhookRefusedAnswer(scope, why)
	}
	body := req.Body
	secret := os.Getenv(wh.SecretEnv)
	if secret == "" {
		s.log.ErrorContext(ctx, "webhook secret not set", "scope", scope, "env", wh.SecretEnv)
		return refuse(errWebhookNoSecret)
	}
	if err := verifySignature(req.Signature, body, secret, s.now(), wh.Tolerance); err != nil {
		return refuse(err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var event any
	if err := dec.Decode(&event); err != nil {
		return refuse(fmt.Errorf("the body is not JSON: %w", err))
	}
	opID, _ := plan.Lookup(event, wh.ReferenceField).(string)
	if opID == "" {
		return refuse(fmt.Errorf("no operation reference at %s", wh.ReferenceField))
	}
	record, err := json.Marshal(plan.Lookup(event, wh.ObjectField))
	if err != nil {
		return refuse(fmt.Errorf("no downstream record at %s", wh.ObjectField))
	}
	rec, err := s.store.Get(ctx, opID)
	switch {
	case errors.Is(err, idemstore.ErrNotFound) || (err == nil && rec.Scope != scope):
		return refuse(fmt.Errorf("unknown operation %q for %s", opID, scope))
	case err != nil:
		return s.storeErrorAnswer(scope, "", fmt.Errorf("webhook %s: %w", opID, err))
	}
	first, err := s.store.RecordWebhook(ctx, idemstore.WebhookParams{Scope: scope, Signature: req.Signature})
	if err != nil {
		return s.storeErrorAnswer(scope, "", fmt.Errorf("webhook %s: %w", opID, err))
	}
	if !first {
		return refuse(fmt.Errorf("replayed: this event was already accepted"))
	}
	eventType, _ := plan.Lookup(event, "type").(string)
	sctx, cancel := detached(ctx)
	defer cancel()
	err = s.engine.Deliver(sctx, opID, operation.DownstreamEvent{Record: record, EventType: eventType})
	switch {
	case errors.Is(err, ErrNoWorkflow):
		// The workflow has finished: its first final state stands.
		s.log.InfoContext(ctx, "webhook for a finished operation ignored", "scope", scope, "operation_id", opID)
	case err != nil:
		// Polling still learns the state; the receipt keeps a resend out.
		return webhookUndeliveredAnswer(scope, opID, fmt.Errorf("signal webhook %s: %w", opID, err))
	}
	s.log.InfoContext(ctx, "webhook accepted", "scope", scope, "operation_id", opID, "event_type", eventType)
	s.metrics.webhooks.WithLabelValues(scope, "accepted").Inc()
	return webhookAcceptedAnswer(scope, opID)
}

// verifySignature checks header, "t=<unix>,v1=<hex>[,v1=<hex>...]", against
// HMAC-SHA256(secret, "<t>.<body>"): the timestamp within tolerance of now,
// some v1 equal in constant time.
func verifySignature(header string, body []byte, secret string, now time.Time, tolerance time.Duration) error {
	var (
		ts   string
		sigs [][]byte
	)
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		switch {
		case !ok:
			return errWebhookUnsigned
		case k == "t":
			ts = v
		case k == "v1":
			sig, err := hex.DecodeString(v)
			if err != nil {
				return errWebhookUnsigned
			}
			sigs = append(sigs, sig)
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return errWebhookUnsigned
	}
	if age := now.Sub(time.Unix(unix, 0)); age > tolerance || age < -tolerance {
		return errWebhookStale
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			return nil
		}
	}
	return errWebhookBadSig
}
