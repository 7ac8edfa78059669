// Package pgstore is the truth of idemstore: the PostgreSQL table
// write_record with a unique idem_key (the fingerprint's nonce). Claims are
// INSERT ... ON CONFLICT DO NOTHING; a collision is never an error: the
// existing row is read back and answered. Only this store holds
// NEEDS_REVIEW.
//
// PostgreSQL has no TTLs: an IN_FLIGHT claim lives until it is finalized,
// taken over or marked for review, and terminal records are deleted by Reap.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// Store is the PostgreSQL truth: an idemstore.Store without a fast path.
type Store struct {
	pool *pgxpool.Pool
}

var _ idemstore.Store = (*Store)(nil)

// Open connects to databaseURL, applies the migrations and returns the store.
func Open(ctx context.Context, databaseURL string) (*Store, error) {
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		return nil, fmt.Errorf("open truth database: %w", err)
	}
	s := New(pool)
	if err := s.Migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open truth database: %w", err)
	}
	return s, nil
}

// New returns a store on pool; call Migrate before the first use of a new database.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Pool returns the connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool. It is safe to call more than once.
func (s *Store) Close() { s.pool.Close() }

// Ready checks that PostgreSQL answers.
func (s *Store) Ready(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping truth database: %w", interpretError(err))
	}
	return nil
}

// recordColumns are the columns scanRecord reads, in order.
const recordColumns = `idem_key, subject, coalesce(acting_client, ''), scope, param_hash, state, owner, result, result_ref, reason,
	failure_kind, resolved_by, resolution_note, downstream_state, resolution_evidence_url, resolved_at, bound_params,
	approval_sha256, coalesce(mandate_id, ''), mandate_sha256, fingerprint_exp, claimed_at, created_at, updated_at, completed_at`

// scanRecord reads one row of recordColumns.
func scanRecord(row pgx.Row) (idemstore.Record, error) {
	var rec idemstore.Record
	var result, bound []byte
	var resolvedAt, completedAt *time.Time
	err := row.Scan(&rec.OperationID, &rec.Subject, &rec.ActingClient, &rec.Scope, &rec.ParamHash, &rec.State, &rec.Owner, &result,
		&rec.ResultRef, &rec.Reason, &rec.FailureKind, &rec.ResolvedBy, &rec.ResolutionNote, &rec.DownstreamState, &rec.EvidenceURL,
		&resolvedAt, &bound, &rec.ApprovalSHA256, &rec.MandateID, &rec.MandateSHA256, &rec.FingerprintExp, &rec.ClaimedAt, &rec.CreatedAt, &rec.UpdatedAt, &completedAt)
	if err != nil {
		return idemstore.Record{}, err
	}
	if len(result) > 0 {
		rec.Result = result
	}
	if len(bound) > 0 {
		rec.BoundParams = bound
	}
	if resolvedAt != nil {
		rec.ResolvedAt = *resolvedAt
	}
	if completedAt != nil {
		rec.CompletedAt = *completedAt
	}
	return rec, nil
}

// micros converts a TTL to the microseconds PostgreSQL multiplies with
// interval '1 microsecond'; nil (keep the stored value / SQL NULL) when d <= 0.
func micros(d time.Duration) any {
	if d <= 0 {
		return nil
	}
	return d.Microseconds()
}

// timeOrNil is t, or nil (SQL NULL) when t is zero.
func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// textOrNil is s, or nil (SQL NULL) when s is empty.
func textOrNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// jsonOrNil is the JSON text of b, or nil (SQL NULL) when b is empty.
func jsonOrNil(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// Degraded is always false: the truth has no fast path to bypass.
func (s *Store) Degraded() bool { return false }

// FinalizeFast does nothing: the truth has no fast path to refill.
func (s *Store) FinalizeFast(context.Context, idemstore.Finalization) error { return nil }

// Acquire claims c.OperationID in one statement, claim_operation (migrations
// 00010, 00013 and 00014): the insert, with c.Charge the check of its
// windows and the reservation of its amount, and with c.Mandate the check
// of the mandate under its row lock and the reservation of the amount and
// one of its count, atomically, in the claim's own transaction. Over budget
// it writes nothing and answers OutcomeLimitExceeded with the windows'
// usage; outside its mandate it writes nothing and answers
// OutcomeMandateRefused with the reason. On a unique collision the existing row is read back and
// decided by idemstore.DecideExisting (its budget is not checked again: it
// was when it was claimed). Every decision comes from the truth
// (TruthFound). c.InFlightTTL is not used: PostgreSQL claims do not expire.
func (s *Store) Acquire(ctx context.Context, c idemstore.Claim) (idemstore.ClaimDecision, error) {
	amount, currency, windows, err := chargeArgs(c.Charge)
	if err != nil {
		return idemstore.ClaimDecision{}, fmt.Errorf("acquire %s: %w", c.OperationID, err)
	}
	mID, mAmount, mCurrency, mPayee := mandateArgs(c.Mandate)
	// A row that collides can be reaped before it is read back; the claim
	// is then tried again (once is enough in practice; three is generous).
	for range 3 {
		var outcome string
		var usage []byte
		var claimedAt *time.Time
		var refusal *string
		var mandateSHA256 string
		err := s.pool.QueryRow(ctx, `SELECT outcome, usage, claimed_at, mandate_reason, mandate_sha256
			FROM claim_operation($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10::numeric, $11, $12::jsonb, $13::text,
				$14::text, $15::numeric, $16::text, $17::text)`,
			c.OperationID, c.Subject, c.Scope, c.ParamHash, c.Owner, timeOrNil(c.FingerprintExp), micros(c.TerminalTTL),
			jsonOrNil(c.BoundParams), c.ApprovalSHA256, amount, currency, windows, textOrNil(c.ActingClient),
			mID, mAmount, mCurrency, mPayee).Scan(&outcome, &usage, &claimedAt, &refusal, &mandateSHA256)
		if err != nil {
			return idemstore.ClaimDecision{}, fmt.Errorf("acquire %s: %w", c.OperationID, interpretError(err))
		}
		used, err := decodeUsage(usage, c.Charge)
		if err != nil {
			return idemstore.ClaimDecision{}, fmt.Errorf("acquire %s: %w", c.OperationID, err)
		}
		switch outcome {
		case claimAcquired:
			if claimedAt == nil {
				return idemstore.ClaimDecision{}, fmt.Errorf("acquire %s: claimed without a time", c.OperationID)
			}
			rec := claimedRecord(c, *claimedAt)
			if c.Mandate != nil {
				rec.MandateID, rec.MandateSHA256 = c.Mandate.MandateID, mandateSHA256
			}
			return idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: rec.Owner, ClaimedAt: rec.ClaimedAt,
				Record: rec, TruthFound: true, Usage: used}, nil
		case claimLimitExceeded:
			return idemstore.ClaimDecision{Outcome: idemstore.OutcomeLimitExceeded, TruthFound: true, Usage: used}, nil
		case claimMandateRefused:
			if refusal == nil {
				return idemstore.ClaimDecision{}, fmt.Errorf("acquire %s: refused under its mandate without a reason", c.OperationID)
			}
			return idemstore.ClaimDecision{Outcome: idemstore.OutcomeMandateRefused, TruthFound: true,
				MandateRefusal: approval.Reason(*refusal)}, nil
		case claimExists:
		default:
			return idemstore.ClaimDecision{}, fmt.Errorf("acquire %s: unknown claim outcome %q", c.OperationID, outcome)
		}
		rec, err := s.get(ctx, c.OperationID)
		if errors.Is(err, idemstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return idemstore.ClaimDecision{}, fmt.Errorf("acquire %s: %w", c.OperationID, err)
		}
		return idemstore.DecideExisting(c, rec), nil
	}
	return idemstore.ClaimDecision{}, fmt.Errorf("acquire %s: record vanished between insert and read-back", c.OperationID)
}

// Outcomes of claim_operation.
const (
	claimAcquired       = "ACQUIRED"
	claimExists         = "EXISTS"
	claimLimitExceeded  = "LIMIT_EXCEEDED"
	claimMandateRefused = "MANDATE_REFUSED"
)

// claimedRecord is the row claim_operation inserted for c at claimedAt (the
// columns' defaults: created, updated and claimed at the same time).
func claimedRecord(c idemstore.Claim, claimedAt time.Time) idemstore.Record {
	exp := c.FingerprintExp
	if exp.IsZero() {
		exp = claimedAt
	}
	return idemstore.Record{OperationID: c.OperationID, Subject: c.Subject, ActingClient: c.ActingClient, Scope: c.Scope, ParamHash: c.ParamHash,
		State: operation.StateInFlight, Owner: c.Owner, BoundParams: c.BoundParams, FingerprintExp: exp, ApprovalSHA256: c.ApprovalSHA256,
		ClaimedAt: claimedAt, CreatedAt: claimedAt, UpdatedAt: claimedAt}
}

// Finalize moves an IN_FLIGHT or NEEDS_REVIEW record held by f.Owner to
// f.State. When nothing was updated the record is read back: missing or held
// by another owner is ErrNotOwner; already terminal with the same state is
// success (an activity retry; the first result stands); terminal with
// another state is ErrAlreadyTerminal. f.TerminalTTL, when positive,
// replaces the claim's terminal TTL; f.CompletedAt, when set, is the
// record's completed_at (else the database's clock).
func (s *Store) Finalize(ctx context.Context, f idemstore.Finalization) error {
	if !f.State.Terminal() {
		return fmt.Errorf("finalize %s: state %q is not DONE or FAILED", f.OperationID, f.State)
	}
	// The reservations (budget and mandate) are released in the same statement when the outcome
	// proves that nothing was executed (ReleasesBudget); kept otherwise.
	var updated int64
	err := s.pool.QueryRow(ctx, `
		WITH f AS (
			UPDATE write_record SET
				state = $3, result = $4::jsonb, result_ref = $5, reason = $6, resolved_by = $7, resolution_note = $8,
				failure_kind = $10, resolution_evidence_url = $11, resolved_at = $12,
				terminal_ttl = coalesce($9::bigint * interval '1 microsecond', terminal_ttl),
				reap_after = greatest(now() + coalesce($9::bigint * interval '1 microsecond', terminal_ttl), fingerprint_exp),
				completed_at = coalesce($14, now()), updated_at = now()
			WHERE idem_key = $1 AND owner = $2 AND state IN ('IN_FLIGHT', 'NEEDS_REVIEW')
			RETURNING idem_key
		), released AS (
			UPDATE budget_reservation SET released_at = now(), released_by = $10
			WHERE operation_id IN (SELECT idem_key FROM f) AND released_at IS NULL AND $13
		), released_mandate AS (
			UPDATE mandate_reservation SET released_at = now(), released_by = $10
			WHERE operation_id IN (SELECT idem_key FROM f) AND released_at IS NULL AND $13
		)
		SELECT count(*) FROM f`,
		f.OperationID, f.Owner, string(f.State), jsonOrNil(f.Result), f.ResultRef, f.Reason, f.ResolvedBy, f.ResolutionNote,
		micros(f.TerminalTTL), string(f.FailureKind), f.EvidenceURL, timeOrNil(f.ResolvedAt), f.ReleasesBudget(), timeOrNil(f.CompletedAt)).Scan(&updated)
	if err != nil {
		return fmt.Errorf("finalize %s: %w", f.OperationID, interpretError(err))
	}
	if updated == 1 {
		return nil
	}
	rec, err := s.get(ctx, f.OperationID)
	switch {
	case errors.Is(err, idemstore.ErrNotFound):
		return fmt.Errorf("finalize %s: %w", f.OperationID, idemstore.ErrNotOwner)
	case err != nil:
		return fmt.Errorf("finalize %s: %w", f.OperationID, err)
	case rec.Owner != f.Owner:
		return fmt.Errorf("finalize %s: %w", f.OperationID, idemstore.ErrNotOwner)
	case rec.State == f.State:
		return nil
	case rec.State.Terminal():
		return fmt.Errorf("finalize %s: %w", f.OperationID, idemstore.ErrAlreadyTerminal)
	default: // changed under us between the update and the read-back
		return fmt.Errorf("finalize %s: %w", f.OperationID, idemstore.ErrNotOwner)
	}
}

// Takeover moves the IN_FLIGHT record of p.OperationID from p.FromOwner to
// p.ToOwner; ErrNotOwner when it is missing, not IN_FLIGHT, or held by
// another owner. p.TTL is not used: PostgreSQL claims do not expire.
func (s *Store) Takeover(ctx context.Context, p idemstore.TakeoverParams) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE write_record SET owner = $3, claimed_at = now(), updated_at = now()
		WHERE idem_key = $1 AND owner = $2 AND state = 'IN_FLIGHT'`, p.OperationID, p.FromOwner, p.ToOwner)
	if err != nil {
		return fmt.Errorf("takeover %s: %w", p.OperationID, interpretError(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("takeover %s: %w", p.OperationID, idemstore.ErrNotOwner)
	}
	return nil
}

// Release deletes the IN_FLIGHT claim of p.OperationID that p.Owner holds: a claim whose
// workflow was never started, given back so that nothing is consumed.
// ErrNotFound when there is no record; ErrNotOwner when another owner holds
// it or it is no longer IN_FLIGHT (a record that ever left IN_FLIGHT is
// never deleted).
func (s *Store) Release(ctx context.Context, p idemstore.ReleaseParams) error {
	opID := p.OperationID
	// Its reservations go with it: nothing was started, nothing spent.
	var deleted int64
	err := s.pool.QueryRow(ctx, `
		WITH d AS (
			DELETE FROM write_record WHERE idem_key = $1 AND owner = $2 AND state = 'IN_FLIGHT' RETURNING idem_key
		), released AS (
			DELETE FROM budget_reservation WHERE operation_id IN (SELECT idem_key FROM d)
		), released_mandate AS (
			DELETE FROM mandate_reservation WHERE operation_id IN (SELECT idem_key FROM d)
		)
		SELECT count(*) FROM d`, opID, p.Owner).Scan(&deleted)
	if err != nil {
		return fmt.Errorf("release %s: %w", opID, interpretError(err))
	}
	if deleted == 1 {
		return nil
	}
	if _, err := s.get(ctx, opID); err != nil {
		return fmt.Errorf("release %s: %w", opID, err)
	}
	return fmt.Errorf("release %s: %w", opID, idemstore.ErrNotOwner)
}

// MarkNeedsReview moves an IN_FLIGHT record to NEEDS_REVIEW with p.Reason.
// Marking a record that is already NEEDS_REVIEW succeeds (an activity retry);
// a terminal record is ErrAlreadyTerminal, a missing one ErrNotFound.
func (s *Store) MarkNeedsReview(ctx context.Context, p idemstore.MarkNeedsReviewParams) error {
	opID, reason := p.OperationID, p.Reason
	tag, err := s.pool.Exec(ctx, `
		UPDATE write_record SET state = 'NEEDS_REVIEW', reason = $2, updated_at = now()
		WHERE idem_key = $1 AND state = 'IN_FLIGHT'`, opID, reason)
	if err != nil {
		return fmt.Errorf("mark needs review %s: %w", opID, interpretError(err))
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	rec, err := s.get(ctx, opID)
	switch {
	case err != nil:
		return fmt.Errorf("mark needs review %s: %w", opID, err)
	case rec.State == operation.StateNeedsReview:
		return nil
	case rec.State.Terminal():
		return fmt.Errorf("mark needs review %s: %w", opID, idemstore.ErrAlreadyTerminal)
	default:
		return fmt.Errorf("mark needs review %s: state changed concurrently to %s", opID, rec.State)
	}
}

// RecordDownstreamState keeps p.State, the business state the downstream
// reported, on the IN_FLIGHT record of p.OperationID. A record no longer in flight is
// left alone (its outcome is known); a missing one is ErrNotFound.
func (s *Store) RecordDownstreamState(ctx context.Context, p idemstore.DownstreamStateParams) error {
	opID, state := p.OperationID, p.State
	tag, err := s.pool.Exec(ctx, `
		UPDATE write_record SET downstream_state = $2, updated_at = now()
		WHERE idem_key = $1 AND state = 'IN_FLIGHT'`, opID, state)
	if err != nil {
		return fmt.Errorf("record downstream state %s: %w", opID, interpretError(err))
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	if _, err := s.get(ctx, opID); err != nil {
		return fmt.Errorf("record downstream state %s: %w", opID, err)
	}
	return nil
}

// RecordWebhook remembers a webhook event of p.Scope by its signature and
// reports whether it is the first time: false means a replay.
func (s *Store) RecordWebhook(ctx context.Context, p idemstore.WebhookParams) (bool, error) {
	scope, signature := p.Scope, p.Signature
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO webhook_receipt (signature, scope) VALUES ($1, $2) ON CONFLICT (signature) DO NOTHING`, signature, scope)
	if err != nil {
		return false, fmt.Errorf("record webhook %s: %w", scope, interpretError(err))
	}
	return tag.RowsAffected() == 1, nil
}

// Outcome is Get: the truth holds every field.
func (s *Store) Outcome(ctx context.Context, opID string) (idemstore.Record, error) {
	return s.Get(ctx, opID)
}

// Get reads the record of operation opID; ErrNotFound when there is none.
func (s *Store) Get(ctx context.Context, opID string) (idemstore.Record, error) {
	rec, err := s.get(ctx, opID)
	if err != nil {
		return idemstore.Record{}, fmt.Errorf("get %s: %w", opID, err)
	}
	return rec, nil
}

// get is Get without the wrapping, for read-backs inside other operations.
func (s *Store) get(ctx context.Context, opID string) (idemstore.Record, error) {
	rec, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordColumns+` FROM write_record WHERE idem_key = $1`, opID))
	if err != nil {
		return idemstore.Record{}, interpretError(err)
	}
	return rec, nil
}

// List returns up to f.Limit records in f.State (every state when empty)
// that entered it at least f.OlderThan ago: the newest first, or, with
// f.OlderThan, the oldest (the longest stuck) first.
func (s *Store) List(ctx context.Context, f idemstore.ListFilter) ([]idemstore.Record, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = idemstore.DefaultListLimit
	}
	order := `created_at DESC, id DESC`
	if f.OlderThan > 0 {
		order = `updated_at ASC, id ASC`
	}
	rows, err := s.pool.Query(ctx, `SELECT `+recordColumns+` FROM write_record
		WHERE ($1 = '' OR state = $1) AND ($2::bigint IS NULL OR updated_at <= now() - $2::bigint * interval '1 microsecond')
		ORDER BY `+order+` LIMIT $3`, string(f.State), micros(f.OlderThan), limit)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", f.State, interpretError(err))
	}
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (idemstore.Record, error) { return scanRecord(row) })
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", f.State, interpretError(err))
	}
	return recs, nil
}

// StateAge is how many records are in one state of one action and how long
// the oldest of them has been in it.
type StateAge struct {
	// State is the state.
	State operation.State
	// Scope is the action.
	Scope string
	// Count is the number of records.
	Count int
	// Oldest is when the oldest of them entered the state (updated_at).
	Oldest time.Time
}

// StateAges counts the records in the non-terminal states (IN_FLIGHT and
// NEEDS_REVIEW) by action, with the oldest one's age, for the metrics.
func (s *Store) StateAges(ctx context.Context) ([]StateAge, error) {
	rows, err := s.pool.Query(ctx, `SELECT state, scope, count(*), min(updated_at) FROM write_record
		WHERE state IN ('IN_FLIGHT', 'NEEDS_REVIEW') GROUP BY state, scope`)
	if err != nil {
		return nil, fmt.Errorf("state ages: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (StateAge, error) {
		var a StateAge
		err := row.Scan(&a.State, &a.Scope, &a.Count, &a.Oldest)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("state ages: %w", interpretError(err))
	}
	return out, nil
}

// FindRecent returns the most recent record of p.Subject, p.Scope and
// p.ParamHash created at or after p.Since that is IN_FLIGHT, DONE or NEEDS_REVIEW, or
// FAILED for any reason but a definite refusal by the downstream (the
// amnesia guard: the same intent recently done, still running, or failed in
// a way the user should hear about before it is tried again; a business
// refusal is the one failure known to have changed nothing). ErrNotFound
// when none. It only reads.
func (s *Store) FindRecent(ctx context.Context, p idemstore.FindRecentParams) (idemstore.Record, error) {
	subject, scope, paramHash, since := p.Subject, p.Scope, p.ParamHash, p.Since
	rec, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordColumns+` FROM write_record
		WHERE subject = $1 AND scope = $2 AND param_hash = $3 AND created_at >= $4
			AND (state IN ('IN_FLIGHT', 'DONE', 'NEEDS_REVIEW') OR (state = 'FAILED' AND failure_kind <> $5))
		ORDER BY created_at DESC, id DESC LIMIT 1`, subject, scope, paramHash, since, string(operation.FailureRefused)))
	if err != nil {
		return idemstore.Record{}, fmt.Errorf("find recent %s %s: %w", subject, scope, interpretError(err))
	}
	return rec, nil
}

// Reap deletes the terminal records whose reap_after is at or before now and
// returns how many it deleted.
//
// Why this is safe: reap_after = greatest(completed_at + terminal_ttl,
// fingerprint_exp). A fingerprint can never be consumed for the first time at
// or after its exp (the gateway refuses it as fingerprint_expired before
// touching the store), so once exp has passed no confirm can claim the operation
// again and start the operation anew; and once terminal_ttl has passed too,
// no replay of the outcome is owed any more (docs/contract.md §3: replayed until
// terminal_ttl). Both together mean the row can no longer change any answer
// except "unknown operation" for a status query past its retention.
// (Counting terminal_ttl from completed_at rather than created_at only keeps
// rows longer.)
//
// IN_FLIGHT and NEEDS_REVIEW records are never reaped, whatever their age:
// their outcome is not known, and deleting them would let the operation be claimed
// and executed again, or lose what an operator must decide.
//
// It also deletes the budget reservations older than
// idemstore.ReservationRetention (no window reaches back that far), and the webhook receipts received idemstore.WebhookReceiptRetention
// before now: an event that old is refused as stale by its timestamp
// anyway, so its receipt no longer keeps a replay out.
//
// It deletes in bounded batches within DefaultReapLimits (ReapBounded): a
// due row beyond the cap waits for the next call.
func (s *Store) Reap(ctx context.Context, now time.Time) (int64, error) {
	r, err := s.ReapBounded(ctx, now, DefaultReapLimits)
	return r.Removed, err
}

// DefaultReapLimits bounds a reap when its settings leave a limit at zero
// (Reap, and the worker's ONCEGATE_REAP_BATCH_ROWS and
// ONCEGATE_REAP_MAX_ROWS unset): batches short enough to hold their locks
// for milliseconds, and a tick that stops after a few hundred batches so
// the rest waits for the next tick rather than loading the table for long.
var DefaultReapLimits = ReapLimits{BatchRows: 1000, MaxRows: 200_000}

// ReapLimits bound the work of one ReapBounded call.
type ReapLimits struct {
	// BatchRows is how many rows one DELETE removes at most, each batch its
	// own short transaction; 0 means DefaultReapLimits.BatchRows.
	BatchRows int
	// MaxRows is how many rows of each table one call removes at most; the
	// rest is left for the next call. 0 means DefaultReapLimits.MaxRows.
	MaxRows int
}

// withDefaults fills the zero limits from DefaultReapLimits.
func (l ReapLimits) withDefaults() ReapLimits {
	if l.BatchRows <= 0 {
		l.BatchRows = DefaultReapLimits.BatchRows
	}
	if l.MaxRows <= 0 {
		l.MaxRows = DefaultReapLimits.MaxRows
	}
	return l
}

// ReapResult is what one ReapBounded call did.
type ReapResult struct {
	// Removed is how many write_record rows it deleted.
	Removed int64
	// Backlog is how many write_record rows were due at now but still
	// there when it returned: left by the per-call cap, or locked by a
	// transaction the batch skipped.
	Backlog int64
}

// reapBatch is one bounded batch of a reap: the rows due at $1, at most $2,
// oldest first, that no other transaction holds (SKIP LOCKED: a reap never
// waits on the hot path). The select walks the table's partial index on
// its time column (write_record_reap_after_idx, webhook_receipt_received_at_idx,
// budget_reservation_reserved_at_idx).
type reapBatch struct {
	table string
	query string
}

var (
	reapRecords = reapBatch{"write_record", `DELETE FROM write_record WHERE id = ANY(ARRAY(
		SELECT id FROM write_record
		WHERE state IN ('DONE', 'FAILED') AND reap_after IS NOT NULL AND reap_after <= $1
		ORDER BY reap_after LIMIT $2 FOR UPDATE SKIP LOCKED))`}
	reapWebhookReceipts = reapBatch{"webhook_receipt", `DELETE FROM webhook_receipt WHERE signature = ANY(ARRAY(
		SELECT signature FROM webhook_receipt WHERE received_at <= $1
		ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED))`}
	reapReservations = reapBatch{"budget_reservation", `DELETE FROM budget_reservation WHERE operation_id = ANY(ARRAY(
		SELECT operation_id FROM budget_reservation WHERE reserved_at <= $1
		ORDER BY reserved_at LIMIT $2 FOR UPDATE SKIP LOCKED))`}
)

// ReapBounded deletes what Reap deletes, in batches of at most
// limits.BatchRows rows, each its own statement and transaction, and stops
// after limits.MaxRows rows of each table or when ctx is done; the rest is
// left for the next call. It reports how many records it deleted and how
// many due records are left (the backlog).
func (s *Store) ReapBounded(ctx context.Context, now time.Time, limits ReapLimits) (ReapResult, error) {
	limits = limits.withDefaults()
	removed, err := s.reapInBatches(ctx, reapRecords, now, limits)
	if err != nil {
		return ReapResult{Removed: removed}, err
	}
	if _, err := s.reapInBatches(ctx, reapWebhookReceipts, now.Add(-idemstore.WebhookReceiptRetention), limits); err != nil {
		return ReapResult{Removed: removed}, err
	}
	if _, err := s.reapInBatches(ctx, reapReservations, now.Add(-idemstore.ReservationRetention), limits); err != nil {
		return ReapResult{Removed: removed}, err
	}
	var backlog int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM write_record
		WHERE state IN ('DONE', 'FAILED') AND reap_after IS NOT NULL AND reap_after <= $1`, now).Scan(&backlog); err != nil {
		return ReapResult{Removed: removed}, fmt.Errorf("reap: count the backlog: %w", interpretError(err))
	}
	return ReapResult{Removed: removed, Backlog: backlog}, nil
}

// reapInBatches runs b until a batch comes back short, limits.MaxRows rows
// are gone, or ctx is done, and returns how many rows it deleted.
func (s *Store) reapInBatches(ctx context.Context, b reapBatch, cutoff time.Time, limits ReapLimits) (int64, error) {
	var removed int64
	for removed < int64(limits.MaxRows) {
		if err := ctx.Err(); err != nil {
			return removed, fmt.Errorf("reap %s: %w", b.table, err)
		}
		batch := min(int64(limits.BatchRows), int64(limits.MaxRows)-removed)
		tag, err := s.pool.Exec(ctx, b.query, cutoff, batch)
		if err != nil {
			return removed, fmt.Errorf("reap %s: %w", b.table, interpretError(err))
		}
		removed += tag.RowsAffected()
		if tag.RowsAffected() < batch {
			break
		}
	}
	return removed, nil
}
