package mandate_test

import (
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/mandate"
)

// dec parses a decimal.
func dec(t *testing.T, s string) apd.Decimal {
	t.Helper()
	d, _, err := apd.NewFromString(s)
	require.NoError(t, err)
	return *d
}

var now = time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)

// proposal is a valid proposal: 10 × 100.00 USD, 500.00 in total, for a day.
func proposal(t *testing.T) mandate.Proposal {
	return mandate.Proposal{Description: "pay the invoices", Bounds: mandate.Bounds{
		Actions: []string{"payments.transfer", "payments.transfer"}, Currency: " usd ", MaxPerOperation: dec(t, "100.00"),
		MaxTotal: dec(t, "500.00"), MaxCount: 10, Payees: []string{"p-2", "p-1"}, ExpiresAt: now.Add(24 * time.Hour)}}
}

func TestValidate(t *testing.T) {
	m, err := mandate.Validate(proposal(t), "m1", "alice", now, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"payments.transfer"}, m.Actions, "sorted, without duplicates")
	assert.Equal(t, []string{"p-1", "p-2"}, m.Payees)
	assert.Equal(t, "USD", m.Currency)
	assert.Equal(t, "100", mandate.DecimalText(&m.MaxPerOperation))
	assert.Equal(t, now, m.NotBefore, "from the proposal by default")
	assert.Equal(t, mandate.StateProposed, m.State)

	for name, tc := range map[string]struct {
		change func(*mandate.Proposal)
		want   string
	}{
		"no action":          {func(p *mandate.Proposal) { p.Actions = nil }, "actions"},
		"unknown currency":   {func(p *mandate.Proposal) { p.Currency = "XXX" }, "currency"},
		"zero per operation": {func(p *mandate.Proposal) { p.MaxPerOperation = dec(t, "0") }, "max_per_operation"},
		"cents of a yen":     {func(p *mandate.Proposal) { p.Currency = "JPY"; p.MaxTotal = dec(t, "500.5") }, "decimal places"},
		"per op above total": {func(p *mandate.Proposal) { p.MaxPerOperation = dec(t, "600") }, "above max_total"},
		"no count":           {func(p *mandate.Proposal) { p.MaxCount = 0 }, "max_count"},
		"no payees":          {func(p *mandate.Proposal) { p.Payees = nil }, "payees"},
		"both payee kinds":   {func(p *mandate.Proposal) { p.PayeesKnown = true }, "not both"},
		"invisible payee":    {func(p *mandate.Proposal) { p.Payees = []string{"p\u200b1"} }, "identifier"},
		"expired":            {func(p *mandate.Proposal) { p.ExpiresAt = now }, "not in the future"},
		"ends before start":  {func(p *mandate.Proposal) { p.NotBefore = now.Add(48 * time.Hour) }, "not after not_before"},
		"too long":           {func(p *mandate.Proposal) { p.ExpiresAt = now.Add(mandate.DefaultMaxLifetime + time.Second) }, "maximum"},
	} {
		t.Run(name, func(t *testing.T) {
			p := proposal(t)
			tc.change(&p)
			_, err := mandate.Validate(p, "m1", "alice", now, 0)
			require.ErrorIs(t, err, mandate.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err = mandate.Validate(proposal(t), "m1", "alice", now, time.Hour)
	require.ErrorIs(t, err, mandate.ErrInvalid, "the deployment's maximum lifetime bounds it")
	known := proposal(t)
	known.Payees, known.PayeesKnown = nil, true
	_, err = mandate.Validate(known, "m1", "alice", now, 0)
	require.NoError(t, err)
}

func TestStatement(t *testing.T) {
	m, err := mandate.Validate(proposal(t), "m1", "alice", now, 0)
	require.NoError(t, err)
	assert.Equal(t, `{"actions":["payments.transfer"],"currency":"USD","expires_at":1796612400,"mandate_id":"m1","max_count":10,"max_per_operation":"100","max_total":"500","not_before":1796526000,"payees":["p-1","p-2"],"subject":"alice","v":"oncegate-mandate/1"}`,
		string(mandate.Statement(m)), "canonical: keys sorted, no white space")
	hash := mandate.StatementSHA256(m)
	assert.Len(t, hash, 64)

	described := m
	described.Description = "something else entirely"
	assert.Equal(t, hash, mandate.StatementSHA256(described), "the description is not signed")
	for name, change := range map[string]func(*mandate.Mandate){
		"subject":    func(m *mandate.Mandate) { m.Subject = "bob" },
		"total":      func(m *mandate.Mandate) { m.MaxTotal = dec(t, "501") },
		"count":      func(m *mandate.Mandate) { m.MaxCount = 11 },
		"payees":     func(m *mandate.Mandate) { m.Payees = []string{"p-1"} },
		"known":      func(m *mandate.Mandate) { m.Payees, m.PayeesKnown = nil, true },
		"expiry":     func(m *mandate.Mandate) { m.ExpiresAt = m.ExpiresAt.Add(time.Second) },
		"currency":   func(m *mandate.Mandate) { m.Currency = "EUR" },
		"actions":    func(m *mandate.Mandate) { m.Actions = []string{"payments.legacy_transfer"} },
		"per op":     func(m *mandate.Mandate) { m.MaxPerOperation = dec(t, "99.99") },
		"not before": func(m *mandate.Mandate) { m.NotBefore = m.NotBefore.Add(time.Second) },
	} {
		changed := m
		change(&changed)
		assert.NotEqual(t, hash, mandate.StatementSHA256(changed), "%s is signed", name)
	}
}

func TestCheck(t *testing.T) {
	m, err := mandate.Validate(proposal(t), "m1", "alice", now, 0)
	require.NoError(t, err)
	m.State = mandate.StateActive
	use := mandate.Use{MandateID: "m1", Amount: dec(t, "100"), Currency: "USD", Payee: "p-1"}
	at := now.Add(time.Hour)
	assert.Empty(t, mandate.Check(m, "alice", "payments.transfer", use, at, false), "inside every bound")

	for name, tc := range map[string]struct {
		change func(*mandate.Mandate, *mandate.Use) (subject, scope string, at time.Time)
		want   approval.Reason
	}{
		"another subject": {func(*mandate.Mandate, *mandate.Use) (string, string, time.Time) {
			return "bob", "payments.transfer", at
		}, mandate.ReasonNotApplicable},
		"another action": {func(*mandate.Mandate, *mandate.Use) (string, string, time.Time) {
			return "alice", "payments.legacy_transfer", at
		}, mandate.ReasonNotApplicable},
		"another currency": {func(_ *mandate.Mandate, u *mandate.Use) (string, string, time.Time) {
			u.Currency = "EUR"
			return "alice", "payments.transfer", at
		}, mandate.ReasonNotApplicable},
		"not signed": {func(m *mandate.Mandate, _ *mandate.Use) (string, string, time.Time) {
			m.State = mandate.StateProposed
			return "alice", "payments.transfer", at
		}, mandate.ReasonNotApplicable},
		"not begun": {func(*mandate.Mandate, *mandate.Use) (string, string, time.Time) {
			return "alice", "payments.transfer", now.Add(-time.Second)
		}, mandate.ReasonNotApplicable},
		"revoked": {func(m *mandate.Mandate, _ *mandate.Use) (string, string, time.Time) {
			m.State = mandate.StateRevoked
			return "alice", "payments.transfer", at
		}, mandate.ReasonRevoked},
		"expired": {func(m *mandate.Mandate, _ *mandate.Use) (string, string, time.Time) {
			return "alice", "payments.transfer", m.ExpiresAt
		}, mandate.ReasonExpired},
		"payee outside": {func(_ *mandate.Mandate, u *mandate.Use) (string, string, time.Time) {
			u.Payee = "p-9"
			return "alice", "payments.transfer", at
		}, mandate.ReasonPayeeNotInMandate},
		"payee never paid": {func(m *mandate.Mandate, _ *mandate.Use) (string, string, time.Time) {
			m.Payees, m.PayeesKnown = nil, true
			return "alice", "payments.transfer", at
		}, mandate.ReasonPayeeNotInMandate},
		"above per operation": {func(_ *mandate.Mandate, u *mandate.Use) (string, string, time.Time) {
			u.Amount = dec(t, "100.01")
			return "alice", "payments.transfer", at
		}, mandate.ReasonExceeded},
		"count used up": {func(m *mandate.Mandate, _ *mandate.Use) (string, string, time.Time) {
			m.UsedCount = 10
			return "alice", "payments.transfer", at
		}, mandate.ReasonExceeded},
		"total used up": {func(m *mandate.Mandate, _ *mandate.Use) (string, string, time.Time) {
			m.Used = dec(t, "400.01")
			return "alice", "payments.transfer", at
		}, mandate.ReasonExceeded},
	} {
		t.Run(name, func(t *testing.T) {
			mm, u := m, use
			subject, scope, when := tc.change(&mm, &u)
			assert.Equal(t, tc.want, mandate.Check(mm, subject, scope, u, when, false))
		})
	}
	m.Used, m.UsedCount = dec(t, "400"), 9
	assert.Empty(t, mandate.Check(m, "alice", "payments.transfer", use, at, false), "exactly up to the total and the count")
	m.Payees, m.PayeesKnown = nil, true
	assert.Empty(t, mandate.Check(m, "alice", "payments.transfer", use, at, true), "a payee already paid")
}
