package storetest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/mandate"
	"github.com/oncegate/oncegate/operation"
)

// MandateStore is a backend that keeps standing mandates beside its
// operations and passkeys (the PostgreSQL truth, the in-memory store): its
// claims under a mandate reserve it in the claim itself.
type MandateStore interface {
	idemstore.Store
	approval.Store
	mandate.Store
}

// ExerciseMandates runs the tests of the standing mandates against the
// stores newStore returns: a claim under a mandate is acquired and
// reserves its amount and one of its count only inside every bound (the
// subject's own, ACTIVE, begun, unexpired, unrevoked mandate of its action
// and currency, a payee it covers, at most the maximum per operation, the
// remaining total and count), or is refused with mandate.Check's reason
// writing nothing; concurrent claims never exceed it; a revocation ends
// it for every claim after it; a reservation is released exactly as a
// budget's is. Every subtest uses its own subjects and mandates, so the
// stores may be shared.
func ExerciseMandates(t *testing.T, newStore func(t *testing.T) MandateStore) {
	t.Helper()
	ctx := context.Background()
	setup := func(t *testing.T) (MandateStore, string) {
		t.Helper()
		return newStore(t), newSubject(t)
	}

	t.Run("ProposedReadsBackAndCoversNothing", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		m := proposed(t, s, subject, bounds{})
		got, err := s.Mandate(ctx, m.ID)
		require.NoError(t, err)
		assert.Equal(t, mandate.StateProposed, got.State)
		assert.Equal(t, subject, got.Subject)
		assert.Equal(t, []string{"payments.transfer"}, got.Actions)
		assert.Equal(t, []string{"p-1", "p-2"}, got.Payees)
		assert.False(t, got.PayeesKnown)
		assertDec(t, "100", got.MaxPerOperation, "max per operation")
		assertDec(t, "500", got.MaxTotal, "max total")
		assert.Equal(t, 10, got.MaxCount)
		assert.Equal(t, mandate.StatementSHA256(got), got.StatementSHA256, "the hash of the bounds as stored")
		assertDec(t, "0", got.Used, "nothing used")
		assert.Zero(t, got.UsedCount)

		c := underMandate(t, subject, m, "10", "p-1")
		refused(t, s, c, mandate.ReasonNotApplicable)

		_, err = s.Mandate(ctx, "no-such-mandate")
		require.ErrorIs(t, err, mandate.ErrNotFound)
		c.Mandate.MandateID = "no-such-mandate"
		refused(t, s, c, mandate.ReasonNotApplicable)
	})

	t.Run("InsaneBoundsAreNeverStored", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		good := proposed(t, s, subject, bounds{})
		for name, change := range map[string]func(*mandate.Mandate){
			"total below per operation": func(m *mandate.Mandate) { m.MaxTotal = dec(t, "99.99") },
			"zero per operation":        func(m *mandate.Mandate) { m.MaxPerOperation = dec(t, "0") },
			"no count":                  func(m *mandate.Mandate) { m.MaxCount = 0 },
			"ends when it begins":       func(m *mandate.Mandate) { m.ExpiresAt = m.NotBefore },
			"no payees":                 func(m *mandate.Mandate) { m.Payees = nil },
		} {
			m := good
			m.ID = NewKey(t)
			change(&m)
			_, err := s.ProposeMandate(ctx, m)
			require.ErrorIs(t, err, mandate.ErrInvalid, name)
			_, err = s.Mandate(ctx, m.ID)
			require.ErrorIs(t, err, mandate.ErrNotFound, "%s: nothing stored", name)
		}
	})

	t.Run("SigningActivatesOnceWithTheSubjectsPasskey", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		m := proposed(t, s, subject, bounds{})
		cred := enrol(t, s, subject)
		other := enrol(t, s, newSubject(t))
		sg := signed(m, cred, 1)

		wrong := sg
		wrong.StatementSHA256 = "0000"
		_, err := s.ActivateMandate(ctx, wrong)
		require.ErrorIs(t, err, mandate.ErrNotProposed, "another statement than the bounds kept")
		wrong = sg
		wrong.Subject = "someone-else"
		_, err = s.ActivateMandate(ctx, wrong)
		require.ErrorIs(t, err, mandate.ErrNotFound, "another subject's mandate")
		wrong = sg
		wrong.CredentialID = other
		_, err = s.ActivateMandate(ctx, wrong)
		require.ErrorIs(t, err, approval.ErrNotFound, "another person's passkey")

		got, err := s.ActivateMandate(ctx, sg)
		require.NoError(t, err)
		assert.Equal(t, mandate.StateActive, got.State)
		assert.Equal(t, cred, got.CredentialID)
		assert.Equal(t, sg.EvidenceSHA256, got.EvidenceSHA256)
		sameTime(t, sg.At, got.SignedAt, "signed at")
		_, err = s.ActivateMandate(ctx, signed(m, cred, 2))
		require.ErrorIs(t, err, mandate.ErrNotProposed, "signed once")

		m2 := proposed(t, s, subject, bounds{})
		_, err = s.ActivateMandate(ctx, signed(m2, cred, 1))
		require.ErrorIs(t, err, approval.ErrSignCount, "a replayed assertion's counter")
		got, err = s.Mandate(ctx, m2.ID)
		require.NoError(t, err)
		assert.Equal(t, mandate.StateProposed, got.State, "a refused signature changes nothing")
	})

	t.Run("ClaimInsideReservesAndNamesTheMandate", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		m := active(t, s, subject, bounds{})
		c := underMandate(t, subject, m, "100.00", "p-2")
		d := acquired(t, s, c)
		assert.Equal(t, m.ID, d.Record.MandateID)
		assert.Equal(t, m.StatementSHA256, d.Record.MandateSHA256)
		rec, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, m.ID, rec.MandateID, "the record names the mandate")
		assert.Equal(t, m.StatementSHA256, rec.MandateSHA256, "and its statement's hash")
		assertUsed(t, s, m.ID, "100", 1)

		again, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeInFlight, again.Outcome, "a retry finds the claim")
		assertUsed(t, s, m.ID, "100", 1)
	})

	t.Run("ConcurrentClaimsNeverExceedTheTotal", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		m := active(t, s, subject, bounds{})
		outcomes := concurrentClaims(t, s, subject, m, 50, "100")
		assert.Equal(t, map[string]int{string(idemstore.OutcomeAcquired): 5, string(mandate.ReasonExceeded): 45}, outcomes)
		assertUsed(t, s, m.ID, "500", 5)
	})

	t.Run("ConcurrentClaimsNeverExceedTheCount", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		m := active(t, s, subject, bounds{count: 3})
		outcomes := concurrentClaims(t, s, subject, m, 20, "1")
		assert.Equal(t, map[string]int{string(idemstore.OutcomeAcquired): 3, string(mandate.ReasonExceeded): 17}, outcomes)
		assertUsed(t, s, m.ID, "3", 3)
	})

	t.Run("OutsideItsBoundsIsRefusedWithTheReason", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		m := active(t, s, subject, bounds{})
		refused(t, s, underMandate(t, subject, m, "120.00", "p-1"), mandate.ReasonExceeded)
		refused(t, s, underMandate(t, subject, m, "10", "p-9"), mandate.ReasonPayeeNotInMandate)
		refused(t, s, underMandate(t, newSubject(t), m, "10", "p-1"), mandate.ReasonNotApplicable)
		otherAction := underMandate(t, subject, m, "10", "p-1")
		otherAction.Scope = "payments.legacy_transfer"
		refused(t, s, otherAction, mandate.ReasonNotApplicable)
		otherCurrency := underMandate(t, subject, m, "10", "p-1")
		otherCurrency.Mandate.Currency = "EUR"
		refused(t, s, otherCurrency, mandate.ReasonNotApplicable)
		later := active(t, s, subject, bounds{notBefore: time.Hour})
		refused(t, s, underMandate(t, subject, later, "10", "p-1"), mandate.ReasonNotApplicable)
		assertUsed(t, s, m.ID, "0", 0)
		acquired(t, s, underMandate(t, subject, m, "100", "p-1"))
	})

	t.Run("PayeesAlreadyPaid", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		m := active(t, s, subject, bounds{known: true})
		refused(t, s, underMandate(t, subject, m, "10", "p-7"), mandate.ReasonPayeeNotInMandate)
		paid := NewClaim(t, "o-paid")
		paid.Subject, paid.BoundParams = subject, json.RawMessage(`{"amount":10,"currency":"USD","payee_id":"p-7"}`)
		acquired(t, s, paid)
		refused(t, s, underMandate(t, subject, m, "10", "p-7"), mandate.ReasonPayeeNotInMandate)
		require.NoError(t, s.Finalize(ctx, Done(paid, "o-paid")))
		acquired(t, s, underMandate(t, subject, m, "10", "p-7"))
	})

	t.Run("RevocationEndsItForEveryLaterClaim", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		m := active(t, s, subject, bounds{})
		before := underMandate(t, subject, m, "50", "p-1")
		acquired(t, s, before)
		_, err := s.RevokeMandate(ctx, mandate.Revocation{ID: m.ID, Subject: "someone-else", By: "x", At: time.Now()})
		require.ErrorIs(t, err, mandate.ErrNotFound, "a person revokes only their own")
		got, err := s.RevokeMandate(ctx, mandate.Revocation{ID: m.ID, Subject: subject, By: subject, TraceID: "t-rev", At: time.Now()})
		require.NoError(t, err)
		assert.Equal(t, mandate.StateRevoked, got.State)
		assert.Equal(t, subject, got.RevokedBy)
		for range 3 {
			refused(t, s, underMandate(t, subject, m, "1", "p-1"), mandate.ReasonRevoked)
		}
		again, err := s.Acquire(ctx, before)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeInFlight, again.Outcome, "a claim made before stands")
		assertUsed(t, s, m.ID, "50", 1)
		_, err = s.RevokeMandate(ctx, mandate.Revocation{ID: m.ID, By: "ops", At: time.Now()})
		require.ErrorIs(t, err, mandate.ErrAlreadyEnded)
		_, err = s.ActivateMandate(ctx, signed(m, enrol(t, s, subject), 5))
		require.ErrorIs(t, err, mandate.ErrNotProposed, "a revoked mandate is never signed again")

		byOps := active(t, s, subject, bounds{})
		_, err = s.RevokeMandate(ctx, mandate.Revocation{ID: byOps.ID, By: "ops", At: time.Now()})
		require.NoError(t, err, "an operator revokes any")
		refused(t, s, underMandate(t, subject, byOps, "1", "p-1"), mandate.ReasonRevoked)
	})

	t.Run("ReleasedOnlyWhenNonExecutionIsProved", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		m := active(t, s, subject, bounds{count: 5})
		claim := func(owner string) idemstore.Claim {
			c := underMandate(t, subject, m, "10", "p-1")
			c.Owner = owner
			acquired(t, s, c)
			return c
		}
		done, refusedDown, notExecuted, review, unstarted := claim("o1"), claim("o2"), claim("o3"), claim("o4"), claim("o5")
		assertUsed(t, s, m.ID, "50", 5)
		require.NoError(t, s.Finalize(ctx, Done(done, "o1")))
		assertUsed(t, s, m.ID, "50", 5)
		require.NoError(t, s.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: review.OperationID, Reason: "unknown"}))
		assertUsed(t, s, m.ID, "50", 5)
		require.NoError(t, s.Finalize(ctx, Failed(refusedDown, "o2")))
		assertUsed(t, s, m.ID, "40", 4)
		f := Failed(notExecuted, "o3")
		f.FailureKind = operation.FailureNotExecuted
		require.NoError(t, s.Finalize(ctx, f))
		assertUsed(t, s, m.ID, "30", 3)
		require.NoError(t, s.Release(ctx, idemstore.ReleaseParams{OperationID: unstarted.OperationID, Owner: "o5"}))
		assertUsed(t, s, m.ID, "20", 2)
		acquired(t, s, underMandate(t, subject, m, "10", "p-1"))
		assertUsed(t, s, m.ID, "30", 3)
	})

	t.Run("ExpiredCoversNothing", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		m := active(t, s, subject, bounds{expiresIn: 1500 * time.Millisecond})
		require.Eventually(t, func() bool { return time.Now().After(m.ExpiresAt.Add(10 * time.Millisecond)) },
			3*time.Second, 20*time.Millisecond, "the clock passes expires_at")
		refused(t, s, underMandate(t, subject, m, "1", "p-1"), mandate.ReasonExpired)
		got, err := s.Mandate(ctx, m.ID)
		require.NoError(t, err)
		assert.Equal(t, mandate.StateExpired, got.StateAt(time.Now()))
		_, err = s.RevokeMandate(ctx, mandate.Revocation{ID: m.ID, By: "ops", At: time.Now()})
		require.ErrorIs(t, err, mandate.ErrAlreadyEnded)
	})

	t.Run("ListsBySubjectNewestFirst", func(t *testing.T) {
		t.Parallel()
		s, subject := setup(t)
		first := proposed(t, s, subject, bounds{})
		second := proposed(t, s, subject, bounds{})
		proposed(t, s, newSubject(t), bounds{})
		got, err := s.Mandates(ctx, mandate.ListFilter{Subject: subject})
		require.NoError(t, err)
		require.Len(t, got, 2)
		assert.Equal(t, []string{second.ID, first.ID}, []string{got[0].ID, got[1].ID})
	})
}

// bounds vary the mandate proposed: zero values are 10 × 100.00 USD, 500.00
// in total, payees p-1 and p-2, from a minute ago for an hour.
type bounds struct {
	count     int
	known     bool
	notBefore time.Duration
	expiresIn time.Duration
}

// proposed is a fresh PROPOSED mandate of subject for payments.transfer.
func proposed(t *testing.T, s MandateStore, subject string, b bounds) mandate.Mandate {
	t.Helper()
	now := time.Now()
	m := mandate.Mandate{ID: NewKey(t), Subject: subject, Description: "invoices", ProposedAt: now.Truncate(time.Microsecond),
		ProposeTraceID: "t-propose", Bounds: mandate.Bounds{Actions: []string{"payments.transfer"}, Currency: "USD",
			MaxPerOperation: dec(t, "100.00"), MaxTotal: dec(t, "500.00"), MaxCount: 10, Payees: []string{"p-1", "p-2"},
			NotBefore: now.Add(-time.Minute).Truncate(time.Second), ExpiresAt: now.Add(time.Hour).Truncate(time.Second)}}
	if b.count > 0 {
		m.MaxCount = b.count
		m.MaxTotal = dec(t, "1000")
	}
	if b.known {
		m.Payees, m.PayeesKnown = nil, true
	}
	if b.notBefore != 0 {
		m.NotBefore = now.Add(b.notBefore).Truncate(time.Second)
		m.ExpiresAt = m.NotBefore.Add(time.Hour)
	}
	if b.expiresIn != 0 {
		m.ExpiresAt = now.Add(b.expiresIn).Truncate(time.Microsecond)
	}
	got, err := s.ProposeMandate(context.Background(), m)
	require.NoError(t, err)
	return got
}

// active is a fresh mandate of subject signed by a fresh passkey of theirs.
func active(t *testing.T, s MandateStore, subject string, b bounds) mandate.Mandate {
	t.Helper()
	m := proposed(t, s, subject, b)
	got, err := s.ActivateMandate(context.Background(), signed(m, enrol(t, s, subject), 1))
	require.NoError(t, err)
	require.Equal(t, mandate.StateActive, got.State)
	return got
}

// ActiveMandate is a fresh ACTIVE mandate of subject for payments.transfer
// (10 × 100.00 USD, 500.00 in total, payees p-1 and p-2, from a minute ago
// for an hour), signed by a fresh passkey of theirs: for the tests of the
// confirm under a mandate.
func ActiveMandate(t *testing.T, s MandateStore, subject string) mandate.Mandate {
	t.Helper()
	return active(t, s, subject, bounds{})
}

// signed is m's signature by passkey cred carrying count, now.
func signed(m mandate.Mandate, cred string, count uint32) mandate.Signed {
	return mandate.Signed{ID: m.ID, Subject: m.Subject, StatementSHA256: m.StatementSHA256, CredentialID: cred, SignCount: count,
		Evidence: []byte(`{"signature":"s"}`), EvidenceSHA256: "e-mandate", TraceID: "t-sign", At: time.Now().Truncate(time.Microsecond)}
}

// underMandate is a fresh claim of subject for amount USD to payee under m.
func underMandate(t *testing.T, subject string, m mandate.Mandate, amount, payee string) idemstore.Claim {
	t.Helper()
	c := NewClaim(t, "owner-"+NewKey(t)[:8])
	c.Subject = subject
	c.Mandate = &mandate.Use{MandateID: m.ID, StatementSHA256: m.StatementSHA256, Amount: dec(t, amount), Currency: "USD", Payee: payee}
	return c
}

// refused claims c, which must be refused under its mandate for reason,
// and checks that nothing was written.
func refused(t *testing.T, s idemstore.Store, c idemstore.Claim, reason approval.Reason) {
	t.Helper()
	d, err := s.Acquire(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, idemstore.OutcomeMandateRefused, d.Outcome, "refused, reason %q", d.MandateRefusal)
	assert.Equal(t, reason, d.MandateRefusal)
	_, err = s.Get(context.Background(), c.OperationID)
	require.ErrorIs(t, err, idemstore.ErrNotFound, "a refused claim writes nothing")
}

// concurrentClaims claims n distinct operations of amount under m at once
// and counts the outcomes (a refusal by its reason).
func concurrentClaims(t *testing.T, s idemstore.Store, subject string, m mandate.Mandate, n int, amount string) map[string]int {
	t.Helper()
	var mu sync.Mutex
	outcomes := map[string]int{}
	var wg sync.WaitGroup
	for range n {
		c := underMandate(t, subject, m, amount, "p-1")
		wg.Go(func() {
			d, err := s.Acquire(context.Background(), c)
			assert.NoError(t, err)
			key := string(d.Outcome)
			if d.Outcome == idemstore.OutcomeMandateRefused {
				key = string(d.MandateRefusal)
			}
			mu.Lock()
			outcomes[key]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return outcomes
}

// assertUsed asserts what mandate id's unreleased reservations hold.
func assertUsed(t *testing.T, s mandate.Store, id, used string, count int) {
	t.Helper()
	m, err := s.Mandate(context.Background(), id)
	require.NoError(t, err)
	assertDec(t, used, m.Used, "used")
	assert.Equal(t, count, m.UsedCount, "count")
}
