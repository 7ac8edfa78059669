package simulator

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultPayoutSettle is how long a payout stays pending unless the fault
// payout_settle_ms says otherwise.
const DefaultPayoutSettle = 3 * time.Second

// Payout states.
const (
	// PayoutPending is a payout accepted and not settled yet.
	PayoutPending = "pending"
	// PayoutPaid is a payout whose money arrived.
	PayoutPaid = "paid"
	// PayoutFailed is a payout that will never pay; FailureReason says why.
	PayoutFailed = "failed"
)

// FailingPayeePrefix marks payees whose payouts always fail.
const FailingPayeePrefix = "fail-"

// payoutFailureReason is the failure_reason of a failed payout.
const payoutFailureReason = "account_closed"

// SignatureHeader carries a webhook's signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">.
const SignatureHeader = "Sim-Signature"

// settleEvery is how often the simulator settles due payouts.
const settleEvery = 200 * time.Millisecond

// Payout is the JSON of a payout, as POST /v1/payouts, GET /v1/payouts and
// the webhook events carry it.
type Payout struct {
	// ID is the payout's business reference, "po_" and random hex.
	ID string `json:"id"`
	// Status is pending, paid or failed.
	Status string `json:"status"`
	// Amount is the exact decimal amount, reduced ("12.5").
	Amount string `json:"amount"`
	// Currency is the currency as given.
	Currency string `json:"currency"`
	// PayeeID is the payee as given.
	PayeeID string `json:"payee_id"`
	// Memo is the free-text memo, if any.
	Memo string `json:"memo,omitempty"`
	// ClientReference is the caller's reference, if any.
	ClientReference string `json:"client_reference,omitempty"`
	// FailureReason says why a failed payout failed.
	FailureReason string `json:"failure_reason,omitempty"`
	// CreatedAt is when the payout was accepted, RFC 3339 in UTC.
	CreatedAt string `json:"created_at"`
}

// WebhookEvent is the body POSTed to the webhook when a payout settles.
type WebhookEvent struct {
	// Type is payout.paid or payout.failed.
	Type string `json:"type"`
	// Data is the settled payout.
	Data Payout `json:"data"`
}

// Sign returns the Sim-Signature header value of body at t with secret.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// payoutColumns are the columns scanPayout reads, in order.
const payoutColumns = `id, status, amount::text, currency, payee_id, memo, client_reference, failure_reason, created_at`

// scanPayout reads one row of payoutColumns.
func scanPayout(row pgx.Row) (Payout, error) {
	var (
		p                Payout
		memo, cr, reason *string
		createdAt        time.Time
	)
	if err := row.Scan(&p.ID, &p.Status, &p.Amount, &p.Currency, &p.PayeeID, &memo, &cr, &reason, &createdAt); err != nil {
		return Payout{}, err
	}
	for _, f := range []struct {
		in  *string
		out *string
	}{{memo, &p.Memo}, {cr, &p.ClientReference}, {reason, &p.FailureReason}} {
		if f.in != nil {
			*f.out = *f.in
		}
	}
	p.CreatedAt = createdAt.UTC().Format(time.RFC3339Nano)
	return p, nil
}

// handlePayout is POST /v1/payouts: it creates a pending payout once per
// Idempotency-Key and answers 202; a repeat returns the first response.
func (s *Server) handlePayout(w http.ResponseWriter, r *http.Request) {
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	p, err := readTransfer(r, false)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		return
	}
	faults, ok := s.beforeTransfer(w, r)
	if !ok {
		return
	}
	settle := time.Duration(faults.PayoutSettleMS) * time.Millisecond
	if settle <= 0 {
		settle = DefaultPayoutSettle
	}
	c, ok := s.commitDetached(r, faults, func(ctx context.Context) committed {
		return s.onceForKey(ctx, key, p, http.StatusAccepted, func(tx pgx.Tx) ([]byte, error) {
			now := s.now().UTC().Truncate(time.Microsecond)
			po := Payout{ID: newID("po_"), Status: PayoutPending, Amount: p.amount, Currency: p.currency, PayeeID: p.payeeID,
				Memo: p.memo, ClientReference: p.clientReference, CreatedAt: now.Format(time.RFC3339Nano)}
			if _, err := tx.Exec(ctx, `
				INSERT INTO sim_payout (id, idempotency_key, client_reference, amount, currency, payee_id, memo, status, created_at, settle_at)
				VALUES ($1, $2, NULLIF($3, ''), $4::numeric, $5, $6, NULLIF($7, ''), 'pending', $8, $9)`,
				po.ID, key, po.ClientReference, po.Amount, po.Currency, po.PayeeID, po.Memo, now, now.Add(settle)); err != nil {
				return nil, fmt.Errorf("insert payout: %w", err)
			}
			s.logger.InfoContext(ctx, "payout accepted", "idempotency_key", key, "settle_in", settle)
			return json.Marshal(po)
		})
	})
	if !ok {
		return
	}
	if errors.Is(c.err, errKeyReuse) {
		writeError(w, http.StatusConflict, CodeIdempotencyKeyReuse,
			"this Idempotency-Key was already used with different parameters")
		return
	}
	s.answerCommitted(w, r, faults, c)
}

// handlePayoutStatus is GET /v1/payouts?client_reference=X: the payout's
// current state, or 404.
func (s *Server) handlePayoutStatus(w http.ResponseWriter, r *http.Request) {
	ref, _, ok := s.beforeStatus(w, r)
	if !ok {
		return
	}
	// Settle what is due first, so that an answer never lags the settle time.
	s.settleDue(r.Context())
	p, err := scanPayout(s.pool.QueryRow(r.Context(), `SELECT `+payoutColumns+`
		FROM sim_payout WHERE client_reference = $1 ORDER BY created_at DESC, id DESC LIMIT 1`, ref))
	if errors.Is(err, pgx.ErrNoRows) {
		writeError(w, http.StatusNotFound, CodeNotFound, "no payout has this client_reference")
		return
	}
	if err != nil {
		s.internalError(w, r, fmt.Errorf("find payout: %w", err))
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// settleLoop settles due payouts every settleEvery until ctx ends.
func (s *Server) settleLoop(ctx context.Context) {
	t := time.NewTicker(settleEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.settleDue(ctx)
		}
	}
}

// settleDue settles every pending payout whose settle time has come: a payee
// starting with FailingPayeePrefix fails, every other one is paid. Each
// payout is settled by exactly one statement across simulator processes, so
// its webhook event is sent once.
func (s *Server) settleDue(ctx context.Context) {
	rows, err := s.pool.Query(ctx, `
		UPDATE sim_payout SET
			status = CASE WHEN starts_with(payee_id, $2) THEN 'failed' ELSE 'paid' END,
			failure_reason = CASE WHEN starts_with(payee_id, $2) THEN $3 END,
			settled_at = $1
		WHERE status = 'pending' AND settle_at <= $1
		RETURNING `+payoutColumns, s.now(), FailingPayeePrefix, payoutFailureReason)
	if err != nil {
		if ctx.Err() == nil {
			s.logger.WarnContext(ctx, "settle payouts", "err", err)
		}
		return
	}
	settled, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Payout, error) { return scanPayout(row) })
	if err != nil {
		s.logger.WarnContext(ctx, "settle payouts", "err", err)
		return
	}
	for _, p := range settled {
		s.logger.InfoContext(ctx, "payout settled", "id", p.ID, "status", p.Status, "client_reference", p.ClientReference)
		go s.postWebhook(context.WithoutCancel(ctx), p)
	}
}

// webhookAttempts bounds the deliveries of one event.
const webhookAttempts = 3

// postWebhook POSTs p's final state to the configured webhook, signed, with
// a few retries; without a webhook it does nothing.
func (s *Server) postWebhook(ctx context.Context, p Payout) {
	var url, secret string
	err := s.pool.QueryRow(ctx, `SELECT url, secret FROM sim_webhook WHERE id`).Scan(&url, &secret)
	if errors.Is(err, pgx.ErrNoRows) {
		return
	}
	if err != nil {
		s.logger.WarnContext(ctx, "webhook config", "err", err)
		return
	}
	body, err := json.Marshal(WebhookEvent{Type: "payout." + p.Status, Data: p})
	if err != nil {
		return
	}
	client := &http.Client{Timeout: 5 * time.Second}
	for attempt := 1; attempt <= webhookAttempts; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			s.logger.WarnContext(ctx, "webhook request", "err", err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(SignatureHeader, Sign(secret, s.now(), body))
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			s.logger.InfoContext(ctx, "webhook delivered", "id", p.ID, "status", resp.StatusCode, "attempt", attempt)
			if resp.StatusCode < 500 {
				return
			}
		} else {
			s.logger.WarnContext(ctx, "webhook delivery failed", "id", p.ID, "attempt", attempt, "err", err)
		}
		time.Sleep(time.Duration(attempt) * 500 * time.Millisecond)
	}
}

// webhookRequest is the body of PUT /_sim/webhook.
type webhookRequest struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

func (s *Server) handlePutWebhook(w http.ResponseWriter, r *http.Request) {
	var req webhookRequest
	if err := decodeJSON(r, &req, true); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		return
	}
	if !strings.HasPrefix(req.URL, "http://") && !strings.HasPrefix(req.URL, "https://") {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "url must be an absolute http(s) URL")
		return
	}
	if req.Secret == "" {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "secret is required: events are signed with it")
		return
	}
	if _, err := s.pool.Exec(r.Context(), `
		INSERT INTO sim_webhook (id, url, secret) VALUES (true, $1, $2)
		ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, secret = EXCLUDED.secret`, req.URL, req.Secret); err != nil {
		s.internalError(w, r, fmt.Errorf("store webhook: %w", err))
		return
	}
	s.logger.InfoContext(r.Context(), "webhook set", "url", req.URL)
	writeJSON(w, http.StatusOK, map[string]string{"url": req.URL})
}

func (s *Server) handleDeleteWebhook(w http.ResponseWriter, r *http.Request) {
	if _, err := s.pool.Exec(r.Context(), `DELETE FROM sim_webhook`); err != nil {
		s.internalError(w, r, fmt.Errorf("delete webhook: %w", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "cleared"})
}
