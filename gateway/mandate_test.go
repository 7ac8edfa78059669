package gateway

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/oncegate/oncegate/mandate"
)

// TestPickMandate: a confirm that names no mandate is claimed under the
// subject's ACTIVE, begun mandate for the action and currency expiring
// first; without one under the newest signed one that ended (its refusal
// says why); never under another subject's, action's or currency's, nor a
// PROPOSED one.
func TestPickMandate(t *testing.T) {
	t.Parallel()
	now := confirmNow
	m := func(id, subject, currency string, state mandate.State, expiresIn time.Duration) mandate.Mandate {
		out := mandate.Mandate{ID: id, Subject: subject, State: state, SignedAt: now.Add(-time.Hour),
			Bounds: mandate.Bounds{Actions: []string{"payments.transfer"}, Currency: currency,
				NotBefore: now.Add(-time.Hour), ExpiresAt: now.Add(expiresIn)}}
		if state == mandate.StateProposed {
			out.SignedAt = time.Time{}
		}
		return out
	}
	later := m("later", "alice", "USD", mandate.StateActive, 2*time.Hour)
	sooner := m("sooner", "alice", "USD", mandate.StateActive, time.Hour)
	notBegun := m("not-begun", "alice", "USD", mandate.StateActive, time.Minute)
	notBegun.NotBefore = now.Add(time.Second)
	revoked := m("revoked", "alice", "USD", mandate.StateRevoked, 30*time.Minute)
	expired := m("expired", "alice", "USD", mandate.StateActive, -time.Minute)
	others := []mandate.Mandate{
		m("bobs", "bob", "USD", mandate.StateActive, time.Minute),
		m("euro", "alice", "EUR", mandate.StateActive, time.Minute),
		m("proposed", "alice", "USD", mandate.StateProposed, time.Minute),
		notBegun,
	}
	wire := m("wire", "alice", "USD", mandate.StateActive, time.Minute)
	wire.Actions = []string{"payments.wire"}
	others = append(others, wire)
	pick := func(all ...mandate.Mandate) string {
		got, ok := pickMandate(all, "alice", "payments.transfer", "USD", now)
		if !ok {
			return ""
		}
		return got.ID
	}
	assert.Equal(t, "sooner", pick(append(others, revoked, later, sooner)...), "the active one expiring first")
	assert.Equal(t, "later", pick(append(others, later, revoked)...))
	assert.Equal(t, "revoked", pick(append(others, revoked, expired)...), "no active one: the newest that ended")
	assert.Equal(t, "expired", pick(append(others, expired, revoked)...))
	assert.Empty(t, pick(others...), "none covers the action and currency")
}
