package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// ApprovalStore is a backend that keeps approvals, passkeys and invites
// beside its operations (the PostgreSQL truth, the in-memory store):
// PayeeKnown reads the operations it completed.
type ApprovalStore interface {
	idemstore.Store
	approval.Store
}

// ExerciseApprovals runs the tests of approval.Store against the stores
// newStore returns: a request recorded once, the first decision standing,
// the passkey's counter advancing with it, revoked passkeys, single-use
// invites, and the payees an operation completed. Every subtest uses its
// own subjects and operations, so the stores may be shared.
func ExerciseApprovals(t *testing.T, newStore func(t *testing.T) ApprovalStore) {
	t.Helper()
	ctx := context.Background()
	// setup gives a subtest its store, a subject of its own and the id of
	// a passkey enrolled for it.
	setup := func(t *testing.T) (s ApprovalStore, subject, cred string) {
		t.Helper()
		s, subject = newStore(t), newSubject(t)
		return s, subject, enrol(t, s, subject)
	}

	t.Run("RequestThenDecideOnce", func(t *testing.T) {
		t.Parallel()
		s, subject, cred := setup(t)
		req := approvalRequest(t, subject)
		_, err := s.Approval(ctx, req.OperationID)
		require.ErrorIs(t, err, approval.ErrNotFound)

		rec, err := s.RequestApproval(ctx, req)
		require.NoError(t, err)
		assert.Equal(t, approval.StatePending, rec.State)
		assert.Equal(t, req.OperationID, rec.OperationID)
		assert.Equal(t, subject, rec.Subject)
		assert.Equal(t, req.Scope, rec.Scope)
		assert.Equal(t, req.ParamHash, rec.ParamHash)
		assert.JSONEq(t, string(req.BoundParams), string(rec.BoundParams))
		assert.Equal(t, req.Reasons, rec.Reasons)
		sameTime(t, req.ExpiresAt, rec.ExpiresAt, "expires_at")
		sameTime(t, req.At, rec.RequestedAt, "requested_at")
		assert.True(t, rec.DecidedAt.IsZero())
		assert.Equal(t, req.TraceID, rec.TraceID)

		// A second request changes nothing: the first one stands.
		later := req
		later.At, later.Reasons, later.TraceID = req.At.Add(time.Minute), []approval.Reason{approval.ReasonAlways}, "t2"
		again, err := s.RequestApproval(ctx, later)
		require.NoError(t, err)
		sameTime(t, rec.RequestedAt, again.RequestedAt, "a second request changes nothing")
		assert.Equal(t, req.Reasons, again.Reasons)
		assert.Equal(t, req.TraceID, again.TraceID)

		d := decided(req, approval.StateApproved, cred, 1)
		d.Request.At = req.At.Add(2 * time.Minute)
		got, err := s.Decide(ctx, d)
		require.NoError(t, err)
		assert.Equal(t, approval.StateApproved, got.State)
		assert.Equal(t, d.EvidenceSHA256, got.EvidenceSHA256)
		assert.Equal(t, cred, got.CredentialID)
		assert.JSONEq(t, string(d.Statement), string(got.Statement))
		assert.JSONEq(t, string(d.Evidence), string(got.Evidence))
		sameTime(t, d.Request.At, got.DecidedAt, "decided_at")
		sameTime(t, req.At, got.RequestedAt, "the request's time is kept")
		assert.Equal(t, req.Reasons, got.Reasons, "the request's reasons are kept")

		// A second decision (a decline, with a fresh counter) is refused; the first stands.
		d2 := decided(req, approval.StateDeclined, cred, 2)
		d2.EvidenceSHA256 = "e2"
		standing, err := s.Decide(ctx, d2)
		require.ErrorIs(t, err, approval.ErrAlreadyDecided)
		assert.Equal(t, approval.StateApproved, standing.State, "the refusal answers the standing decision")
		assert.Equal(t, d.EvidenceSHA256, standing.EvidenceSHA256)
		for name, read := range map[string]func() (approval.Record, error){
			"approval": func() (approval.Record, error) { return s.Approval(ctx, req.OperationID) },
			"request":  func() (approval.Record, error) { return s.RequestApproval(ctx, later) },
		} {
			stored, err := read()
			require.NoError(t, err, name)
			assert.Equal(t, approval.StateApproved, stored.State, name)
			assert.Equal(t, d.EvidenceSHA256, stored.EvidenceSHA256, name)
		}
	})

	t.Run("DecideWithoutRequest", func(t *testing.T) {
		t.Parallel()
		s, subject, cred := setup(t)
		req := approvalRequest(t, subject)
		got, err := s.Decide(ctx, decided(req, approval.StateDeclined, cred, 1))
		require.NoError(t, err)
		assert.Equal(t, approval.StateDeclined, got.State)
		assert.Equal(t, req.Reasons, got.Reasons)
		sameTime(t, req.At, got.RequestedAt, "asked and decided at once")
		sameTime(t, req.At, got.DecidedAt, "decided_at")
		stored, err := s.Approval(ctx, req.OperationID)
		require.NoError(t, err)
		assert.Equal(t, approval.StateDeclined, stored.State)
	})

	t.Run("CounterMustAdvance", func(t *testing.T) {
		t.Parallel()
		s, subject, cred := setup(t)
		decide := func(count uint32) (approval.Request, error) {
			t.Helper()
			req := approvalRequest(t, subject)
			_, err := s.Decide(ctx, decided(req, approval.StateApproved, cred, count))
			return req, err
		}
		_, err := decide(5)
		require.NoError(t, err)
		for _, count := range []uint32{5, 4, 0} {
			req, err := decide(count)
			require.ErrorIs(t, err, approval.ErrSignCount, "counter %d after 5", count)
			_, err = s.Approval(ctx, req.OperationID)
			require.ErrorIs(t, err, approval.ErrNotFound, "nothing recorded")
		}
		at := time.Now().Truncate(time.Microsecond)
		_, err = decide(6)
		require.NoError(t, err)
		pk := passkey(t, s, subject, cred)
		assert.EqualValues(t, 6, pk.SignCount)
		assert.False(t, pk.LastUsedAt.Before(at), "last used at the decision")

		// A refused second decision leaves the counter where it was.
		req, err := decide(7)
		require.NoError(t, err)
		_, err = s.Decide(ctx, decided(req, approval.StateDeclined, cred, 8))
		require.ErrorIs(t, err, approval.ErrAlreadyDecided)
		assert.EqualValues(t, 7, passkey(t, s, subject, cred).SignCount, "the refusal advanced nothing")
		_, err = decide(8)
		require.NoError(t, err, "8 is still ahead of the counter")
	})

	t.Run("AuthenticatorWithoutCounter", func(t *testing.T) {
		t.Parallel()
		s, subject, cred := setup(t)
		// An authenticator that counts nothing always says 0 (WebAuthn §6.1.1).
		for range 2 {
			_, err := s.Decide(ctx, decided(approvalRequest(t, subject), approval.StateApproved, cred, 0))
			require.NoError(t, err)
		}
		_, err := s.Decide(ctx, decided(approvalRequest(t, subject), approval.StateApproved, cred, 1))
		require.NoError(t, err)
		_, err = s.Decide(ctx, decided(approvalRequest(t, subject), approval.StateApproved, cred, 0))
		require.ErrorIs(t, err, approval.ErrSignCount, "once it counted, 0 goes back")
	})

	t.Run("OnlyTheSubjectsPasskeyDecides", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		alice, bob := newSubject(t), newSubject(t)
		enrol(t, s, alice)
		bobs := enrol(t, s, bob)
		req := approvalRequest(t, alice)
		_, err := s.Decide(ctx, decided(req, approval.StateApproved, bobs, 99))
		require.ErrorIs(t, err, approval.ErrNotFound, "bob's passkey on alice's operation")
		_, err = s.Decide(ctx, decided(req, approval.StateApproved, "no-such-passkey", 1))
		require.ErrorIs(t, err, approval.ErrNotFound)
		_, err = s.Approval(ctx, req.OperationID)
		require.ErrorIs(t, err, approval.ErrNotFound, "nothing recorded")
		assert.Zero(t, passkey(t, s, bob, bobs).SignCount, "bob's counter untouched")
	})

	t.Run("ApproversCountDistinctPeople", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		role := "finance-" + NewKey(t)[:8]
		alice, carol, dave := newSubject(t), newSubject(t), newSubject(t)
		enrol(t, s, alice)
		carol1 := enrolWithRoles(t, s, carol, role)
		carol2 := enrolWithRoles(t, s, carol, "other", role)
		dave1 := enrolWithRoles(t, s, dave, role)
		withRole, err := s.PasskeysWithRole(ctx, role)
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{carol1, carol2, dave1}, passkeyIDs(withRole), "the passkeys enrolled with the role, no other")
		for _, pk := range withRole {
			assert.Contains(t, pk.Roles, role, "a passkey has the roles its invite named")
		}

		req := approvalRequest(t, alice)
		req.Approvers = &approval.Approvers{Role: role, Count: 2}
		asked, err := s.RequestApproval(ctx, req)
		require.NoError(t, err)
		assert.Equal(t, req.Approvers, asked.Approvers)
		assert.Equal(t, 2, asked.Needed)
		assert.Equal(t, 0, asked.Given)

		byCarol := decided(req, approval.StateApproved, carol1, 1)
		byCarol.Approver, byCarol.EvidenceSHA256 = carol, "e-carol"
		rec, err := s.Decide(ctx, byCarol)
		require.NoError(t, err)
		assert.Equal(t, approval.StatePending, rec.State, "one of two approvals")
		assert.Equal(t, 1, rec.Given)
		assert.True(t, rec.DecidedAt.IsZero())
		require.Len(t, rec.Decisions, 1)
		assert.Equal(t, carol, rec.Decisions[0].Approver)

		// Carol again, with her other passkey: she counts once.
		again := decided(req, approval.StateApproved, carol2, 1)
		again.Approver = carol
		standing, err := s.Decide(ctx, again)
		require.ErrorIs(t, err, approval.ErrAlreadyDecided)
		assert.Equal(t, 1, standing.Given)
		assert.Zero(t, passkey(t, s, carol, carol2).SignCount, "a refused decision leaves the counter alone")

		byDave := decided(req, approval.StateApproved, dave1, 1)
		byDave.Approver, byDave.EvidenceSHA256 = dave, "e-dave"
		byDave.Request.At = req.At.Add(time.Minute)
		rec, err = s.Decide(ctx, byDave)
		require.NoError(t, err)
		assert.Equal(t, approval.StateApproved, rec.State)
		assert.Equal(t, 2, rec.Given)
		sameTime(t, byDave.Request.At, rec.DecidedAt, "decided when the last approval came")
		require.Len(t, rec.Decisions, 2)
		_, joint := approval.JointEvidence(req.OperationID, rec.Decisions)
		assert.Equal(t, joint, rec.EvidenceSHA256, "the joint evidence of both")
		assert.Empty(t, rec.CredentialID)
		stored, err := s.Approval(ctx, req.OperationID)
		require.NoError(t, err)
		assert.Equal(t, rec.EvidenceSHA256, stored.EvidenceSHA256)
		assert.Equal(t, []string{carol, dave}, []string{stored.Decisions[0].Approver, stored.Decisions[1].Approver})
		assert.Equal(t, []string{"e-carol", "e-dave"}, []string{stored.Decisions[0].EvidenceSHA256, stored.Decisions[1].EvidenceSHA256})
		_, err = s.Decide(ctx, decided(req, approval.StateDeclined, enrol(t, s, alice), 1))
		require.ErrorIs(t, err, approval.ErrAlreadyDecided, "decided: the subject's decline comes too late")

		// A passkey of another person never decides as carol.
		other := decided(approvalRequest(t, alice), approval.StateApproved, dave1, 5)
		other.Approver = carol
		_, err = s.Decide(ctx, other)
		require.ErrorIs(t, err, approval.ErrNotFound)
	})

	t.Run("ADeclineByAnyApproverEndsIt", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		role := "finance-" + NewKey(t)[:8]
		carol, dave := newSubject(t), newSubject(t)
		carol1, dave1 := enrolWithRoles(t, s, carol, role), enrolWithRoles(t, s, dave, role)
		req := approvalRequest(t, newSubject(t))
		req.Approvers = &approval.Approvers{Role: role, Count: 2}
		byCarol := decided(req, approval.StateApproved, carol1, 1)
		byCarol.Approver = carol
		_, err := s.Decide(ctx, byCarol)
		require.NoError(t, err)
		byDave := decided(req, approval.StateDeclined, dave1, 1)
		byDave.Approver = dave
		rec, err := s.Decide(ctx, byDave)
		require.NoError(t, err)
		assert.Equal(t, approval.StateDeclined, rec.State)
		assert.Equal(t, 1, rec.Given)
		assert.Equal(t, dave1, rec.CredentialID, "the decline's own evidence")
		assert.Equal(t, byDave.EvidenceSHA256, rec.EvidenceSHA256)
	})

	t.Run("ConcurrentDecisionsOneWins", func(t *testing.T) {
		t.Parallel()
		s, subject, cred := setup(t)
		req := approvalRequest(t, subject)
		_, err := s.RequestApproval(ctx, req)
		require.NoError(t, err)
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				state := approval.StateApproved
				if i%2 == 1 {
					state = approval.StateDeclined
				}
				_, errs[i] = s.Decide(ctx, decided(req, state, cred, uint32(1000+i)))
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else {
				assert.True(t, errorIsAny(err, approval.ErrAlreadyDecided, approval.ErrSignCount), "%v", err)
			}
		}
		assert.Equal(t, 1, ok, "exactly one decision: %v", errs)
	})

	t.Run("Revoke", func(t *testing.T) {
		t.Parallel()
		s, subject, cred := setup(t)
		kept := enrol(t, s, subject)
		at := time.Now().Truncate(time.Microsecond)
		pk, err := s.Revoke(ctx, approval.Revocation{ID: cred, By: "ops", TraceID: "t-revoke", At: at})
		require.NoError(t, err)
		assert.Equal(t, cred, pk.ID)
		sameTime(t, at, pk.RevokedAt, "revoked_at")
		assert.Equal(t, "ops", pk.RevokedBy)
		assert.Equal(t, "t-revoke", pk.RevokeTraceID)

		again, err := s.Revoke(ctx, approval.Revocation{ID: cred, By: "other", At: at.Add(time.Minute)})
		require.ErrorIs(t, err, approval.ErrRevoked)
		sameTime(t, at, again.RevokedAt, "the first revocation stands")
		assert.Equal(t, "ops", again.RevokedBy)
		_, err = s.Revoke(ctx, approval.Revocation{ID: "no-such-passkey", By: "ops", At: at})
		require.ErrorIs(t, err, approval.ErrNotFound)

		active, err := s.Passkeys(ctx, subject, false)
		require.NoError(t, err)
		assert.Equal(t, []string{kept}, passkeyIDs(active))
		all, err := s.Passkeys(ctx, subject, true)
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{cred, kept}, passkeyIDs(all), "a revoked passkey is kept for the audit")

		_, err = s.Decide(ctx, decided(approvalRequest(t, subject), approval.StateApproved, cred, 1))
		require.ErrorIs(t, err, approval.ErrRevoked)
		_, err = s.Decide(ctx, decided(approvalRequest(t, subject), approval.StateApproved, kept, 1))
		require.NoError(t, err, "the subject's other passkey still decides")
	})

	t.Run("Passkeys", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		alice, bob := newSubject(t), newSubject(t)
		now := time.Now().Truncate(time.Microsecond)
		first := enrolAt(t, s, alice, now.Add(-time.Minute))
		second := enrolAt(t, s, alice, now)
		bobs := enrolAt(t, s, bob, now)

		mine, err := s.Passkeys(ctx, alice, false)
		require.NoError(t, err)
		assert.Equal(t, []string{first, second}, passkeyIDs(mine), "oldest first")
		assert.Equal(t, alice, mine[0].Subject)
		sameTime(t, now.Add(-time.Minute), mine[0].CreatedAt, "enrolled at the enrolment's time")
		assert.JSONEq(t, `{"id":"`+first+`"}`, string(mine[0].Credential))
		assert.Equal(t, "t-enrol", mine[0].EnrolTraceID)
		assert.True(t, mine[0].LastUsedAt.IsZero())

		everyone, err := s.Passkeys(ctx, "", false)
		require.NoError(t, err)
		ids := passkeyIDs(everyone)
		for _, id := range []string{first, second, bobs} {
			assert.Contains(t, ids, id, "every subject's")
		}
	})

	t.Run("InvitesAreSingleUse", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		subject := newSubject(t)
		now := time.Now().Truncate(time.Microsecond)
		tok := NewKey(t)
		require.NoError(t, s.CreateInvite(ctx, approval.Invite{TokenSHA256: tok, Subject: subject, CreatedBy: "ops",
			ExpiresAt: now.Add(time.Minute), TraceID: "t-invite"}))
		inv, err := s.Invite(ctx, tok, now)
		require.NoError(t, err)
		assert.Equal(t, subject, inv.Subject)
		assert.Equal(t, "ops", inv.CreatedBy)
		assert.Equal(t, "t-invite", inv.TraceID)
		sameTime(t, now.Add(time.Minute), inv.ExpiresAt, "expires_at")
		assert.Nil(t, inv.Session, "no enrolment begun")

		require.NoError(t, s.BeginEnrolment(ctx, tok, json.RawMessage(`{"challenge":"c"}`), now))
		inv, err = s.Invite(ctx, tok, now)
		require.NoError(t, err)
		assert.JSONEq(t, `{"challenge":"c"}`, string(inv.Session))
		require.NoError(t, s.BeginEnrolment(ctx, tok, json.RawMessage(`{"challenge":"d"}`), now))
		inv, err = s.Invite(ctx, tok, now)
		require.NoError(t, err)
		assert.JSONEq(t, `{"challenge":"d"}`, string(inv.Session), "the last begun enrolment")

		expired := now.Add(time.Minute)
		_, err = s.Invite(ctx, tok, expired)
		require.ErrorIs(t, err, approval.ErrInviteInvalid, "expired at its expiry")
		require.ErrorIs(t, s.BeginEnrolment(ctx, tok, json.RawMessage(`{}`), expired), approval.ErrInviteInvalid)
		require.ErrorIs(t, s.Enrol(ctx, tok, newPasskey(t, subject), expired), approval.ErrInviteInvalid)
		require.ErrorIs(t, s.Enrol(ctx, tok, newPasskey(t, newSubject(t)), now), approval.ErrInviteInvalid, "another subject")

		pk := newPasskey(t, subject)
		require.NoError(t, s.Enrol(ctx, tok, pk, now))
		require.ErrorIs(t, s.Enrol(ctx, tok, newPasskey(t, subject), now), approval.ErrInviteInvalid, "used")
		require.ErrorIs(t, s.BeginEnrolment(ctx, tok, json.RawMessage(`{}`), now), approval.ErrInviteInvalid, "used")
		_, err = s.Invite(ctx, tok, now)
		require.ErrorIs(t, err, approval.ErrInviteInvalid, "used")
		_, err = s.Invite(ctx, NewKey(t), now)
		require.ErrorIs(t, err, approval.ErrInviteInvalid, "unknown")
		require.ErrorIs(t, s.Enrol(ctx, NewKey(t), newPasskey(t, subject), now), approval.ErrInviteInvalid, "unknown")
		assert.Equal(t, []string{pk.ID}, passkeyIDs(passkeys(t, s, subject)), "one enrolment, one passkey")
	})

	t.Run("AnEnrolmentThatFailsLeavesTheInvite", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		subject := newSubject(t)
		taken := enrol(t, s, subject)
		now := time.Now().Truncate(time.Microsecond)
		tok := NewKey(t)
		require.NoError(t, s.CreateInvite(ctx, approval.Invite{TokenSHA256: tok, Subject: subject, ExpiresAt: now.Add(time.Minute)}))
		dup := newPasskey(t, subject)
		dup.ID = taken
		require.Error(t, s.Enrol(ctx, tok, dup, now), "a passkey id enrolled twice")
		_, err := s.Invite(ctx, tok, now)
		require.NoError(t, err, "the invite was not used")
		require.NoError(t, s.Enrol(ctx, tok, newPasskey(t, subject), now))
	})

	t.Run("Approvals", func(t *testing.T) {
		t.Parallel()
		s, subject, cred := setup(t)
		base := time.Now().Truncate(time.Microsecond)
		var ops []string
		for i := range 3 {
			req := approvalRequest(t, subject)
			req.At = base.Add(time.Duration(i) * time.Second)
			ops = append(ops, req.OperationID)
			_, err := s.RequestApproval(ctx, req)
			require.NoError(t, err)
			if i == 1 {
				_, err := s.Decide(ctx, decided(req, approval.StateApproved, cred, 1))
				require.NoError(t, err)
			}
		}
		ours := func(state approval.State) []string {
			t.Helper()
			recs, err := s.Approvals(ctx, state, 10_000)
			require.NoError(t, err)
			var out []string
			for _, r := range recs {
				if slices.Contains(ops, r.OperationID) {
					out = append(out, r.OperationID)
				}
				if state != "" {
					assert.Equal(t, state, r.State)
				}
			}
			return out
		}
		assert.Equal(t, []string{ops[2], ops[1], ops[0]}, ours(""), "newest first")
		assert.Equal(t, []string{ops[2], ops[0]}, ours(approval.StatePending))
		assert.Equal(t, []string{ops[1]}, ours(approval.StateApproved))
		assert.Empty(t, ours(approval.StateDeclined))
		limited, err := s.Approvals(ctx, "", 2)
		require.NoError(t, err)
		assert.Len(t, limited, 2)
	})

	t.Run("PayeeKnown", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		subject, payee := newSubject(t), "p-"+NewKey(t)[:8]
		pay := func(state operation.State) {
			t.Helper()
			c := NewClaim(t, "owner-a")
			c.Subject, c.Scope = subject, "payments.wire"
			c.BoundParams = json.RawMessage(`{"amount":5,"currency":"USD","payee_id":"` + payee + `"}`)
			d, err := s.Acquire(ctx, c)
			require.NoError(t, err)
			require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
			switch state {
			case operation.StateDone:
				require.NoError(t, s.Finalize(ctx, Done(c, "owner-a")))
			case operation.StateFailed:
				require.NoError(t, s.Finalize(ctx, Failed(c, "owner-a")))
			case operation.StateNeedsReview:
				require.NoError(t, s.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: c.OperationID, Reason: "unknown"}))
			case operation.StateInFlight:
			}
		}
		known := func(subject, scope, payee string) bool {
			t.Helper()
			k, err := s.PayeeKnown(ctx, subject, scope, payee)
			require.NoError(t, err)
			return k
		}
		for _, state := range []operation.State{operation.StateInFlight, operation.StateNeedsReview, operation.StateFailed} {
			pay(state)
			assert.False(t, known(subject, "payments.wire", payee), "%s is not paid", state)
		}
		pay(operation.StateDone)
		assert.True(t, known(subject, "payments.wire", payee))
		assert.False(t, known(newSubject(t), "payments.wire", payee), "another subject")
		assert.False(t, known(subject, "payments.transfer", payee), "another action")
		assert.False(t, known(subject, "payments.wire", payee+"x"), "another payee")
	})
}

// newSubject is a subject no other subtest uses.
func newSubject(t *testing.T) string { return "subject-" + NewKey(t)[:12] }

// approvalRequest asks for approval of a fresh operation of subject, now.
func approvalRequest(t *testing.T, subject string) approval.Request {
	now := time.Now().Truncate(time.Microsecond)
	return approval.Request{OperationID: NewKey(t), Subject: subject, Scope: "payments.wire", ParamHash: "h1",
		BoundParams: json.RawMessage(`{"amount":250,"currency":"USD","payee_id":"p-1"}`),
		Reasons:     []approval.Reason{approval.ReasonAboveThreshold, approval.ReasonNewPayee},
		ExpiresAt:   now.Add(10 * time.Minute), TraceID: "t1", At: now}
}

// decided is req decided as state by passkey cred carrying count.
func decided(req approval.Request, state approval.State, cred string, count uint32) approval.Decided {
	return approval.Decided{Request: req, State: state, CredentialID: cred, SignCount: count,
		Statement: json.RawMessage(`{"decision":"` + string(state) + `"}`), Evidence: json.RawMessage(`{"signature":"s"}`),
		EvidenceSHA256: "e-" + string(state)}
}

// newPasskey is a fresh passkey of subject.
func newPasskey(t *testing.T, subject string) approval.Passkey {
	id := "cred-" + NewKey(t)[:12]
	return approval.Passkey{ID: id, Subject: subject, Credential: json.RawMessage(`{"id":"` + id + `"}`), EnrolTraceID: "t-enrol"}
}

// enrol stores a fresh passkey of subject through a fresh invite, now, and returns its id.
// enrolWithRoles enrols a passkey for subject through an invite naming roles.
func enrolWithRoles(t *testing.T, s approval.Store, subject string, roles ...string) string {
	t.Helper()
	return enrolAt(t, s, subject, time.Now().Truncate(time.Microsecond), roles...)
}

func enrol(t *testing.T, s approval.Store, subject string) string {
	t.Helper()
	return enrolAt(t, s, subject, time.Now().Truncate(time.Microsecond))
}

// enrolAt is enrol at the time at.
func enrolAt(t *testing.T, s approval.Store, subject string, at time.Time, roles ...string) string {
	t.Helper()
	ctx := context.Background()
	tok := NewKey(t)
	require.NoError(t, s.CreateInvite(ctx, approval.Invite{TokenSHA256: tok, Subject: subject, CreatedBy: "ops",
		ExpiresAt: at.Add(time.Hour), Roles: roles}))
	pk := newPasskey(t, subject)
	require.NoError(t, s.Enrol(ctx, tok, pk, at))
	return pk.ID
}

// passkeys lists subject's passkeys, revoked ones too.
func passkeys(t *testing.T, s approval.Store, subject string) []approval.Passkey {
	t.Helper()
	pks, err := s.Passkeys(context.Background(), subject, true)
	require.NoError(t, err)
	return pks
}

// passkey is subject's passkey id.
func passkey(t *testing.T, s approval.Store, subject, id string) approval.Passkey {
	t.Helper()
	for _, pk := range passkeys(t, s, subject) {
		if pk.ID == id {
			return pk
		}
	}
	require.FailNow(t, "no passkey "+id+" of "+subject)
	return approval.Passkey{}
}

// passkeyIDs are the ids of pks, in order.
func passkeyIDs(pks []approval.Passkey) []string {
	ids := make([]string, len(pks))
	for i, pk := range pks {
		ids[i] = pk.ID
	}
	return ids
}

// sameTime asserts that got is the instant want (whatever its location).
func sameTime(t *testing.T, want, got time.Time, what string) {
	t.Helper()
	assert.True(t, want.Equal(got), "%s: %s, want %s", what, got, want)
}

// errorIsAny reports whether err is one of targets.
func errorIsAny(err error, targets ...error) bool {
	return slices.ContainsFunc(targets, func(target error) bool { return errors.Is(err, target) })
}
