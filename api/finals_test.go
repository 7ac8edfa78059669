package api

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/status"
)

// withFinals turns the gateway's finished-record cache on (Config.FinalCache).
func withFinals(size int) func(*gateway.Deps) {
	return func(d *gateway.Deps) { d.Config.FinalCache = size }
}

// storeCalls is how often the store was asked about an operation: a
// claim, or a read (Outcome reads as Get).
// storeCalls is how many times the store was asked to read or write.
func (b *bundle) storeCalls() int {
	c := b.store.Counts()
	return c.Writes + c.Reads
}

// sameAnswer asserts that two answers are the same but for their trace.
func sameAnswer(t *testing.T, want, got resp) {
	t.Helper()
	assert.Equal(t, want.code, got.code)
	delete(want.body, "trace_id")
	delete(got.body, "trace_id")
	assert.Equal(t, want.body, got.body)
	for _, h := range []string{HeaderReplayed, "Content-Type", "Retry-After"} {
		assert.Equal(t, want.header.Get(h), got.header.Get(h), h)
	}
	assert.NotEmpty(t, got.header.Get("X-Trace-Id"))
}

// TestFinishedOperationsAreAnsweredByTheGateway: once the gateway has read
// a finished operation from the store (a status poll, a replayed confirm),
// its next replays and status polls are answered without asking the store,
// the same answers the store's record gives; another subject still does
// not see it; and once the replay is no longer owed (completed_at +
// terminal_ttl) the store is asked again.
func TestFinishedOperationsAreAnsweredByTheGateway(t *testing.T) {
	t.Parallel()
	b := setup(t, withFinals(16))
	pv := b.preview(t, "dev-alice", "payments.transfer", transferParams)
	fp, opID := pv.str("fingerprint"), pv.str("operation_id")
	require.Equal(t, status.Completed, b.confirm(t, "dev-alice", "payments.transfer", fp, transferParams).status())

	calls := b.storeCalls()
	misses := b.metric(t, "oncegate_final_cache_lookups_total", "miss")
	fromStore := b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "")
	require.Equal(t, status.Completed, fromStore.status(), fromStore.raw)
	require.Equal(t, calls+1, b.storeCalls(), "the first status poll reads the store")
	assert.InDelta(t, misses+1, b.metric(t, "oncegate_final_cache_lookups_total", "miss"), 0, "a lookup that found nothing kept is a miss")
	assert.Zero(t, b.metric(t, "oncegate_final_cache_lookups_total", "hit"))

	calls = b.storeCalls()
	kept := b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "")
	sameAnswer(t, fromStore, kept)
	replay := b.confirm(t, "dev-alice", "payments.transfer", fp, transferParams)
	assert.Equal(t, status.AlreadyCompleted, replay.status(), replay.raw)
	assert.Equal(t, "true", replay.header.Get(HeaderReplayed))
	assert.Equal(t, calls, b.storeCalls(), "a kept finished operation is answered without the store")
	assert.InDelta(t, 2, b.metric(t, "oncegate_final_cache_lookups_total", "hit"), 0, "the kept status poll and replay are hits")

	other := b.do(t, "GET", "/v1/operations/"+opID, "dev-bob", "")
	assert.Equal(t, status.UnknownOperation, other.status(), "another subject's kept operation does not exist for them")

	b.clock.Add(testCatalog().Actions["payments.transfer"].TerminalTTL)
	calls, misses = b.storeCalls(), b.metric(t, "oncegate_final_cache_lookups_total", "miss")
	late := b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "")
	sameAnswer(t, fromStore, late)
	assert.Equal(t, calls+1, b.storeCalls(), "past completed_at + terminal_ttl the store is asked again")
	assert.InDelta(t, misses+1, b.metric(t, "oncegate_final_cache_lookups_total", "miss"), 0, "a kept record past its replay is a miss")
	assert.Equal(t, 1, b.started())
}

// TestReplaysAreKeptFromTheStoresAnswer: a replayed confirm keeps what the
// store answered, and the same answer comes back without it; with the
// cache off (FinalCache 0, as in a Config built in Go) every replay asks
// the store.
func TestReplaysAreKeptFromTheStoresAnswer(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, 16} {
		b := setup(t, withFinals(size))
		params := `{"amount":20000,"currency":"USD","payee_id":"p-1"}`
		fp := b.preview(t, "dev-alice", "payments.legacy_transfer", params).str("fingerprint")
		require.Equal(t, status.Failed, b.confirm(t, "dev-alice", "payments.legacy_transfer", fp, params).status())
		calls := b.storeCalls()
		first := b.confirm(t, "dev-alice", "payments.legacy_transfer", fp, params)
		require.Equal(t, status.AlreadyFailed, first.status(), first.raw)
		require.Equal(t, calls+1, b.storeCalls(), "the first replay asks the store")
		second := b.confirm(t, "dev-alice", "payments.legacy_transfer", fp, params)
		sameAnswer(t, first, second)
		want := calls + 1
		if size == 0 {
			want++
		}
		assert.Equal(t, want, b.storeCalls(), "FinalCache %d", size)
	}
}

// TestStillMovingOperationsAreNotKept: an operation in flight or waiting
// for review is asked of the store every time, so its outcome is seen the
// moment the store has it.
func TestStillMovingOperationsAreNotKept(t *testing.T) {
	t.Parallel()
	b := setup(t, withFinals(16))
	params := `{"amount":"12.50","currency":"USD","payee_id":"slow"}`
	pv := b.preview(t, "dev-alice", "payments.legacy_transfer", params)
	opID := pv.str("operation_id")
	require.Equal(t, status.InProgress, b.confirm(t, "dev-alice", "payments.legacy_transfer", pv.str("fingerprint"), params).status())
	r := b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "")
	require.Equal(t, status.InProgress, r.status(), r.raw)
	close(b.release)
	require.Eventually(t, func() bool {
		return b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "").status() == status.Completed
	}, 5*time.Second, 10*time.Millisecond)
}
