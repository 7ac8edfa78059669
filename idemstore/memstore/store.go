// Package memstore is an in-memory backend of idemstore, for tests: an
// idemstore.Store with the truth's behaviour (no fast path: every answer
// is the truth's, as pgstore's), the approvals, passkeys and invites of
// approval.Store, the budgets' reservations and windows, and the standing
// mandates of mandate.Store. It passes the suites the PostgreSQL truth
// passes (storetest.Exercise, ExerciseApprovals, ExerciseBudgets,
// ExerciseMandates), so a test that drives the gateway
// or a workflow on it meets the rules the real store keeps. One mutex
// guards everything: each method is atomic, as each of pgstore's
// statements or transactions is. What it holds lives as long as the
// value: never run the service on it.
//
// Besides the ports it offers a test what it needs to drive it: a clock
// (WithClock), failure injection (SetUnavailable, SetDegraded), counts of
// the calls it answered (Counts), the fast-path refills it was asked
// (Refills), and Put, which stores a record as given.
package memstore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/mandate"
	"github.com/oncegate/oncegate/operation"
)

// Store is the in-memory truth. The zero value is not usable: call New.
type Store struct {
	now func() time.Time

	mu           sync.Mutex
	seq          int64 // orders records as pgstore's id does
	records      map[string]*record
	webhooks     map[string]time.Time // a webhook event's signature → when it was received
	reservations map[string]*reservation
	resets       map[string]idemstore.BudgetReset
	approvals    map[string]approval.Record
	passkeys     map[string]approval.Passkey
	invites      map[string]*invite
	mandates     map[string]mandate.Mandate     // without usage: mandateWithUsage adds it
	mandateHolds map[string]*mandateReservation // an operation's id → what it holds of its mandate
	unavailable  bool
	degraded     bool
	counts       Counts
	refills      []idemstore.Finalization
}

var (
	_ idemstore.Store = (*Store)(nil)
	_ approval.Store  = (*Store)(nil)
	_ mandate.Store   = (*Store)(nil)
)

// record is one operation as the store keeps it.
type record struct {
	idemstore.Record
	// seq breaks ties between records created at the same time.
	seq int64
	// terminalTTL is how long the outcome is replayed once terminal.
	terminalTTL time.Duration
	// reapAfter is when Reap may delete the record (zero: never; set when
	// it turns terminal).
	reapAfter time.Time
}

// Option configures a Store.
type Option func(*Store)

// WithClock makes now the store's clock (time.Now by default): claims,
// finalizations, reservations and resets are stamped with it, and the
// budgets' windows end at it.
func WithClock(now func() time.Time) Option {
	return func(s *Store) { s.now = now }
}

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{now: time.Now, records: map[string]*record{}, webhooks: map[string]time.Time{},
		reservations: map[string]*reservation{}, resets: map[string]idemstore.BudgetReset{},
		approvals: map[string]approval.Record{}, passkeys: map[string]approval.Passkey{}, invites: map[string]*invite{},
		mandates: map[string]mandate.Mandate{}, mandateHolds: map[string]*mandateReservation{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Counts are the calls about operation records the store answered (a call
// refused while unavailable is not counted).
type Counts struct {
	// Reads are the calls that only read records: Get, Outcome,
	// FindRecent, List.
	Reads int
	// Writes are the calls that may change records: Acquire, Takeover,
	// Release, Finalize, FinalizeFast, MarkNeedsReview,
	// RecordDownstreamState, Reap.
	Writes int
	// Outcomes are the calls of Outcome (counted in Reads too).
	Outcomes int
}

// Counts returns the calls answered so far.
func (s *Store) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// SetUnavailable switches the store off (true) or on again: while off,
// every method but Degraded fails with an error wrapping
// idemstore.ErrUnavailable and changes nothing, as pgstore's do when
// PostgreSQL cannot be reached.
func (s *Store) SetUnavailable(off bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unavailable = off
}

// SetDegraded sets what Degraded reports (a combined store bypassing its
// fast path); nothing else changes.
func (s *Store) SetDegraded(degraded bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.degraded = degraded
}

// Refills returns the finalizations FinalizeFast was asked to write, in
// order.
func (s *Store) Refills() []idemstore.Finalization {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.refills)
}

// Put stores rec as the record of its operation, as it is, bypassing every
// rule of the state machine: for a test that needs a record the rules
// would not produce (a state set by hand, a field changed after the
// fact). A record put is never reaped.
func (s *Store) Put(rec idemstore.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := s.nextSeq()
	if old, ok := s.records[rec.OperationID]; ok {
		seq = old.seq
	}
	s.records[rec.OperationID] = &record{Record: cloneRecord(rec), seq: seq}
}

// A call's kind, for Counts.
type kind int

const (
	uncounted kind = iota
	read
	write
)

// answer says whether the store answers a call of kind k (the caller holds
// the lock) and counts it: ErrUnavailable while switched off.
func (s *Store) answer(k kind) error {
	if s.unavailable {
		return idemstore.ErrUnavailable
	}
	switch k {
	case read:
		s.counts.Reads++
	case write:
		s.counts.Writes++
	case uncounted:
	}
	return nil
}

// nextSeq is the next record's sequence number (the caller holds the lock).
func (s *Store) nextSeq() int64 {
	s.seq++
	return s.seq
}

// cloneRecord is rec with its own copies of its byte slices, so that no
// caller shares the store's.
func cloneRecord(rec idemstore.Record) idemstore.Record {
	rec.Result = bytes.Clone(rec.Result)
	rec.BoundParams = bytes.Clone(rec.BoundParams)
	return rec
}

// Acquire claims c.OperationID: an existing record is decided by
// idemstore.DecideExisting (its budget is not checked again); a new one
// is refused with OutcomeLimitExceeded when c.Charge does not fit one of
// its windows (nothing written), else inserted IN_FLIGHT with c.Charge
// reserved, atomically. Every decision is the truth's (TruthFound).
func (s *Store) Acquire(_ context.Context, c idemstore.Claim) (idemstore.ClaimDecision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(write); err != nil {
		return idemstore.ClaimDecision{}, fmt.Errorf("acquire %s: %w", c.OperationID, err)
	}
	if rec, ok := s.records[c.OperationID]; ok {
		return idemstore.DecideExisting(c, cloneRecord(rec.Record)), nil
	}
	now := s.now()
	var held mandate.Mandate
	if c.Mandate != nil {
		var refusal approval.Reason
		if held, refusal = s.checkMandate(c, now); refusal != "" {
			return idemstore.ClaimDecision{Outcome: idemstore.OutcomeMandateRefused, TruthFound: true, MandateRefusal: refusal}, nil
		}
	}
	var usage []operation.WindowUsage
	if c.Charge != nil && len(c.Charge.Windows) > 0 {
		usage = s.usage(c.Subject, *c.Charge, now)
		if !fits(*c.Charge, usage) {
			return idemstore.ClaimDecision{Outcome: idemstore.OutcomeLimitExceeded, TruthFound: true, Usage: usage}, nil
		}
	}
	exp := c.FingerprintExp
	if exp.IsZero() {
		exp = now
	}
	rec := &record{seq: s.nextSeq(), terminalTTL: max(c.TerminalTTL, 0), Record: idemstore.Record{
		OperationID: c.OperationID, Subject: c.Subject, ActingClient: c.ActingClient, Scope: c.Scope, ParamHash: c.ParamHash, State: operation.StateInFlight,
		Owner: c.Owner, BoundParams: bytes.Clone(c.BoundParams), ApprovalSHA256: c.ApprovalSHA256, FingerprintExp: exp,
		ClaimedAt: now, CreatedAt: now, UpdatedAt: now,
	}}
	s.records[c.OperationID] = rec
	if c.Charge != nil {
		s.reserve(c, now)
	}
	if c.Mandate != nil {
		s.reserveMandate(c, now)
		rec.MandateID, rec.MandateSHA256 = held.ID, held.StatementSHA256
	}
	return idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: c.Owner, ClaimedAt: now,
		Record: cloneRecord(rec.Record), TruthFound: true, Usage: usage}, nil
}

// Get reads the record of operation opID; ErrNotFound when there is none.
func (s *Store) Get(_ context.Context, opID string) (idemstore.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(read); err != nil {
		return idemstore.Record{}, fmt.Errorf("get %s: %w", opID, err)
	}
	return s.get(opID, "get")
}

// get is the record of opID, or ErrNotFound wrapped with step (the caller
// holds the lock).
func (s *Store) get(opID, step string) (idemstore.Record, error) {
	rec, ok := s.records[opID]
	if !ok {
		return idemstore.Record{}, fmt.Errorf("%s %s: %w", step, opID, idemstore.ErrNotFound)
	}
	return cloneRecord(rec.Record), nil
}

// Outcome is Get (the truth holds every field), counted in Counts.Outcomes too.
func (s *Store) Outcome(_ context.Context, opID string) (idemstore.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(read); err != nil {
		return idemstore.Record{}, fmt.Errorf("outcome %s: %w", opID, err)
	}
	s.counts.Outcomes++
	return s.get(opID, "outcome")
}

// Takeover moves the IN_FLIGHT record of p.OperationID from p.FromOwner to
// p.ToOwner; ErrNotOwner when it is missing, not IN_FLIGHT, or another
// owner's. p.TTL is not used: claims in the truth do not expire.
func (s *Store) Takeover(_ context.Context, p idemstore.TakeoverParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(write); err != nil {
		return fmt.Errorf("takeover %s: %w", p.OperationID, err)
	}
	rec, ok := s.records[p.OperationID]
	if !ok || rec.Owner != p.FromOwner || rec.State != operation.StateInFlight {
		return fmt.Errorf("takeover %s: %w", p.OperationID, idemstore.ErrNotOwner)
	}
	now := s.now()
	rec.Owner, rec.ClaimedAt, rec.UpdatedAt = p.ToOwner, now, now
	return nil
}

// Release deletes the IN_FLIGHT claim p.Owner holds, and its reservation
// with it; ErrNotFound when there is no record, ErrNotOwner when another
// owner holds it or it left IN_FLIGHT.
func (s *Store) Release(_ context.Context, p idemstore.ReleaseParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(write); err != nil {
		return fmt.Errorf("release %s: %w", p.OperationID, err)
	}
	rec, ok := s.records[p.OperationID]
	switch {
	case !ok:
		return fmt.Errorf("release %s: %w", p.OperationID, idemstore.ErrNotFound)
	case rec.Owner != p.Owner || rec.State != operation.StateInFlight:
		return fmt.Errorf("release %s: %w", p.OperationID, idemstore.ErrNotOwner)
	}
	delete(s.records, p.OperationID)
	delete(s.reservations, p.OperationID)
	delete(s.mandateHolds, p.OperationID)
	return nil
}

// Finalize moves an IN_FLIGHT or NEEDS_REVIEW record held by f.Owner to
// f.State, releasing its reservation when f.ReleasesBudget. Otherwise:
// missing or another owner's is ErrNotOwner; terminal with the same state
// succeeds and changes nothing (an activity retry); terminal with another
// is ErrAlreadyTerminal.
func (s *Store) Finalize(_ context.Context, f idemstore.Finalization) error {
	if !f.State.Terminal() {
		return fmt.Errorf("finalize %s: state %q is not DONE or FAILED", f.OperationID, f.State)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(write); err != nil {
		return fmt.Errorf("finalize %s: %w", f.OperationID, err)
	}
	rec, ok := s.records[f.OperationID]
	switch {
	case !ok, rec.Owner != f.Owner:
		return fmt.Errorf("finalize %s: %w", f.OperationID, idemstore.ErrNotOwner)
	case rec.State == f.State:
		return nil
	case rec.State.Terminal():
		return fmt.Errorf("finalize %s: %w", f.OperationID, idemstore.ErrAlreadyTerminal)
	}
	now := s.now()
	if f.TerminalTTL > 0 {
		rec.terminalTTL = f.TerminalTTL
	}
	completed := f.CompletedAt
	if completed.IsZero() {
		completed = now
	}
	rec.State, rec.Result, rec.ResultRef, rec.Reason = f.State, bytes.Clone(f.Result), f.ResultRef, f.Reason
	rec.FailureKind, rec.ResolvedBy, rec.ResolutionNote, rec.EvidenceURL = f.FailureKind, f.ResolvedBy, f.ResolutionNote, f.EvidenceURL
	rec.ResolvedAt, rec.CompletedAt, rec.UpdatedAt = f.ResolvedAt, completed, now
	rec.reapAfter = latest(now.Add(rec.terminalTTL), rec.FingerprintExp)
	if f.ReleasesBudget() {
		s.release(f.OperationID, string(f.FailureKind), now)
		s.releaseMandate(f.OperationID, string(f.FailureKind), now)
	}
	return nil
}

// FinalizeFast writes nothing (the store has no fast path to refill) but
// remembers f for Refills.
func (s *Store) FinalizeFast(_ context.Context, f idemstore.Finalization) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(write); err != nil {
		return fmt.Errorf("finalize fast %s: %w", f.OperationID, err)
	}
	s.refills = append(s.refills, f)
	return nil
}

// MarkNeedsReview moves an IN_FLIGHT record to NEEDS_REVIEW with p.Reason;
// again on a NEEDS_REVIEW record succeeds; a terminal record is
// ErrAlreadyTerminal, a missing one ErrNotFound.
func (s *Store) MarkNeedsReview(_ context.Context, p idemstore.MarkNeedsReviewParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(write); err != nil {
		return fmt.Errorf("mark needs review %s: %w", p.OperationID, err)
	}
	rec, ok := s.records[p.OperationID]
	switch {
	case !ok:
		return fmt.Errorf("mark needs review %s: %w", p.OperationID, idemstore.ErrNotFound)
	case rec.State.Terminal():
		return fmt.Errorf("mark needs review %s: %w", p.OperationID, idemstore.ErrAlreadyTerminal)
	case rec.State == operation.StateInFlight:
		rec.State, rec.Reason, rec.UpdatedAt = operation.StateNeedsReview, p.Reason, s.now()
	}
	return nil
}

// RecordDownstreamState keeps p.State on an IN_FLIGHT record (one no
// longer in flight is left alone); ErrNotFound when there is none.
func (s *Store) RecordDownstreamState(_ context.Context, p idemstore.DownstreamStateParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(write); err != nil {
		return fmt.Errorf("record downstream state %s: %w", p.OperationID, err)
	}
	rec, ok := s.records[p.OperationID]
	if !ok {
		return fmt.Errorf("record downstream state %s: %w", p.OperationID, idemstore.ErrNotFound)
	}
	if rec.State == operation.StateInFlight {
		rec.DownstreamState, rec.UpdatedAt = p.State, s.now()
	}
	return nil
}

// FindRecent returns the most recent record of p.Subject, p.Scope and
// p.ParamHash created at or after p.Since that is IN_FLIGHT, DONE,
// NEEDS_REVIEW, or FAILED other than by a definite refusal; ErrNotFound
// when none.
func (s *Store) FindRecent(_ context.Context, p idemstore.FindRecentParams) (idemstore.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(read); err != nil {
		return idemstore.Record{}, fmt.Errorf("find recent %s %s: %w", p.Subject, p.Scope, err)
	}
	var found *record
	for _, rec := range s.records {
		if rec.Subject != p.Subject || rec.Scope != p.Scope || rec.ParamHash != p.ParamHash || rec.CreatedAt.Before(p.Since) ||
			rec.State == operation.StateFailed && rec.FailureKind == operation.FailureRefused {
			continue
		}
		if found == nil || newerFirst(rec, found) < 0 {
			found = rec
		}
	}
	if found == nil {
		return idemstore.Record{}, fmt.Errorf("find recent %s %s: %w", p.Subject, p.Scope, idemstore.ErrNotFound)
	}
	return cloneRecord(found.Record), nil
}

// newerFirst orders records by creation, the newest first.
func newerFirst(a, b *record) int {
	return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.seq, a.seq))
}

// longestStuckFirst orders records by when they entered their state, the
// oldest first.
func longestStuckFirst(a, b *record) int {
	return cmp.Or(a.UpdatedAt.Compare(b.UpdatedAt), cmp.Compare(a.seq, b.seq))
}

// List returns up to f.Limit records (idemstore.DefaultListLimit when not
// positive) in f.State (every state when empty) that entered it at least
// f.OlderThan ago: the newest first, or, with f.OlderThan, the longest
// stuck first.
func (s *Store) List(_ context.Context, f idemstore.ListFilter) ([]idemstore.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(read); err != nil {
		return nil, fmt.Errorf("list %s: %w", f.State, err)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = idemstore.DefaultListLimit
	}
	cutoff := s.now().Add(-f.OlderThan)
	var sel []*record
	for _, rec := range s.records {
		if (f.State == "" || rec.State == f.State) && (f.OlderThan <= 0 || !rec.UpdatedAt.After(cutoff)) {
			sel = append(sel, rec)
		}
	}
	order := newerFirst
	if f.OlderThan > 0 {
		order = longestStuckFirst
	}
	slices.SortFunc(sel, order)
	out := make([]idemstore.Record, 0, min(limit, len(sel)))
	for _, rec := range sel[:min(limit, len(sel))] {
		out = append(out, cloneRecord(rec.Record))
	}
	return out, nil
}

// Reap deletes the terminal records whose retention (the later of their
// terminal TTL after they finished and their fingerprint's exp) ended at
// or before now, and returns how many; it also forgets the webhook
// receipts older than idemstore.WebhookReceiptRetention and the budget
// reservations older than idemstore.ReservationRetention. IN_FLIGHT and
// NEEDS_REVIEW records are never reaped.
func (s *Store) Reap(_ context.Context, now time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(write); err != nil {
		return 0, fmt.Errorf("reap: %w", err)
	}
	var n int64
	for id, rec := range s.records {
		if rec.State.Terminal() && !rec.reapAfter.IsZero() && !rec.reapAfter.After(now) {
			delete(s.records, id)
			n++
		}
	}
	for sig, at := range s.webhooks {
		if !at.After(now.Add(-idemstore.WebhookReceiptRetention)) {
			delete(s.webhooks, sig)
		}
	}
	for id, r := range s.reservations {
		if !r.reservedAt.After(now.Add(-idemstore.ReservationRetention)) {
			delete(s.reservations, id)
		}
	}
	return n, nil
}

// RecordWebhook remembers a webhook event by its signature and reports
// whether it is the first time (false: a replay).
func (s *Store) RecordWebhook(_ context.Context, p idemstore.WebhookParams) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return false, fmt.Errorf("record webhook %s: %w", p.Scope, err)
	}
	if _, seen := s.webhooks[p.Signature]; seen {
		return false, nil
	}
	s.webhooks[p.Signature] = s.now()
	return true, nil
}

// Ready fails (ErrUnavailable) while the store is switched off.
func (s *Store) Ready(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return fmt.Errorf("ping truth: %w", err)
	}
	return nil
}

// Degraded reports what SetDegraded set (false by default).
func (s *Store) Degraded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.degraded
}

// latest is the later of a and b.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
