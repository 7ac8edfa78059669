package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Transfer is the JSON of an executed transfer, as POST /v1/transfers,
// POST /legacy/transfers and GET /legacy/transfers answer it.
type Transfer struct {
	// ID is the transfer's business reference, "tr_" and random hex.
	ID string `json:"id"`
	// Status is always "succeeded": only executed transfers exist.
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
	// CreatedAt is when the transfer executed, RFC 3339 in UTC.
	CreatedAt string `json:"created_at"`
}

// IdempotencyKeyHeader is the header POST /v1/transfers requires.
const IdempotencyKeyHeader = "Idempotency-Key"

// maxKeyLength bounds Idempotency-Key and client_reference values.
const maxKeyLength = 255

// Transfer kinds in sim_transfer.kind.
const (
	kindIdempotent = "idempotent"
	kindLegacy     = "legacy"
)

// newTransfer builds the transfer p would execute, now.
func (s *Server) newTransfer(p transferParams) Transfer {
	return Transfer{
		ID: newID("tr_"), Status: "succeeded",
		Amount: p.amount, Currency: p.currency, PayeeID: p.payeeID,
		Memo: p.memo, ClientReference: p.clientReference,
		// PostgreSQL keeps microseconds: truncate so a status lookup answers
		// the same created_at.
		CreatedAt: s.now().UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano),
	}
}

// execer is what insertTransfer needs: a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// insertTransfer records t, the side effect, in q.
func insertTransfer(ctx context.Context, q execer, kind, idemKey string, t Transfer) error {
	_, err := q.Exec(ctx, `
		INSERT INTO sim_transfer (id, kind, idempotency_key, client_reference, amount, currency, payee_id, memo, created_at)
		VALUES ($1, $2, NULLIF($3, ''), NULLIF($4, ''), $5::numeric, $6, $7, NULLIF($8, ''), $9::timestamptz)`,
		t.ID, kind, idemKey, t.ClientReference, t.Amount, t.Currency, t.PayeeID, t.Memo, t.CreatedAt)
	if err != nil {
		return fmt.Errorf("insert transfer: %w", err)
	}
	return nil
}

// insufficientFunds is the stored and answered body of a refused transfer.
func insufficientFunds(p transferParams) errorBody {
	return errorBody{Error: CodeInsufficientFunds, Message: "amount " + p.amount + " exceeds the available balance of 10000; nothing was transferred"}
}

// handleTransfer is POST /v1/transfers: executes once per Idempotency-Key.
//
// The key's first response is stored in sim_idempotency_key in the same
// transaction as the transfer. A concurrent request with the same key blocks
// on the unique index until that transaction ends, then finds the stored
// response and replays it; so exactly one execution is recorded per key,
// across requests and across simulator processes.
func (s *Server) handleTransfer(w http.ResponseWriter, r *http.Request) {
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
	c, ok := s.commitDetached(r, faults, func(ctx context.Context) committed {
		c := s.onceForKey(ctx, key, p, http.StatusCreated, func(tx pgx.Tx) ([]byte, error) {
			t := s.newTransfer(p)
			if err := insertTransfer(ctx, tx, kindIdempotent, key, t); err != nil {
				return nil, err
			}
			return json.Marshal(t)
		})
		if c.executed {
			s.logger.InfoContext(ctx, "transfer executed", "kind", kindIdempotent, "idempotency_key", key)
		}
		return c
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

// idempotencyKey reads the request's Idempotency-Key, answering 400 itself
// (and returning false) when it is missing or too long.
func idempotencyKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	key := r.Header.Get(IdempotencyKeyHeader)
	if strings.TrimSpace(key) == "" {
		writeError(w, http.StatusBadRequest, CodeMissingIdempotencyKey, "the Idempotency-Key header is required")
		return "", false
	}
	if len(key) > maxKeyLength {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("Idempotency-Key is longer than %d bytes", maxKeyLength))
		return "", false
	}
	return key, true
}

// errKeyReuse is an Idempotency-Key sent again with other parameters.
var errKeyReuse = errors.New("idempotency key reused with different parameters")

// onceForKey executes p under key unless the key already has a response,
// and returns the key's response. create records the side effect in tx and
// returns the success body (answered with status); an amount above the
// balance is refused 422 instead, and that refusal is the key's response
// too.
//
// The key's first response is stored in sim_idempotency_key in the same
// transaction as the side effect. A concurrent request with the same key
// blocks on the unique index until that transaction ends, then finds the
// stored response and replays it; so exactly one execution is recorded per
// key, across requests and across simulator processes.
func (s *Server) onceForKey(ctx context.Context, key string, p transferParams, status int,
	create func(tx pgx.Tx) ([]byte, error)) committed {
	hash := p.hash()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return committed{err: fmt.Errorf("begin: %w", err)}
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// Take the key before the side effect: a concurrent first request waits here.
	var body []byte
	if p.exceedsFunds {
		status = http.StatusUnprocessableEntity
		if body, err = json.Marshal(insufficientFunds(p)); err != nil {
			return committed{err: fmt.Errorf("encode response: %w", err)}
		}
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO sim_idempotency_key (idem_key, request_hash, status_code, response_body)
		VALUES ($1, $2, $3, ''::bytea)
		ON CONFLICT (idem_key) DO NOTHING`, key, hash, status)
	if err != nil {
		return committed{err: fmt.Errorf("claim idempotency key: %w", err)}
	}
	if tag.RowsAffected() == 0 {
		// The key's first request committed (ON CONFLICT waited for it):
		// read its response in a fresh statement, which sees that commit.
		var storedHash string
		if err := tx.QueryRow(ctx, `
			SELECT request_hash, status_code, response_body FROM sim_idempotency_key WHERE idem_key = $1`,
			key).Scan(&storedHash, &status, &body); err != nil {
			return committed{err: fmt.Errorf("read idempotency key: %w", err)}
		}
		if storedHash != hash {
			return committed{err: errKeyReuse}
		}
		return committed{status: status, body: body, replayed: true}
	}
	executed := !p.exceedsFunds
	if executed {
		if body, err = create(tx); err != nil {
			return committed{err: err}
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE sim_idempotency_key SET response_body = $2 WHERE idem_key = $1`, key, body); err != nil {
		return committed{err: fmt.Errorf("store response: %w", err)}
	}
	if err := tx.Commit(ctx); err != nil {
		return committed{err: fmt.Errorf("commit: %w", err)}
	}
	return committed{status: status, body: body, executed: executed}
}

// handleLegacyTransfer is POST /legacy/transfers: it ignores Idempotency-Key
// and executes on every call, which is the danger the gateway guards against.
func (s *Server) handleLegacyTransfer(w http.ResponseWriter, r *http.Request) {
	p, err := readTransfer(r, true)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		return
	}
	if len(p.clientReference) > maxKeyLength {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("client_reference is longer than %d bytes", maxKeyLength))
		return
	}
	faults, ok := s.beforeTransfer(w, r)
	if !ok {
		return
	}
	if p.exceedsFunds {
		writeJSON(w, http.StatusUnprocessableEntity, insufficientFunds(p))
		return
	}
	c, ok := s.commitDetached(r, faults, func(ctx context.Context) committed {
		t := s.newTransfer(p)
		if err := insertTransfer(ctx, s.pool, kindLegacy, "", t); err != nil {
			return committed{err: err}
		}
		s.logger.InfoContext(ctx, "transfer executed", "kind", kindLegacy, "client_reference", p.clientReference)
		body, err := json.Marshal(t)
		return committed{status: http.StatusCreated, body: body, executed: true, err: err}
	})
	if !ok {
		return
	}
	s.answerCommitted(w, r, faults, c)
}

// beforeStatus reads a status request's client_reference and applies the
// faults of status requests (latency_ms, status_unavailable); it answers
// the request itself, and returns false, when the reference is missing or a
// fault refuses it.
func (s *Server) beforeStatus(w http.ResponseWriter, r *http.Request) (string, Faults, bool) {
	ref := r.URL.Query().Get("client_reference")
	if ref == "" {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "the client_reference query parameter is required")
		return "", Faults{}, false
	}
	faults, ok := s.beforeRequest(w, r)
	if !ok {
		return "", Faults{}, false
	}
	if faults.StatusUnavailable {
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "injected failure (status_unavailable): the status endpoint is down")
		return "", Faults{}, false
	}
	return ref, faults, true
}

// handleLegacyStatus is GET /legacy/transfers?client_reference=X: the most
// recent transfer of that reference, or 404.
func (s *Server) handleLegacyStatus(w http.ResponseWriter, r *http.Request) {
	ref, faults, ok := s.beforeStatus(w, r)
	if !ok {
		return
	}
	var (
		t         Transfer
		memo, cr  *string
		createdAt time.Time
	)
	err := s.pool.QueryRow(r.Context(), `
		SELECT id, amount::text, currency, payee_id, memo, client_reference, created_at
		FROM sim_transfer WHERE client_reference = $1 AND created_at <= $2
		ORDER BY created_at DESC, id DESC LIMIT 1`, ref, s.now().Add(-time.Duration(faults.StatusLagMS)*time.Millisecond)).
		Scan(&t.ID, &t.Amount, &t.Currency, &t.PayeeID, &memo, &cr, &createdAt)
	if errors.Is(err, pgx.ErrNoRows) {
		writeError(w, http.StatusNotFound, CodeNotFound, "no transfer has this client_reference")
		return
	}
	if err != nil {
		s.internalError(w, r, fmt.Errorf("find transfer: %w", err))
		return
	}
	t.Status = "succeeded"
	if memo != nil {
		t.Memo = *memo
	}
	if cr != nil {
		t.ClientReference = *cr
	}
	t.CreatedAt = createdAt.UTC().Format(time.RFC3339Nano)
	writeJSON(w, http.StatusOK, t)
}

// handleExecutions is GET /_sim/executions?ref=X: how many transfers executed
// for that Idempotency-Key or client_reference.
func (s *Server) handleExecutions(w http.ResponseWriter, r *http.Request) {
	ref := r.URL.Query().Get("ref")
	if ref == "" {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "the ref query parameter is required")
		return
	}
	var n int64
	if err := s.pool.QueryRow(r.Context(), `
		SELECT (SELECT count(*) FROM sim_transfer WHERE idempotency_key = $1 OR client_reference = $1)
			+ (SELECT count(*) FROM sim_payout WHERE idempotency_key = $1 OR client_reference = $1)`, ref).Scan(&n); err != nil {
		s.internalError(w, r, fmt.Errorf("count executions: %w", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"count": n})
}

// handleReset is POST /_sim/reset: forgets every transfer, key and fault.
func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	tx, err := s.pool.Begin(r.Context())
	if err != nil {
		s.internalError(w, r, fmt.Errorf("begin reset: %w", err))
		return
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(r.Context())) }()
	if _, err := tx.Exec(r.Context(), `TRUNCATE sim_transfer, sim_idempotency_key, sim_payout`); err != nil {
		s.internalError(w, r, fmt.Errorf("truncate: %w", err))
		return
	}
	if _, err := tx.Exec(r.Context(), `UPDATE sim_faults SET latency_ms = 0, fail_next = 0, hang_after_commit_ms = 0, status_unavailable = false,
		commit_delay_ms = 0, status_lag_ms = 0, fail_after_commit = 0, quote_fail_next = 0, payout_settle_ms = 0, quote_ttl_ms = 0`); err != nil {
		s.internalError(w, r, fmt.Errorf("clear faults: %w", err))
		return
	}
	if err := tx.Commit(r.Context()); err != nil {
		s.internalError(w, r, fmt.Errorf("commit reset: %w", err))
		return
	}
	s.logger.InfoContext(r.Context(), "simulator reset")
	writeJSON(w, http.StatusOK, map[string]string{"status": "reset"})
}
