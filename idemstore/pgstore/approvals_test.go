package pgstore_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/pgstore"
)

// enrolled stores a passkey of subject through a fresh invite.
func enrolled(t *testing.T, s *pgstore.Store, subject, id string) {
	t.Helper()
	ctx := context.Background()
	tok := fingerprint.NewNonce()
	require.NoError(t, s.CreateInvite(ctx, approval.Invite{TokenSHA256: tok, Subject: subject, CreatedBy: "ops", ExpiresAt: time.Now().Add(time.Hour)}))
	require.NoError(t, s.Enrol(ctx, tok, approval.Passkey{ID: id, Subject: subject, Credential: json.RawMessage(`{"id":"x"}`)}, time.Now()))
}

func request(opID string) approval.Request {
	return approval.Request{OperationID: opID, Subject: "alice", Scope: "payments.wire", ParamHash: "h1",
		BoundParams: json.RawMessage(`{"amount":250,"currency":"USD","payee_id":"p-1"}`),
		Reasons:     []approval.Reason{approval.ReasonAboveThreshold, approval.ReasonNewPayee},
		ExpiresAt:   time.Now().Add(10 * time.Minute).Truncate(time.Microsecond), TraceID: "t1", At: time.Now()}
}

func TestApprovals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	enrolled(t, s, "alice", "cred-a")
	enrolled(t, s, "bob", "cred-b")

	t.Run("RequestThenDecideOnce", func(t *testing.T) {
		op := fingerprint.NewNonce()
		_, err := s.Approval(ctx, op)
		require.ErrorIs(t, err, approval.ErrNotFound)
		rec, err := s.RequestApproval(ctx, request(op))
		require.NoError(t, err)
		assert.Equal(t, approval.StatePending, rec.State)
		assert.Equal(t, []approval.Reason{approval.ReasonAboveThreshold, approval.ReasonNewPayee}, rec.Reasons)
		again, err := s.RequestApproval(ctx, request(op))
		require.NoError(t, err)
		assert.Equal(t, rec.RequestedAt, again.RequestedAt, "a second request changes nothing")

		d := approval.Decided{Request: request(op), State: approval.StateApproved, CredentialID: "cred-a", SignCount: 1,
			Statement: json.RawMessage(`{"decision":"approve"}`), Evidence: json.RawMessage(`{"signature":"s"}`), EvidenceSHA256: "e1"}
		got, err := s.Decide(ctx, d)
		require.NoError(t, err)
		assert.Equal(t, approval.StateApproved, got.State)
		assert.Equal(t, "e1", got.EvidenceSHA256)
		assert.Equal(t, "cred-a", got.CredentialID)
		assert.False(t, got.DecidedAt.IsZero())

		// A second decision (a decline, with a fresh counter) is refused; the first stands.
		d2 := d
		d2.State, d2.SignCount, d2.EvidenceSHA256 = approval.StateDeclined, 2, "e2"
		standing, err := s.Decide(ctx, d2)
		require.ErrorIs(t, err, approval.ErrAlreadyDecided)
		assert.Equal(t, approval.StateApproved, standing.State)
		assert.Equal(t, "e1", standing.EvidenceSHA256)
		stored, err := s.Approval(ctx, op)
		require.NoError(t, err)
		assert.Equal(t, approval.StateApproved, stored.State)

		list, err := s.Approvals(ctx, approval.StateApproved, 0)
		require.NoError(t, err)
		assert.NotEmpty(t, list)
	})

	t.Run("CounterMustAdvance", func(t *testing.T) {
		op := fingerprint.NewNonce()
		d := approval.Decided{Request: request(op), State: approval.StateApproved, CredentialID: "cred-b", SignCount: 5, EvidenceSHA256: "e"}
		d.Request.Subject = "bob"
		_, err := s.Decide(ctx, d)
		require.NoError(t, err)
		op2 := fingerprint.NewNonce()
		d.Request.OperationID = op2
		_, err = s.Decide(ctx, d)
		require.ErrorIs(t, err, approval.ErrSignCount, "the same counter for another operation")
		_, err = s.Approval(ctx, op2)
		require.ErrorIs(t, err, approval.ErrNotFound, "nothing recorded")
	})

	t.Run("AnotherSubjectsPasskey", func(t *testing.T) {
		d := approval.Decided{Request: request(fingerprint.NewNonce()), State: approval.StateApproved, CredentialID: "cred-b", SignCount: 99}
		_, err := s.Decide(ctx, d)
		require.ErrorIs(t, err, approval.ErrNotFound, "bob's passkey on alice's operation")
	})

	t.Run("ConcurrentDecisionsOneWins", func(t *testing.T) {
		op := fingerprint.NewNonce()
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := approval.Decided{Request: request(op), State: approval.StateDeclined, CredentialID: "cred-a", SignCount: uint32(1000 + i)}
				_, errs[i] = s.Decide(ctx, d)
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			}
		}
		assert.Equal(t, 1, ok, "exactly one decision: %v", errs)
	})

	t.Run("Revoke", func(t *testing.T) {
		enrolled(t, s, "carol", "cred-c")
		pk, err := s.Revoke(ctx, approval.Revocation{ID: "cred-c", By: "ops", TraceID: "t", At: time.Now()})
		require.NoError(t, err)
		assert.False(t, pk.RevokedAt.IsZero())
		_, err = s.Revoke(ctx, approval.Revocation{ID: "cred-c", By: "ops", At: time.Now()})
		require.ErrorIs(t, err, approval.ErrRevoked)
		_, err = s.Revoke(ctx, approval.Revocation{ID: "nope", By: "ops", At: time.Now()})
		require.ErrorIs(t, err, approval.ErrNotFound)
		active, err := s.Passkeys(ctx, "carol", false)
		require.NoError(t, err)
		assert.Empty(t, active)
		all, err := s.Passkeys(ctx, "carol", true)
		require.NoError(t, err)
		assert.Len(t, all, 1)
		d := approval.Decided{Request: request(fingerprint.NewNonce()), State: approval.StateApproved, CredentialID: "cred-c", SignCount: 1}
		d.Request.Subject = "carol"
		_, err = s.Decide(ctx, d)
		require.ErrorIs(t, err, approval.ErrRevoked)
	})
}

func TestInvitesAreSingleUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	now := time.Now()
	require.NoError(t, s.CreateInvite(ctx, approval.Invite{TokenSHA256: "t1", Subject: "alice", ExpiresAt: now.Add(time.Minute)}))
	inv, err := s.Invite(ctx, "t1", now)
	require.NoError(t, err)
	assert.Equal(t, "alice", inv.Subject)
	require.NoError(t, s.BeginEnrolment(ctx, "t1", json.RawMessage(`{"challenge":"c"}`), now))
	inv, err = s.Invite(ctx, "t1", now)
	require.NoError(t, err)
	assert.JSONEq(t, `{"challenge":"c"}`, string(inv.Session))
	_, err = s.Invite(ctx, "t1", now.Add(time.Minute))
	require.ErrorIs(t, err, approval.ErrInviteInvalid, "expired")
	require.ErrorIs(t, s.Enrol(ctx, "t1", approval.Passkey{ID: "k", Subject: "bob", Credential: json.RawMessage(`{}`)}, now), approval.ErrInviteInvalid, "another subject")
	require.NoError(t, s.Enrol(ctx, "t1", approval.Passkey{ID: "k", Subject: "alice", Credential: json.RawMessage(`{}`)}, now))
	require.ErrorIs(t, s.Enrol(ctx, "t1", approval.Passkey{ID: "k2", Subject: "alice", Credential: json.RawMessage(`{}`)}, now), approval.ErrInviteInvalid, "used")
	require.ErrorIs(t, s.BeginEnrolment(ctx, "t1", json.RawMessage(`{}`), now), approval.ErrInviteInvalid)
	_, err = s.Invite(ctx, "nope", now)
	require.ErrorIs(t, err, approval.ErrInviteInvalid)
}

func TestPayeeKnown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	op := fingerprint.NewNonce()
	_, err := s.Acquire(ctx, idemstore.Claim{OperationID: op, ParamHash: "h", Owner: "o", Subject: "alice", Scope: "payments.wire",
		TerminalTTL: time.Hour, FingerprintExp: time.Now().Add(time.Hour), BoundParams: json.RawMessage(`{"amount":5,"currency":"USD","payee_id":"p-9"}`)})
	require.NoError(t, err)
	known, err := s.PayeeKnown(ctx, "alice", "payments.wire", "p-9")
	require.NoError(t, err)
	assert.False(t, known, "in flight is not paid yet")
	require.NoError(t, s.Finalize(ctx, idemstore.Finalization{OperationID: op, Owner: "o", Final: idemstore.Final{State: idemstore.StateDone, Result: json.RawMessage(`{}`)}, TerminalTTL: time.Hour}))
	for _, tc := range []struct {
		subject, scope, payee string
		want                  bool
	}{
		{"alice", "payments.wire", "p-9", true},
		{"bob", "payments.wire", "p-9", false},
		{"alice", "payments.transfer", "p-9", false},
		{"alice", "payments.wire", "p-1", false},
	} {
		known, err := s.PayeeKnown(ctx, tc.subject, tc.scope, tc.payee)
		require.NoError(t, err)
		assert.Equal(t, tc.want, known, "%+v", tc)
	}
}
