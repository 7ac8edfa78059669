package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// exerciseStore runs the tests of idemstore.Store beyond the state machine.
func exerciseStore(t *testing.T, newStore func(t *testing.T) idemstore.Store) {
	t.Helper()
	ctx := context.Background()
	acquire := func(t *testing.T, s idemstore.Store, c idemstore.Claim) {
		t.Helper()
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
	}

	// Not parallel, so that no other subtest's records are reaped.
	t.Run("Reap", func(t *testing.T) {
		s := newStore(t)
		now := time.Now()
		claim := func(exp time.Time, terminalTTL time.Duration) idemstore.Claim {
			c := NewClaim(t, "owner-a")
			c.FingerprintExp, c.TerminalTTL = exp, terminalTTL
			acquire(t, s, c)
			return c
		}
		exists := func(c idemstore.Claim) bool { return Exists(t, s, c) }
		// terminal_ttl 2h, exp in 1h: reapable after 2h.
		done := claim(now.Add(time.Hour), 2*time.Hour)
		f := Done(done, "owner-a")
		f.TerminalTTL = 2 * time.Hour
		require.NoError(t, s.Finalize(ctx, f))
		// Never reaped, however old: IN_FLIGHT and NEEDS_REVIEW.
		inFlight := claim(now.Add(-time.Hour), time.Minute)
		review := claim(now.Add(-time.Hour), time.Minute)
		require.NoError(t, s.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: review.OperationID, Reason: "unknown"}))

		n, err := s.Reap(ctx, now.Add(90*time.Minute)) // past exp, not the terminal TTL
		require.NoError(t, err)
		assert.EqualValues(t, 0, n, "this subtest runs first: nothing else is reapable")
		assert.True(t, exists(done))
		n, err = s.Reap(ctx, now.Add(3*time.Hour))
		require.NoError(t, err)
		// The truth's record is gone (a fast path may still replay it until its TTL).
		assert.GreaterOrEqual(t, n, int64(1))
		assert.True(t, exists(inFlight))
		assert.True(t, exists(review))
	})

	// Not parallel: it reaps the webhook receipts.
	t.Run("RecordWebhook", func(t *testing.T) {
		s := newStore(t)
		event := idemstore.WebhookParams{Scope: "payments.payout", Signature: "t=1,v1=" + NewKey(t)}
		first, err := s.RecordWebhook(ctx, event)
		require.NoError(t, err)
		assert.True(t, first)
		again, err := s.RecordWebhook(ctx, event)
		require.NoError(t, err)
		assert.False(t, again, "the same event twice is a replay")
		other, err := s.RecordWebhook(ctx, idemstore.WebhookParams{Scope: event.Scope, Signature: event.Signature + "0"})
		require.NoError(t, err)
		assert.True(t, other, "another event")

		// The reaper keeps a receipt as long as its event could be accepted.
		_, err = s.Reap(ctx, time.Now().Add(idemstore.WebhookReceiptRetention-time.Minute))
		require.NoError(t, err)
		again, err = s.RecordWebhook(ctx, event)
		require.NoError(t, err)
		assert.False(t, again, "kept within the retention")
		_, err = s.Reap(ctx, time.Now().Add(idemstore.WebhookReceiptRetention+time.Minute))
		require.NoError(t, err)
		fresh, err := s.RecordWebhook(ctx, event)
		require.NoError(t, err)
		assert.True(t, fresh, "reaped after the retention (its event is stale by then)")
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		var keys []string
		for i := range 3 {
			c := NewClaim(t, "owner-a")
			keys = append(keys, c.OperationID)
			acquire(t, s, c)
			switch i {
			case 1:
				require.NoError(t, s.Finalize(ctx, Done(c, "owner-a")))
			case 2:
				require.NoError(t, s.MarkNeedsReview(ctx, idemstore.MarkNeedsReviewParams{OperationID: c.OperationID, Reason: "unknown"}))
			}
		}
		// Other subtests write to a shared store: look at ours, in the order listed.
		ours := func(f idemstore.ListFilter) []string {
			t.Helper()
			recs, err := s.List(ctx, f)
			require.NoError(t, err)
			if f.Limit > 0 {
				assert.LessOrEqual(t, len(recs), f.Limit)
			}
			var out []string
			for _, r := range recs {
				if slices.Contains(keys, r.OperationID) {
					if f.State != "" {
						assert.Equal(t, f.State, r.State)
					}
					out = append(out, r.OperationID)
				}
			}
			return out
		}
		assert.Equal(t, []string{keys[2], keys[1], keys[0]}, ours(idemstore.ListFilter{Limit: 10_000}), "newest first")
		assert.Equal(t, []string{keys[0]}, ours(idemstore.ListFilter{State: operation.StateInFlight, Limit: 10_000}))
		assert.Equal(t, []string{keys[1]}, ours(idemstore.ListFilter{State: operation.StateDone, Limit: 10_000}))
		assert.Equal(t, []string{keys[2]}, ours(idemstore.ListFilter{State: operation.StateNeedsReview, Limit: 10_000}))
		recs, err := s.List(ctx, idemstore.ListFilter{Limit: 2})
		require.NoError(t, err)
		assert.Len(t, recs, 2)
		assert.Empty(t, ours(idemstore.ListFilter{State: operation.StateInFlight, OlderThan: time.Hour, Limit: 10_000}),
			"none of ours is an hour old")
	})

	t.Run("MarkNeedsReview", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		c := NewClaim(t, "owner-a")
		acquire(t, s, c)
		mark := idemstore.MarkNeedsReviewParams{OperationID: c.OperationID, Reason: "status endpoint unavailable"}
		require.NoError(t, s.MarkNeedsReview(ctx, mark))
		require.NoError(t, s.MarkNeedsReview(ctx, mark), "idempotent")

		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeInFlight, d.Outcome)
		assert.True(t, d.TruthFound)
		assert.Equal(t, operation.StateNeedsReview, d.Record.State)
		assert.Equal(t, "status endpoint unavailable", d.Record.Reason)
		rec, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateNeedsReview, rec.State)
		require.ErrorIs(t, s.Takeover(ctx, takeover(c.OperationID, "owner-a", "owner-b")), idemstore.ErrNotOwner)

		// An operator resolves it through the workflow, which finalizes as its owner.
		f := Failed(c, "owner-a")
		f.ResolvedBy, f.ResolutionNote, f.EvidenceURL = "ops", "bank says no", "https://tickets.example/1"
		f.FailureKind, f.ResolvedAt = operation.FailureOperator, time.Now().Add(-time.Second).UTC().Truncate(time.Millisecond)
		require.NoError(t, s.Finalize(ctx, f))
		rec, err = s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateFailed, rec.State)
		assert.Equal(t, "ops", rec.ResolvedBy)
		assert.Equal(t, "bank says no", rec.ResolutionNote)
		assert.Equal(t, "https://tickets.example/1", rec.EvidenceURL)
		assert.True(t, f.ResolvedAt.Equal(rec.ResolvedAt), "resolved_at %s, want %s", rec.ResolvedAt, f.ResolvedAt)

		late := idemstore.MarkNeedsReviewParams{OperationID: c.OperationID, Reason: "late"}
		require.ErrorIs(t, s.MarkNeedsReview(ctx, late), idemstore.ErrAlreadyTerminal)
		missing := idemstore.MarkNeedsReviewParams{OperationID: NewKey(t), Reason: "x"}
		require.ErrorIs(t, s.MarkNeedsReview(ctx, missing), idemstore.ErrNotFound)
	})

	t.Run("RecordDownstreamState", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		c := NewClaim(t, "owner-a")
		acquire(t, s, c)
		pending := idemstore.DownstreamStateParams{OperationID: c.OperationID, State: "pending"}
		require.NoError(t, s.RecordDownstreamState(ctx, pending))
		rec, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, "pending", rec.DownstreamState)

		require.NoError(t, s.Finalize(ctx, Done(c, "owner-a")))
		require.NoError(t, s.RecordDownstreamState(ctx, idemstore.DownstreamStateParams{OperationID: c.OperationID, State: "failed"}),
			"a late report on a finished record is ignored")
		rec, err = s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, operation.StateDone, rec.State)
		assert.Equal(t, "pending", rec.DownstreamState)
		missing := idemstore.DownstreamStateParams{OperationID: NewKey(t), State: "pending"}
		require.ErrorIs(t, s.RecordDownstreamState(ctx, missing), idemstore.ErrNotFound)
	})

	t.Run("FindRecent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		since := time.Now().Add(-time.Minute)
		subject := "subject-" + NewKey(t) // no other subtest's records
		claim := func(owner string) idemstore.Claim {
			c := NewClaim(t, owner)
			c.Subject = subject
			acquire(t, s, c)
			return c
		}
		find := func(p idemstore.FindRecentParams) (idemstore.Record, error) {
			t.Helper()
			return s.FindRecent(ctx, p)
		}
		intent := idemstore.FindRecentParams{Subject: subject, Scope: "payments.transfer",
			ParamHash: NewClaim(t, "").ParamHash, Since: since}
		_, err := find(intent)
		require.ErrorIs(t, err, idemstore.ErrNotFound)

		done := claim("owner-a")
		require.NoError(t, s.Finalize(ctx, Done(done, "owner-a")))
		refused := claim("owner-a")
		require.NoError(t, s.Finalize(ctx, Failed(refused, "owner-a")))
		rec, err := find(intent)
		require.NoError(t, err)
		assert.Equal(t, done.OperationID, rec.OperationID, "a failure refused by the downstream is not a recent intent")
		assert.Equal(t, operation.StateDone, rec.State)

		// Every other failure is reported: the user should hear of it first.
		for _, kind := range []operation.FailureKind{operation.FailureNotExecuted, operation.FailureOperator, ""} {
			c := claim("owner-a")
			f := Failed(c, "owner-a")
			f.Reason, f.FailureKind = "not executed", kind
			require.NoError(t, s.Finalize(ctx, f))
			rec, err = find(intent)
			require.NoError(t, err)
			assert.Equal(t, c.OperationID, rec.OperationID, "failed with kind %q", kind)
			assert.Equal(t, kind, rec.FailureKind)
		}
		running := claim("owner-b")
		rec, err = find(intent)
		require.NoError(t, err)
		assert.Equal(t, running.OperationID, rec.OperationID, "the most recent one, in flight")

		for name, p := range map[string]idemstore.FindRecentParams{
			"other subject": {Subject: "bob-" + NewKey(t), Scope: intent.Scope, ParamHash: intent.ParamHash, Since: since},
			"other scope":   {Subject: subject, Scope: "payments.legacy_transfer", ParamHash: intent.ParamHash, Since: since},
			"other params":  {Subject: subject, Scope: intent.Scope, ParamHash: "00" + intent.ParamHash[2:], Since: since},
			"before since":  {Subject: subject, Scope: intent.Scope, ParamHash: intent.ParamHash, Since: time.Now().Add(time.Hour)},
		} {
			_, err = find(p)
			assert.ErrorIs(t, err, idemstore.ErrNotFound, name)
		}
	})

	t.Run("ReleaseMissingKey", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		err := s.Release(ctx, idemstore.ReleaseParams{OperationID: NewKey(t), Owner: "owner-a"})
		require.ErrorIs(t, err, idemstore.ErrNotFound)
	})

	t.Run("FinalizeFastAfterFinalize", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		c := NewClaim(t, "owner-a")
		acquire(t, s, c)
		require.NoError(t, s.Finalize(ctx, Done(c, "owner-a")))
		// The gateway's refill after the workflow finished: the same outcome is no error.
		err := s.FinalizeFast(ctx, Done(c, "owner-a"))
		if errors.Is(err, idemstore.ErrUnavailable) {
			assert.True(t, s.Degraded(), "only a degraded store cannot reach its fast path")
		} else {
			require.NoError(t, err)
		}
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeDone, d.Outcome)
		assert.Equal(t, "tr_123", d.Record.ResultRef)
	})

	t.Run("Ready", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		require.NoError(t, s.Ready(ctx))
	})
}

// exerciseFastPath runs the tests of idemstore.FastPath beyond the state machine.
func exerciseFastPath(t *testing.T, newFast func(t *testing.T) idemstore.FastPath) {
	t.Helper()
	ctx := context.Background()

	t.Run("Refill", func(t *testing.T) {
		t.Parallel()
		s := newFast(t)
		c := NewClaim(t, "owner-a")
		_, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		rec := idemstore.Record{OperationID: c.OperationID, ParamHash: c.ParamHash, State: operation.StateDone, Owner: "owner-b",
			Subject: c.Subject, Scope: c.Scope, Result: []byte(`{"transfer_id":"tr_9"}`), ResultRef: "tr_9",
			ApprovalSHA256: "approval-9", ActingClient: "agent-app-9", CompletedAt: time.Now().Add(-time.Hour).Truncate(time.Millisecond)}
		// It replaces whatever the key holds, an in-flight claim included.
		require.NoError(t, s.Refill(ctx, idemstore.RefillParams{Record: rec, TTL: time.Hour}))
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, idemstore.OutcomeDone, d.Outcome)
		assert.Equal(t, "tr_9", d.Record.ResultRef)
		got, err := s.Get(ctx, c.OperationID)
		require.NoError(t, err)
		assert.Equal(t, "owner-b", got.Owner)
		assert.JSONEq(t, `{"transfer_id":"tr_9"}`, string(got.Result))
		for name, r := range map[string]idemstore.Record{"acquire": d.Record, "get": got} {
			assert.Equal(t, "approval-9", r.ApprovalSHA256, name)
			assert.Equal(t, "agent-app-9", r.ActingClient, name)
			assert.Equal(t, rec.CompletedAt.UnixMilli(), r.CompletedAt.UnixMilli(), name)
		}

		inFlight := rec
		inFlight.State = operation.StateInFlight
		require.Error(t, s.Refill(ctx, idemstore.RefillParams{Record: inFlight, TTL: time.Hour}), "only terminal records")
		require.Error(t, s.Refill(ctx, idemstore.RefillParams{Record: rec}), "a TTL is required")
	})

	t.Run("Ping", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, newFast(t).Ping(ctx))
	})

	t.Run("RecentIntentIndex", func(t *testing.T) {
		t.Parallel()
		s := newFast(t)
		subject := "subject-" + NewKey(t)
		read := func(scope, paramHash string) idemstore.IntentRead {
			t.Helper()
			r, err := s.RecentIntent(ctx, subject, scope, paramHash)
			require.NoError(t, err)
			return r
		}
		claim := func(exp time.Time) idemstore.Claim {
			t.Helper()
			c := NewClaim(t, "owner-a")
			c.Subject, c.FingerprintExp = subject, exp
			fc, err := s.Acquire(ctx, c)
			require.NoError(t, err)
			require.True(t, fc.Indexed, "the claim's intent is recorded in the same round trip")
			return c
		}
		intent := NewClaim(t, "")
		r := read(intent.Scope, intent.ParamHash)
		assert.Nil(t, r.Marker, "a new subject's index is not warm")
		assert.Nil(t, r.Entry)

		before := time.Now().Add(-time.Second)
		c := claim(time.Now().Add(15 * time.Minute))
		r = read(c.Scope, c.ParamHash)
		require.NotNil(t, r.Entry)
		assert.Equal(t, c.OperationID, r.Entry.OperationID)
		assert.WithinRange(t, r.Entry.CreatedAt, before, time.Now().Add(time.Second))
		assert.Nil(t, r.Marker, "a claim never warms the index")
		stamp := r.Entry.CreatedAt

		// A warm-up merges the truth's entries: an older one of the same
		// intent never replaces the claim's; another intent's is added.
		token, err := s.BeginWarm(ctx, subject, time.Hour)
		require.NoError(t, err)
		horizon := time.Now().Add(-24 * time.Hour).Truncate(time.Millisecond)
		older := idemstore.IntentEntry{Scope: c.Scope, ParamHash: c.ParamHash, OperationID: NewKey(t), CreatedAt: stamp.Add(-time.Minute)}
		other := idemstore.IntentEntry{Scope: "payments.legacy_transfer", ParamHash: c.ParamHash, OperationID: NewKey(t),
			CreatedAt: stamp.Add(-time.Hour)}
		marker := idemstore.IndexMarker{Epoch: 7, Horizon: horizon}
		ok, err := s.CommitWarm(ctx, idemstore.WarmParams{Subject: subject, Token: "not-" + token, Marker: marker,
			Entries: []idemstore.IntentEntry{other}, TTL: time.Hour})
		require.NoError(t, err)
		assert.False(t, ok, "another warm-up's token commits nothing")
		assert.Nil(t, read(other.Scope, other.ParamHash).Entry)
		ok, err = s.CommitWarm(ctx, idemstore.WarmParams{Subject: subject, Token: token, Marker: marker,
			Entries: []idemstore.IntentEntry{older, other}, TTL: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
		r = read(c.Scope, c.ParamHash)
		require.NotNil(t, r.Marker)
		assert.Equal(t, marker.Epoch, r.Marker.Epoch)
		assert.True(t, marker.Horizon.Equal(r.Marker.Horizon), "%s, want %s", r.Marker.Horizon, marker.Horizon)
		assert.Equal(t, c.OperationID, r.Entry.OperationID, "the newer entry survives the warm-up")
		assert.Equal(t, other.OperationID, read(other.Scope, other.ParamHash).Entry.OperationID)
		ok, err = s.CommitWarm(ctx, idemstore.WarmParams{Subject: subject, Token: token, Marker: marker, TTL: time.Hour})
		require.NoError(t, err)
		assert.False(t, ok, "a token commits once")

		// A newer claim of the intent replaces the entry; a replay keeps
		// its first stamp; a replay of the older operation after its
		// fingerprint's exp (stamped at exp) does not come back. Stamps
		// are kept in milliseconds: the newer claim is made in a later
		// millisecond than the first's, or it could not be stamped after it.
		for !time.Now().Truncate(time.Millisecond).After(stamp) {
			time.Sleep(100 * time.Microsecond)
		}
		d := claim(time.Now().Add(15 * time.Minute))
		r = read(c.Scope, c.ParamHash)
		assert.Equal(t, d.OperationID, r.Entry.OperationID)
		first := r.Entry.CreatedAt
		_, err = s.Acquire(ctx, d)
		require.NoError(t, err)
		assert.True(t, first.Equal(read(c.Scope, c.ParamHash).Entry.CreatedAt), "a replay keeps the first stamp")
		require.True(t, first.After(stamp), "the newer claim is stamped after the first")
		expired := c
		expired.FingerprintExp = stamp
		_, err = s.Acquire(ctx, expired)
		require.NoError(t, err)
		assert.Equal(t, d.OperationID, read(c.Scope, c.ParamHash).Entry.OperationID, "an older stamp never replaces a newer one")

		// A claim made after its fingerprint's exp (a replay of an
		// operation claimed before it) is stamped at most at exp.
		exp := time.Now().Add(-time.Hour).Truncate(time.Second)
		late := NewClaim(t, "owner-a")
		late.Subject, late.Scope, late.FingerprintExp = subject, "payments.payout", exp
		_, err = s.Acquire(ctx, late)
		require.NoError(t, err)
		assert.True(t, exp.Equal(read(late.Scope, late.ParamHash).Entry.CreatedAt))
	})
}
