package approval

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMayDecide(t *testing.T) {
	t.Parallel()
	finance := &Approvers{Role: "finance", Count: 2}
	withSubject := &Approvers{Role: "finance", Count: 2, SubjectMayApprove: true}
	alice := Passkey{Subject: "alice"}
	aliceFinance := Passkey{Subject: "alice", Roles: []string{"finance"}}
	carol := Passkey{Subject: "carol", Roles: []string{"ops", "finance"}}
	bob := Passkey{Subject: "bob", Roles: []string{"ops"}}
	tests := []struct {
		name string
		a    *Approvers
		pk   Passkey
		want bool
	}{
		{"no approvers: the subject's own passkey", nil, alice, true},
		{"no approvers: another person's, even with a role", nil, carol, false},
		{"a person with the role", finance, carol, true},
		{"a person without it", finance, bob, false},
		{"the subject, not allowed", finance, alice, false},
		{"the subject holding the role, not allowed", finance, aliceFinance, false},
		{"the subject, allowed without the role", withSubject, alice, true},
		{"with the subject allowed, others still need the role", withSubject, bob, false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, MayDecide(tc.a, "alice", tc.pk), tc.name)
	}
	assert.Equal(t, 1, (*Approvers)(nil).Needed())
	assert.Equal(t, 2, finance.Needed())
	assert.Equal(t, 1, (&Approvers{Role: "x"}).Needed(), "a count below 1 asks one")
}

func TestTally(t *testing.T) {
	t.Parallel()
	yes := func(who string) ApproverDecision { return ApproverDecision{Approver: who, State: StateApproved} }
	no := func(who string) ApproverDecision { return ApproverDecision{Approver: who, State: StateDeclined} }
	tests := []struct {
		name      string
		needed    int
		decisions []ApproverDecision
		state     State
		given     int
	}{
		{"nothing yet", 2, nil, StatePending, 0},
		{"one of two", 2, []ApproverDecision{yes("carol")}, StatePending, 1},
		{"two of two", 2, []ApproverDecision{yes("carol"), yes("dave")}, StateApproved, 2},
		{"a decline ends it", 2, []ApproverDecision{yes("carol"), no("dave")}, StateDeclined, 1},
		{"a decline first", 2, []ApproverDecision{no("dave"), yes("carol")}, StateDeclined, 1},
		{"one of one", 1, []ApproverDecision{yes("alice")}, StateApproved, 1},
		{"needed 0 asks one", 0, nil, StatePending, 0},
	}
	for _, tc := range tests {
		state, given := Tally(tc.needed, tc.decisions)
		assert.Equal(t, tc.state, state, tc.name)
		assert.Equal(t, tc.given, given, tc.name)
	}
}

func TestApply(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 5, 13, 0, 0, 0, time.UTC)
	req := Request{OperationID: "op", Subject: "alice", Approvers: &Approvers{Role: "finance", Count: 2}, At: at, TraceID: "t0"}
	by := func(who string, state State, cred string, later time.Duration) Decided {
		r := req
		r.At, r.TraceID = at.Add(later), "t-"+who
		return Decided{Request: r, Approver: who, State: state, CredentialID: cred, EvidenceSHA256: "e-" + who,
			Evidence: []byte(`{"who":"` + who + `"}`), Statement: []byte(`{"s":1}`)}
	}
	rec := req.Pending()
	assert.Equal(t, 2, rec.Needed)

	rec, err := Apply(rec, by("carol", StateApproved, "c1", time.Minute))
	require.NoError(t, err)
	assert.Equal(t, StatePending, rec.State)
	assert.Equal(t, 1, rec.Given)
	assert.Empty(t, rec.EvidenceSHA256, "nothing decided yet")

	_, err = Apply(rec, by("carol", StateApproved, "c2", 2*time.Minute))
	require.ErrorIs(t, err, ErrAlreadyDecided, "carol's second passkey counts once")

	done, err := Apply(rec, by("dave", StateApproved, "d1", 3*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, StateApproved, done.State)
	assert.Equal(t, at.Add(3*time.Minute), done.DecidedAt)
	raw, sum := JointEvidence("op", done.Decisions)
	assert.Equal(t, sum, done.EvidenceSHA256)
	assert.JSONEq(t, string(raw), string(done.Evidence))
	assert.JSONEq(t, `{"v":"oncegate-approvers/1","operation_id":"op","approvals":[
		{"approver":"carol","credential_id":"c1","evidence_sha256":"e-carol"},
		{"approver":"dave","credential_id":"d1","evidence_sha256":"e-dave"}]}`, string(raw))
	_, err = Apply(done, by("erin", StateDeclined, "e1", 4*time.Minute))
	require.ErrorIs(t, err, ErrAlreadyDecided, "decided: the first decisions stand")

	// The same approvals in another order hash alike.
	_, again := JointEvidence("op", []ApproverDecision{done.Decisions[1], done.Decisions[0]})
	assert.Equal(t, sum, again)

	// The subject alone: the one decision's own evidence, as before approvers.
	single := Request{OperationID: "op2", Subject: "alice", At: at}.Pending()
	one, err := Apply(single, Decided{Request: Request{OperationID: "op2", Subject: "alice", At: at}, State: StateApproved,
		CredentialID: "a1", EvidenceSHA256: "e-alice", Evidence: []byte(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, StateApproved, one.State)
	assert.Equal(t, "e-alice", one.EvidenceSHA256)
	assert.Equal(t, "a1", one.CredentialID)
	assert.Equal(t, "alice", one.Decisions[0].Approver, "the approver is the request's subject when unnamed")
}
