package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPasskeyInvite(t *testing.T) {
	env, reqs := gateway(t, http.StatusOK, `{"status":"passkey_invited","url":"http://localhost:8080/enrol/tok","subject":"alice","expires_at":"2030-01-01T00:00:00Z"}`)
	code, out, errOut := runCLI(env, "passkey", "invite", "--subject", "alice")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "http://localhost:8080/enrol/tok\n", out, "the link alone on stdout")
	assert.Contains(t, errOut, "one-time enrolment link for alice")
	require.Len(t, *reqs, 1)
	assert.Equal(t, "/v1/ops/passkeys/invites", (*reqs)[0].path)
	assert.JSONEq(t, `{"subject":"alice"}`, string((*reqs)[0].body))

	code, _, _ = runCLI(env, "passkey", "invite")
	assert.Equal(t, exitUsage, code, "--subject is required")
	code, _, _ = runCLI(env, "passkey", "invite", "--subject", "alice", "--person", "carol")
	assert.Equal(t, exitUsage, code, "two names")
	require.Len(t, *reqs, 1, "a usage error sends nothing")
	code, _, _ = runCLI(env, "passkey")
	assert.Equal(t, exitUsage, code)
	code, _, _ = runCLI(env, "passkey", "enrol")
	assert.Equal(t, exitUsage, code)
}

// TestPasskeyInviteWithRoles: --person names the person, each --role is
// sent, and the roles the gateway answers are said.
func TestPasskeyInviteWithRoles(t *testing.T) {
	env, reqs := gateway(t, http.StatusOK, `{"status":"passkey_invited","url":"http://localhost:8080/enrol/tok","subject":"carol","roles":["finance","treasury"],"expires_at":"2030-01-01T00:00:00Z"}`)
	code, out, errOut := runCLI(env, "passkey", "invite", "--person", "carol", "--role", "finance", "--role", "treasury")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "http://localhost:8080/enrol/tok\n", out)
	assert.Contains(t, errOut, "for carol (roles: finance, treasury)")
	require.Len(t, *reqs, 1)
	assert.JSONEq(t, `{"subject":"carol","roles":["finance","treasury"]}`, string((*reqs)[0].body))
}

func TestPasskeyListAndRevoke(t *testing.T) {
	env, reqs := gateway(t, http.StatusOK, `{"status":"passkeys_listed","count":1,"passkeys":[{"id":"cred-1","subject":"alice","created_at":"2030-01-01T00:00:00Z","enrol_trace_id":"t1"}]}`)
	code, out, errOut := runCLI(env, "passkey", "list", "--subject", "alice", "--revoked")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "cred-1")
	assert.Contains(t, out, "t1")
	assert.Equal(t, "revoked=true&subject=alice", (*reqs)[0].query)

	code, _, errOut = runCLI(env, "passkey", "revoke", "cred-1")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "/v1/ops/passkeys/cred-1/revoke", (*reqs)[1].path)
	assert.Equal(t, http.MethodPost, (*reqs)[1].method)

	refused, _ := gateway(t, http.StatusNotFound, `{"status":"unknown_passkey","meaning":"There is no passkey with this id."}`)
	code, _, errOut = runCLI(refused, "passkey", "revoke", "nope")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "unknown_passkey")
}

func TestApprovalsList(t *testing.T) {
	env, reqs := gateway(t, http.StatusOK, `{"status":"approvals_listed","count":1,"approvals":[{"operation_id":"op1","state":"PENDING","scope":"payments.wire","subject":"alice","reasons":["amount_above_threshold","new_payee"]}]}`)
	code, out, errOut := runCLI(env, "approvals", "--state", "pending")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "op1")
	assert.Contains(t, out, "amount_above_threshold,new_payee")
	assert.Equal(t, "state=pending", (*reqs)[0].query)
}

func TestShowPrintsTheApproval(t *testing.T) {
	env, _ := gateway(t, http.StatusOK, `{"status":"operation_found","operation":{"operation_id":"op1","state":"DONE","scope":"payments.wire"},
		"approval_record":{"state":"APPROVED","reasons":["new_payee"],"subject":"alice","credential_id":"cred-1","decided_at":"2030-01-01T00:00:00Z","evidence_sha256":"abc","trace_id":"t9"},
		"timeline":[]}`)
	code, out, errOut := runCLI(env, "show", "op1")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "APPROVED (new_payee)")
	assert.Contains(t, out, "alice's passkey cred-1")
	assert.Contains(t, out, "abc")
	assert.Contains(t, out, "t9")
}
