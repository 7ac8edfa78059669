package gateway

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/approval"
)

// enrolledPasskeys answers the passkey listings of approval.Store from a
// fixed list (the only calls decidingKeys makes).
type enrolledPasskeys struct {
	approval.Store
	keys []approval.Passkey
}

func (e enrolledPasskeys) Passkeys(_ context.Context, subject string, _ bool) ([]approval.Passkey, error) {
	var out []approval.Passkey
	for _, k := range e.keys {
		if k.Subject == subject {
			out = append(out, k)
		}
	}
	return out, nil
}

func (e enrolledPasskeys) PasskeysWithRole(_ context.Context, role string) ([]approval.Passkey, error) {
	var out []approval.Passkey
	for _, k := range e.keys {
		if slices.Contains(k.Roles, role) {
			out = append(out, k)
		}
	}
	return out, nil
}

// TestDecidingKeys: the passkeys a ceremony offers are exactly those whose
// person may decide (approval.MayDecide): the subject's own without named
// approvers; with them, the role's holders, and the subject only when the
// policy lets the subject approve, each passkey once. Nobody left is the
// refusal that names the missing role.
func TestDecidingKeys(t *testing.T) {
	t.Parallel()
	s := &Service{approvals: enrolledPasskeys{keys: []approval.Passkey{
		{ID: "alice-1", Subject: "alice", Roles: []string{"treasury"}},
		{ID: "alice-2", Subject: "alice"},
		{ID: "bob-1", Subject: "bob", Roles: []string{"treasury"}},
		{ID: "carol-1", Subject: "carol", Roles: []string{"support"}},
	}}}
	ids := func(subject string, a *approval.Approvers) []string {
		keys, err := s.decidingKeys(context.Background(), subject, a)
		require.NoError(t, err)
		var out []string
		for _, k := range keys {
			out = append(out, k.ID)
		}
		slices.Sort(out)
		return out
	}
	require.Equal(t, []string{"alice-1", "alice-2"}, ids("alice", nil), "without approvers, the subject's own")
	require.Equal(t, []string{"bob-1"}, ids("alice", &approval.Approvers{Role: "treasury", Count: 1}),
		"the subject may not approve: not even a passkey of the subject's that holds the role")
	require.Equal(t, []string{"alice-1", "alice-2", "bob-1"}, ids("alice", &approval.Approvers{Role: "treasury", Count: 2, SubjectMayApprove: true}),
		"the subject may approve: each passkey once")
	require.Empty(t, ids("alice", &approval.Approvers{Role: "audit", Count: 1}), "nobody holds the role")
	require.Empty(t, ids("dave", nil), "a subject without a passkey")
	require.Contains(t, noDecidingKeys("alice", &approval.Approvers{Role: "audit", Count: 1}), "--role audit")
}
