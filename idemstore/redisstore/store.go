// Package redisstore is the fast path of idemstore: the acquire and finalize
// Lua scripts of docs/contract.md §5 ("The fast path's two scripts") on one
// Redis hash per operation, key idem:{<operation_id>}. The hash tag keeps
// every key of one operation in one cluster slot.
//
// Redis is not the truth (it loses data on failover or FLUSHALL); the
// combined store checks the PostgreSQL truth behind it.
package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// Store is the Redis fast path: an idemstore.FastPath.
type Store struct {
	rdb redis.UniversalClient
	// results keeps the result blobs of finished operations decoded.
	results *results
}

var _ idemstore.FastPath = (*Store)(nil)

// New returns a store on rdb. The caller owns rdb and closes it.
func New(rdb redis.UniversalClient) *Store {
	return &Store{rdb: rdb, results: newResults(resultsSize)}
}

// An operation's key is keyPrefix + operation_id + keySuffix: the hash tag
// keeps every key of one operation in one cluster slot.
const (
	keyPrefix = "idem:{"
	keySuffix = "}"
)

// Key returns the Redis key of operation opID: idem:{<operation_id>}.
func Key(opID string) string { return keyPrefix + opID + keySuffix }

// Client returns the Redis client the store uses.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// resultBlob is what the hash's result field holds: everything a replay of a
// terminal record must be told.
type resultBlob struct {
	Result         json.RawMessage `json:"result,omitempty"`
	ResultRef      string          `json:"result_ref,omitempty"`
	Reason         string          `json:"reason,omitempty"`
	FailureKind    string          `json:"failure_kind,omitempty"`
	ResolvedBy     string          `json:"resolved_by,omitempty"`
	ResolutionNote string          `json:"resolution_note,omitempty"`
	CompletedAt    int64           `json:"completed_at,omitempty"` // unix milliseconds
}

// Acquire runs the acquire script for c and, in the same round trip, the
// script that records c's intent in its subject's recent-intent index.
func (s *Store) Acquire(ctx context.Context, c idemstore.Claim) (idemstore.FastClaim, error) {
	if c.InFlightTTL <= 0 {
		return idemstore.FastClaim{}, fmt.Errorf("acquire %s: in-flight TTL must be positive, got %s", c.OperationID, c.InFlightTTL)
	}
	now := time.Now()
	var exp int64
	if !c.FingerprintExp.IsZero() {
		exp = c.FingerprintExp.Unix()
	}
	acquire := scriptCall{script: acquireScript, keys: []string{Key(c.OperationID)}, args: []any{
		c.ParamHash, c.Owner, c.InFlightTTL.Milliseconds(), c.Subject, c.Scope, now.UnixMilli(), exp, c.ApprovalSHA256, c.ActingClient,
	}}
	record := recordIntent(c, now)
	runPipelined(ctx, s.rdb, &acquire, &record)
	reply, err := acquire.cmd.Slice()
	if err != nil {
		return idemstore.FastClaim{}, fmt.Errorf("acquire %s: %w", c.OperationID, interpretError(err))
	}
	d, err := s.decodeAcquire(c, now, reply)
	if err != nil {
		return idemstore.FastClaim{}, fmt.Errorf("acquire %s: %w", c.OperationID, err)
	}
	indexed := record.cmd.Err() == nil || errors.Is(record.cmd.Err(), redis.Nil)
	return idemstore.FastClaim{ClaimDecision: d, Indexed: indexed, Marker: recordedMarker(record.cmd)}, nil
}

// decodeAcquire turns the acquire script's reply into a ClaimDecision.
func (s *Store) decodeAcquire(c idemstore.Claim, now time.Time, reply []any) (idemstore.ClaimDecision, error) {
	str := func(i int) string {
		if i < len(reply) {
			if s, ok := reply[i].(string); ok {
				return s
			}
		}
		return ""
	}
	if len(reply) < 1 {
		return idemstore.ClaimDecision{}, fmt.Errorf("unexpected acquire reply %v", reply)
	}
	switch outcome := idemstore.ClaimOutcome(str(0)); outcome {
	case idemstore.OutcomeAcquired:
		claimedAt := time.UnixMilli(now.UnixMilli())
		return idemstore.ClaimDecision{Outcome: outcome, Owner: c.Owner, ClaimedAt: claimedAt, Record: idemstore.Record{
			OperationID: c.OperationID, Subject: c.Subject, Scope: c.Scope, ParamHash: c.ParamHash,
			State: operation.StateInFlight, Owner: c.Owner, ClaimedAt: claimedAt, FingerprintExp: c.FingerprintExp,
			ApprovalSHA256: c.ApprovalSHA256, ActingClient: c.ActingClient,
		}}, nil
	case idemstore.OutcomeParamMismatch:
		return idemstore.ClaimDecision{Outcome: outcome}, nil
	case idemstore.OutcomeDone, idemstore.OutcomeFailed:
		rec := idemstore.Record{OperationID: c.OperationID, ParamHash: c.ParamHash, State: terminalState(outcome),
			Subject: str(2), Scope: str(3), ApprovalSHA256: str(4), ActingClient: str(5)}
		if err := s.results.decode(str(1), &rec); err != nil {
			return idemstore.ClaimDecision{}, err
		}
		return idemstore.ClaimDecision{Outcome: outcome, Record: rec}, nil
	case idemstore.OutcomeInFlight:
		claimedAt := parseMillis(str(2))
		return idemstore.ClaimDecision{Outcome: outcome, Owner: str(1), ClaimedAt: claimedAt, Record: idemstore.Record{
			OperationID: c.OperationID, ParamHash: c.ParamHash, State: operation.StateInFlight, Owner: str(1), ClaimedAt: claimedAt,
			ActingClient: str(3),
		}}, nil
	case idemstore.OutcomeLimitExceeded, idemstore.OutcomeMandateRefused: // budgets and mandates are the truth's alone; the script never answers them
		return idemstore.ClaimDecision{}, fmt.Errorf("unexpected acquire reply %v", reply)
	default:
		return idemstore.ClaimDecision{}, fmt.Errorf("unexpected acquire reply %v", reply)
	}
}

// Finalize runs the owner-checked finalize script.
func (s *Store) Finalize(ctx context.Context, f idemstore.Finalization) error {
	if !f.State.Terminal() {
		return fmt.Errorf("finalize %s: state %q is not DONE or FAILED", f.OperationID, f.State)
	}
	if f.TerminalTTL <= 0 {
		return fmt.Errorf("finalize %s: terminal TTL must be positive, got %s", f.OperationID, f.TerminalTTL)
	}
	completedAt := f.CompletedAt
	if completedAt.IsZero() {
		completedAt = time.Now()
	}
	blob, err := encodeResult(idemstore.Record{
		Result: f.Result, ResultRef: f.ResultRef, Reason: f.Reason, FailureKind: f.FailureKind,
		ResolvedBy: f.ResolvedBy, ResolutionNote: f.ResolutionNote, CompletedAt: completedAt,
	})
	if err != nil {
		return fmt.Errorf("finalize %s: %w", f.OperationID, err)
	}
	reply, err := finalizeScript.Run(ctx, s.rdb, []string{Key(f.OperationID)},
		f.Owner, string(f.State), blob, f.TerminalTTL.Milliseconds(), OutcomesChannel).Text()
	if err != nil {
		return fmt.Errorf("finalize %s: %w", f.OperationID, interpretError(err))
	}
	if err := decodeStatus(reply); err != nil {
		return fmt.Errorf("finalize %s: %w", f.OperationID, err)
	}
	return nil
}

// Takeover moves the IN_FLIGHT claim of p.OperationID from p.FromOwner to p.ToOwner
// and gives it the fresh in-flight TTL p.TTL; ErrNotOwner when the key is missing, not
// IN_FLIGHT, or held by another owner.
func (s *Store) Takeover(ctx context.Context, p idemstore.TakeoverParams) error {
	if p.TTL <= 0 {
		return fmt.Errorf("takeover %s: TTL must be positive, got %s", p.OperationID, p.TTL)
	}
	reply, err := takeoverScript.Run(ctx, s.rdb, []string{Key(p.OperationID)},
		p.FromOwner, p.ToOwner, time.Now().UnixMilli(), p.TTL.Milliseconds()).Text()
	if err != nil {
		return fmt.Errorf("takeover %s: %w", p.OperationID, interpretError(err))
	}
	if err := decodeStatus(reply); err != nil {
		return fmt.Errorf("takeover %s: %w", p.OperationID, err)
	}
	return nil
}

// Release deletes the IN_FLIGHT claim of p.OperationID when p.Owner holds it, so
// that a claim that could not be acted on leaves nothing consumed;
// ErrNotOwner otherwise (a missing key included).
func (s *Store) Release(ctx context.Context, p idemstore.ReleaseParams) error {
	reply, err := releaseScript.Run(ctx, s.rdb, []string{Key(p.OperationID)}, p.Owner).Text()
	if err != nil {
		return fmt.Errorf("release %s: %w", p.OperationID, interpretError(err))
	}
	if err := decodeStatus(reply); err != nil {
		return fmt.Errorf("release %s: %w", p.OperationID, err)
	}
	return nil
}

// Refill unconditionally writes the terminal record p.Record with p.TTL,
// replacing whatever the key holds. It is used when the truth answered a
// terminal record that Redis had lost (FLUSHALL, failover).
func (s *Store) Refill(ctx context.Context, p idemstore.RefillParams) error {
	rec, ttl := p.Record, p.TTL
	if !rec.State.Terminal() {
		return fmt.Errorf("refill %s: state %q is not DONE or FAILED", rec.OperationID, rec.State)
	}
	if ttl <= 0 {
		return fmt.Errorf("refill %s: TTL must be positive, got %s", rec.OperationID, ttl)
	}
	blob, err := encodeResult(rec)
	if err != nil {
		return fmt.Errorf("refill %s: %w", rec.OperationID, err)
	}
	var claimedAt, exp string
	if !rec.ClaimedAt.IsZero() {
		claimedAt = strconv.FormatInt(rec.ClaimedAt.UnixMilli(), 10)
	}
	if !rec.FingerprintExp.IsZero() {
		exp = strconv.FormatInt(rec.FingerprintExp.Unix(), 10)
	}
	err = refillScript.Run(ctx, s.rdb, []string{Key(rec.OperationID)},
		string(rec.State), rec.ParamHash, rec.Owner, rec.Subject, rec.Scope, claimedAt, exp, blob, ttl.Milliseconds(),
		rec.ApprovalSHA256, OutcomesChannel, rec.ActingClient).Err()
	if err != nil {
		return fmt.Errorf("refill %s: %w", rec.OperationID, interpretError(err))
	}
	return nil
}

// Get reads the hash of operation opID; ErrNotFound when it does not exist.
func (s *Store) Get(ctx context.Context, opID string) (idemstore.Record, error) {
	h, err := s.rdb.HGetAll(ctx, Key(opID)).Result()
	if err != nil {
		return idemstore.Record{}, fmt.Errorf("get %s: %w", opID, interpretError(err))
	}
	if len(h) == 0 {
		return idemstore.Record{}, fmt.Errorf("get %s: %w", opID, idemstore.ErrNotFound)
	}
	rec := idemstore.Record{
		OperationID: opID, Subject: h["subject"], Scope: h["scope"], ParamHash: h["param_hash"],
		State: operation.State(h["state"]), Owner: h["owner"], ClaimedAt: parseMillis(h["claimed_at"]),
		ApprovalSHA256: h["approval_sha256"], ActingClient: h["acting_client"],
	}
	if exp, err := strconv.ParseInt(h["exp"], 10, 64); err == nil && exp > 0 {
		rec.FingerprintExp = time.Unix(exp, 0)
	}
	if rec.State.Terminal() {
		if err := s.results.decode(h["result"], &rec); err != nil {
			return idemstore.Record{}, fmt.Errorf("get %s: %w", opID, err)
		}
	}
	return rec, nil
}

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping redis: %w", interpretError(err))
	}
	return nil
}

// decodeStatus turns a status reply of the finalize, takeover and release
// scripts into an error.
func decodeStatus(reply string) error {
	switch reply {
	case "OK":
		return nil
	case "NOT_OWNER":
		return idemstore.ErrNotOwner
	case "ALREADY_TERMINAL":
		return idemstore.ErrAlreadyTerminal
	default:
		return fmt.Errorf("unexpected script reply %q", reply)
	}
}

// encodeResult builds the result blob of a terminal record.
func encodeResult(rec idemstore.Record) (string, error) {
	b := resultBlob{
		Result: rec.Result, ResultRef: rec.ResultRef, Reason: rec.Reason, FailureKind: string(rec.FailureKind),
		ResolvedBy: rec.ResolvedBy, ResolutionNote: rec.ResolutionNote,
	}
	if len(b.Result) > 0 && !json.Valid(b.Result) {
		return "", errors.New("result is not valid JSON")
	}
	if !rec.CompletedAt.IsZero() {
		b.CompletedAt = rec.CompletedAt.UnixMilli()
	}
	out, err := json.Marshal(b)
	if err != nil {
		return "", fmt.Errorf("encode result: %w", err)
	}
	return string(out), nil
}

// parseMillis parses unix milliseconds; zero time when empty or invalid.
func parseMillis(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// terminalState is the state of the record a DONE or FAILED acquire reply
// replays.
func terminalState(o idemstore.ClaimOutcome) operation.State {
	if o == idemstore.OutcomeDone {
		return operation.StateDone
	}
	return operation.StateFailed
}
