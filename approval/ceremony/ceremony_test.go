package ceremony_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/approval/ceremony"
	"github.com/oncegate/oncegate/harness/softauthn"
)

const origin = "http://localhost:8080"

func newCeremony(t *testing.T) *ceremony.Ceremony {
	t.Helper()
	c, err := ceremony.New(ceremony.Config{RPID: "localhost", Origins: []string{origin}})
	require.NoError(t, err)
	return c
}

// enrol registers a passkey of subject on auth and returns it as stored.
func enrol(t *testing.T, c *ceremony.Ceremony, auth *softauthn.Authenticator, subject string) (approval.Passkey, *softauthn.Credential) {
	t.Helper()
	opts, session, err := c.BeginEnrolment(subject, nil)
	require.NoError(t, err)
	cred, resp, err := auth.Register(opts)
	require.NoError(t, err)
	pk, err := c.FinishEnrolment(subject, session, resp)
	require.NoError(t, err)
	assert.Equal(t, cred.IDString(), pk.ID)
	assert.Equal(t, subject, pk.Subject)
	assert.Equal(t, ceremony.UserHandle(subject), cred.UserHandle)
	return pk, cred
}

func statement(subject string) approval.Statement {
	return approval.Statement{Decision: approval.DecisionApprove, OperationID: "0123456789abcdef0123456789abcdef",
		Subject: subject, Scope: "payments.wire", ParamHash: "aa", Exp: 1893456000}
}

// TestApproveAndRefuse: an assertion over the statement by the subject's
// passkey verifies once; another statement (operation, decision), another
// subject's passkey, a replayed counter, another origin are refused.
func TestApproveAndRefuse(t *testing.T) {
	t.Parallel()
	c := newCeremony(t)
	auth := softauthn.New(origin)
	alice, aliceCred := enrol(t, c, auth, "alice")
	bob, bobCred := enrol(t, c, auth, "bob")
	st := statement("alice")

	opts, err := c.AssertionOptions(st, []approval.Passkey{alice})
	require.NoError(t, err)
	var o struct {
		PublicKey struct {
			Challenge        string `json:"challenge"`
			UserVerification string `json:"userVerification"`
		} `json:"publicKey"`
	}
	require.NoError(t, json.Unmarshal(opts, &o))
	assert.Equal(t, base64.RawURLEncoding.EncodeToString(st.Challenge()), o.PublicKey.Challenge, "the challenge is the statement's hash")
	assert.Equal(t, "required", o.PublicKey.UserVerification)

	resp, err := auth.Assert(opts)
	require.NoError(t, err)
	v, err := c.Verify(st, []approval.Passkey{alice}, resp)
	require.NoError(t, err)
	assert.Equal(t, alice.ID, v.CredentialID)
	assert.Equal(t, "alice", v.Person)
	assert.Equal(t, uint32(1), v.SignCount)
	assert.Len(t, v.EvidenceSHA256, 64)
	var ev ceremony.Evidence
	require.NoError(t, json.Unmarshal(v.Evidence, &ev))
	assert.JSONEq(t, string(st.Canonical()), string(ev.Statement))

	// The same response for another statement: the challenge differs.
	other := st
	other.OperationID = "ffffffffffffffffffffffffffffffff"
	_, err = c.Verify(other, []approval.Passkey{alice}, resp)
	assert.ErrorIs(t, err, ceremony.ErrRefused, "an assertion replayed for another operation")
	decline := st
	decline.Decision = approval.DecisionDecline
	_, err = c.Verify(decline, []approval.Passkey{alice}, resp)
	assert.ErrorIs(t, err, ceremony.ErrRefused, "an approval is not a decline")

	// Bob's passkey over alice's statement: not one of the keys that may
	// decide (alice's).
	forged, err := auth.Sign(bobCred, base64.RawURLEncoding.EncodeToString(st.Challenge()))
	require.NoError(t, err)
	_, err = c.Verify(st, []approval.Passkey{alice}, forged)
	assert.ErrorIs(t, err, ceremony.ErrRefused, "bob's passkey approves nothing of alice's")
	// A stored row that names bob's credential as alice's: the user handle
	// the authenticator returns is bob's account, not alice's.
	bobAsAlice := bob
	bobAsAlice.Subject = "alice"
	_, err = c.Verify(st, []approval.Passkey{alice, bobAsAlice}, forged)
	assert.ErrorIs(t, err, ceremony.ErrRefused, "bob's passkey is not on alice's account (user handle)")
	// Bob named an approver (his key among those that may decide): his
	// assertion verifies on his own account, and says it was his.
	byBob, err := c.Verify(st, []approval.Passkey{alice, bob}, forged)
	require.NoError(t, err)
	assert.Equal(t, "bob", byBob.Person)
	assert.Equal(t, bob.ID, byBob.CredentialID)

	// The counter must advance: the stored counter is the one just seen.
	alice.SignCount = v.SignCount
	_, err = c.Verify(st, []approval.Passkey{alice}, resp)
	assert.ErrorIs(t, err, approval.ErrSignCount, "the same assertion again")

	// Another origin.
	evil := softauthn.New("http://evil.localhost:8080")
	evilResp, err := evil.Sign(aliceCred, base64.RawURLEncoding.EncodeToString(st.Challenge()))
	require.NoError(t, err)
	_, err = c.Verify(st, []approval.Passkey{alice}, evilResp)
	assert.ErrorIs(t, err, ceremony.ErrRefused, "an origin that is not the gateway's")

	// Garbage.
	_, err = c.Verify(st, []approval.Passkey{alice}, []byte(`{"id":"x"}`))
	assert.ErrorIs(t, err, ceremony.ErrRefused)
	_, err = c.AssertionOptions(st, nil)
	assert.ErrorIs(t, err, ceremony.ErrRefused, "a subject without passkeys")
}

func TestEnrolmentRefused(t *testing.T) {
	t.Parallel()
	c := newCeremony(t)
	auth := softauthn.New(origin)
	opts, session, err := c.BeginEnrolment("alice", nil)
	require.NoError(t, err)
	_, resp, err := auth.Register(opts)
	require.NoError(t, err)
	// Another session's challenge.
	_, session2, err := c.BeginEnrolment("alice", nil)
	require.NoError(t, err)
	_, err = c.FinishEnrolment("alice", session2, resp)
	assert.ErrorIs(t, err, ceremony.ErrRefused)
	_, err = c.FinishEnrolment("alice", nil, resp)
	assert.ErrorIs(t, err, ceremony.ErrRefused)
	_, err = c.FinishEnrolment("alice", session, []byte(`{}`))
	assert.ErrorIs(t, err, ceremony.ErrRefused)
	_, err = c.FinishEnrolment("alice", session, resp)
	assert.NoError(t, err)
}

func TestCheckConfig(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		rpID    string
		origins []string
		ok      bool
	}{
		"dev":             {"localhost", []string{"http://localhost:8080"}, true},
		"subdomain":       {"example.com", []string{"https://pay.example.com"}, true},
		"ip":              {"127.0.0.1", []string{"http://127.0.0.1:8080"}, false},
		"ipv6":            {"::1", []string{"http://[::1]:8080"}, false},
		"empty":           {"", []string{"http://localhost"}, false},
		"no origins":      {"localhost", nil, false},
		"foreign origin":  {"example.com", []string{"https://example.org"}, false},
		"suffix trick":    {"example.com", []string{"https://evilexample.com"}, false},
		"origin has path": {"localhost", []string{"http://localhost:8080/approve"}, false},
	} {
		err := ceremony.CheckConfig(tc.rpID, tc.origins)
		if tc.ok {
			assert.NoError(t, err, name)
		} else {
			assert.ErrorIs(t, err, ceremony.ErrConfig, name)
		}
	}
}
