package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/fingerprint"
)

func dec(t *testing.T, s string) *apd.Decimal {
	t.Helper()
	d, _, err := apd.NewFromString(s)
	require.NoError(t, err)
	return d
}

// TestNeeds is the policy's table: which operations need a person, and why.
func TestNeeds(t *testing.T) {
	t.Parallel()
	wire := Policy{Required: RequireAbove, NewPayee: true,
		Above: map[string]*apd.Decimal{"USD": dec(t, "100.00"), "EUR": dec(t, "100"), "JPY": dec(t, "10000")}}
	aboveOnly := wire
	aboveOnly.NewPayee = false
	for name, tc := range map[string]struct {
		policy Policy
		facts  Facts
		want   []Reason
	}{
		"never":                         {Policy{Required: RequireNever}, Facts{Amount: "1000000", Currency: "USD", Payee: "p"}, nil},
		"zero value":                    {Policy{}, Facts{Amount: "1", Currency: "USD"}, nil},
		"always":                        {Policy{Required: RequireAlways}, Facts{Amount: "0.01", Currency: "USD", PayeeKnown: true}, []Reason{ReasonAlways}},
		"always and a new payee":        {Policy{Required: RequireAlways, NewPayee: true}, Facts{Amount: "1", Currency: "USD"}, []Reason{ReasonAlways, ReasonNewPayee}},
		"below, known payee":            {wire, Facts{Amount: "99.99", Currency: "USD", PayeeKnown: true}, nil},
		"at the threshold, known payee": {wire, Facts{Amount: "100", Currency: "USD", PayeeKnown: true}, nil},
		"a cent above":                  {wire, Facts{Amount: "100.01", Currency: "USD", PayeeKnown: true}, []Reason{ReasonAboveThreshold}},
		"250 USD to a new payee":        {wire, Facts{Amount: "250", Currency: "USD"}, []Reason{ReasonAboveThreshold, ReasonNewPayee}},
		"2500 EUR known":                {wire, Facts{Amount: "2500", Currency: "EUR", PayeeKnown: true}, []Reason{ReasonAboveThreshold}},
		"below in JPY":                  {wire, Facts{Amount: "9999", Currency: "JPY", PayeeKnown: true}, nil},
		"a currency without threshold":  {wire, Facts{Amount: "1", Currency: "GBP", PayeeKnown: true}, []Reason{ReasonNoThreshold}},
		"below but a new payee":         {wire, Facts{Amount: "5", Currency: "USD"}, []Reason{ReasonNewPayee}},
		"new payee without the rule":    {aboveOnly, Facts{Amount: "5", Currency: "USD"}, nil},
		"new payee rule alone":          {Policy{NewPayee: true}, Facts{Amount: "5", Currency: "USD"}, []Reason{ReasonNewPayee}},
		"an amount that does not parse": {aboveOnly, Facts{Amount: "", Currency: "USD"}, []Reason{ReasonAboveThreshold}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, Needs(tc.policy, tc.facts))
		})
	}
}

func TestReasonsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, rs := range [][]Reason{nil, {ReasonNewPayee}, {ReasonAboveThreshold, ReasonNewPayee}, Reasons} {
		assert.Equal(t, rs, SplitReasons(JoinReasons(rs)))
	}
	for _, r := range Reasons {
		assert.True(t, r.Known())
	}
	assert.False(t, Reason("whatever").Known())
}

// TestStatement: the canonical statement is fixed, and every field (the
// decision too) changes the challenge.
func TestStatement(t *testing.T) {
	t.Parallel()
	p := fingerprint.Payload{Nonce: "0123456789abcdef0123456789abcdef", Exp: 1767225600, Subject: "alice",
		Scope: "payments.wire", ParamHash: "ab" + hex.EncodeToString(make([]byte, 31))}
	s := StatementOf(p, DecisionApprove)
	want := `{"decision":"approve","exp":1767225600,"operation_id":"0123456789abcdef0123456789abcdef","param_hash":"` + p.ParamHash +
		`","scope":"payments.wire","subject":"alice","v":"oncegate-approval/1"}`
	assert.Equal(t, want, string(s.Canonical()))
	sum := sha256.Sum256([]byte(want))
	assert.Equal(t, sum[:], s.Challenge())
	assert.Equal(t, time.Unix(1767225600, 0).UTC(), s.ExpiresAt())

	seen := map[string]string{string(s.Challenge()): "base"}
	for name, mutate := range map[string]func(*Statement){
		"decision":     func(s *Statement) { s.Decision = DecisionDecline },
		"operation_id": func(s *Statement) { s.OperationID = "f" + s.OperationID[1:] },
		"subject":      func(s *Statement) { s.Subject = "bob" },
		"scope":        func(s *Statement) { s.Scope = "payments.transfer" },
		"param_hash":   func(s *Statement) { s.ParamHash = "cd" + s.ParamHash[2:] },
		"exp":          func(s *Statement) { s.Exp++ },
	} {
		m := s
		mutate(&m)
		c := string(m.Challenge())
		prev, dup := seen[c]
		assert.False(t, dup, "%s gives the challenge of %s", name, prev)
		seen[c] = name
	}
	assert.True(t, DecisionApprove.Valid())
	assert.False(t, Decision("maybe").Valid())
}

// TestGate is the confirm's table over the stored approval.
func TestGate(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	want := Expect{Required: true, Subject: "alice", Scope: "payments.wire", ParamHash: "h1"}
	rec := func(state State, mutate ...func(*Record)) *Record {
		r := &Record{Subject: "alice", Scope: "payments.wire", ParamHash: "h1", State: state, ExpiresAt: now.Add(time.Minute), EvidenceSHA256: "e1"}
		for _, m := range mutate {
			m(r)
		}
		return r
	}
	for name, tc := range map[string]struct {
		want Expect
		rec  *Record
		out  GateDecision
	}{
		"not required, nothing stored":   {Expect{Subject: "alice"}, nil, GateDecision{Verdict: VerdictNotRequired}},
		"not required, a decline stored": {Expect{Subject: "alice"}, rec(StateDeclined), GateDecision{Verdict: VerdictNotRequired}},
		"none":                           {want, nil, GateDecision{Verdict: VerdictRequired, Why: WhyNone}},
		"pending":                        {want, rec(StatePending), GateDecision{Verdict: VerdictRequired, Why: WhyPending}},
		"approved":                       {want, rec(StateApproved), GateDecision{Verdict: VerdictApproved, EvidenceSHA256: "e1"}},
		"declined":                       {want, rec(StateDeclined), GateDecision{Verdict: VerdictDeclined}},
		"approved, expired":              {want, rec(StateApproved, func(r *Record) { r.ExpiresAt = now }), GateDecision{Verdict: VerdictRequired, Why: WhyExpired}},
		"approved, long expired":         {want, rec(StateApproved, func(r *Record) { r.ExpiresAt = now.Add(-time.Hour) }), GateDecision{Verdict: VerdictRequired, Why: WhyExpired}},
		"approved, other params":         {want, rec(StateApproved, func(r *Record) { r.ParamHash = "h2" }), GateDecision{Verdict: VerdictRequired, Why: WhyOtherParams}},
		"approved, other subject":        {want, rec(StateApproved, func(r *Record) { r.Subject = "bob" }), GateDecision{Verdict: VerdictRequired, Why: WhyOtherSubject}},
		"approved, other scope":          {want, rec(StateApproved, func(r *Record) { r.Scope = "payments.transfer" }), GateDecision{Verdict: VerdictRequired, Why: WhyOtherScope}},
		"declined, other subject":        {want, rec(StateDeclined, func(r *Record) { r.Subject = "bob" }), GateDecision{Verdict: VerdictRequired, Why: WhyOtherSubject}},
		"unknown state":                  {want, rec(State("MAYBE")), GateDecision{Verdict: VerdictRequired, Why: WhyPending}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.out, Gate(tc.want, tc.rec, now))
		})
	}
}

// TestSignCountAdvances is the counter's table: it must grow, but an
// authenticator that counts nothing stays at 0.
func TestSignCountAdvances(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stored, presented uint32
		want              bool
	}{
		{0, 0, true},
		{0, 1, true},
		{5, 6, true},
		{5, 5, false},
		{5, 4, false},
		{5, 0, false},
		{1 << 31, 1<<31 + 1, true},
	} {
		assert.Equal(t, tc.want, SignCountAdvances(tc.stored, tc.presented), "stored %d, presented %d", tc.stored, tc.presented)
	}
}
