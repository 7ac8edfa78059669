package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/receipt"
)

// gatewayJWKS fetches the JWK set the gateway serves.
func gatewayJWKS(t testing.TB, s *testenv.Stack) jose.JSONWebKeySet {
	t.Helper()
	set, err := client.FetchJWKS(context.Background(), httpClient, s.GatewayURL+receipt.JWKSPath)
	require.NoError(t, err)
	return set
}

// finish confirms and, when the confirm outran its budget, waits and
// confirms again: the answer carrying the outcome.
func finish(t testing.TB, s *testenv.Stack, scope, fp, opID string, params map[string]any) answer {
	t.Helper()
	c := confirm(t, s, "dev-alice", scope, fp, params)
	if c.str("status") == "in_progress" {
		waitStatus(t, s, "dev-alice", opID, "completed", "failed")
		c = confirm(t, s, "dev-alice", scope, fp, params)
	}
	require.Equal(t, http.StatusOK, c.Code, c.String())
	return c
}

// TestReceipts: a confirm's outcome, its replays (from Redis, and from the
// truth after Redis lost everything) and its status carry the same receipt,
// which verifies through the gateway's /.well-known/jwks.json, in Go and
// with the ops CLI, and states exactly the operation; a failure's too.
// Rotation: the old key's receipts verify while it is listed, and are
// refused once it is removed.
func TestReceipts(t *testing.T) {
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: noFinals})
	ctx := context.Background()
	params := map[string]any{"amount": "42.10", "currency": "USD", "payee_id": "p-receipt"}
	p := preview(t, s, "dev-alice", "payments.transfer", params)
	require.Equal(t, "preview_ready", p.str("status"), p.String())
	fp, opID := p.str("fingerprint"), p.str("operation_id")
	assert.NotContains(t, p.Body, "receipt")

	first := finish(t, s, "payments.transfer", fp, opID, params)
	jws := first.str("receipt")
	require.NotEmpty(t, jws, first.String())
	keys := gatewayJWKS(t, s)
	claims, err := client.VerifyReceipt(jws, keys)
	require.NoError(t, err)
	assert.Equal(t, receipt.Claims{
		OperationID: opID, Subject: "alice", Scope: "payments.transfer", ParamHash: paramHashOf(t, fp),
		Outcome: receipt.OutcomeCompleted, ResultRef: first.str("result_ref"), FinalizedAt: claims.FinalizedAt,
	}, claims)
	assert.WithinDuration(t, time.Now(), claims.FinalizedAt, time.Minute)
	assert.Equal(t, "test-receipt", keys.Keys[0].KeyID)

	// The same receipt from every path that answers the outcome.
	replay := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
	require.Equal(t, "already_completed", replay.str("status"), replay.String())
	assert.Equal(t, jws, replay.str("receipt"), "a replay from the fast path")
	st := status(t, s, "dev-alice", opID)
	require.Equal(t, "completed", st.str("status"), st.String())
	assert.Equal(t, jws, st.str("receipt"), "the status, from the truth")
	rdb := s.Redis.Client()
	defer rdb.Close()
	require.NoError(t, rdb.FlushAll(ctx).Err())
	fromTruth := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
	require.Equal(t, "already_completed", fromTruth.str("status"), fromTruth.String())
	assert.Equal(t, jws, fromTruth.str("receipt"), "a replay from the truth, Redis having lost it")
	refilled := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
	assert.Equal(t, jws, refilled.str("receipt"), "a replay from the refilled fast path")
	assert.Equal(t, 1, executions(t, s, opID))

	// The ops CLI verifies it against the gateway's keys and prints it.
	out, err := s.OpsCLI(t, "receipt", "verify", jws)
	require.NoError(t, err, out)
	assert.Contains(t, out, "receipt verified")
	assert.Contains(t, out, opID)
	b := []byte(jws)
	b[len(b)-10] ^= 'A' ^ 'B'
	out, err = s.OpsCLI(t, "receipt", "verify", string(b))
	require.Error(t, err, "a receipt with one byte changed is refused: %s", out)

	// A failure's receipt says how the failure is known.
	big := map[string]any{"amount": "20000", "currency": "USD", "payee_id": "p-receipt"}
	p = preview(t, s, "dev-alice", "payments.transfer", big)
	failed := finish(t, s, "payments.transfer", p.str("fingerprint"), p.str("operation_id"), big)
	require.Equal(t, "failed", failed.str("status"), failed.String())
	fc, err := client.VerifyReceipt(failed.str("receipt"), keys)
	require.NoError(t, err)
	assert.Equal(t, receipt.OutcomeFailed, fc.Outcome)
	assert.Equal(t, "downstream_refused", fc.FailureKind)
	assert.Equal(t, failed.str("receipt"), status(t, s, "dev-alice", p.str("operation_id")).str("receipt"))

	// Rotation: a new key signs, the old one stays listed: the old receipt
	// still verifies, and the outcome's receipt is now the new key's, with
	// the same claims.
	oldKeys := s.ReceiptKeys
	newKeys := strings.Replace(testenv.NewReceiptKeys(), "test-receipt:", "rotated:", 1)
	s.RestartGatewayWith(t, []string{"ONCEGATE_RECEIPT_KEYS=" + newKeys + "," + oldKeys})
	both := gatewayJWKS(t, s)
	require.Len(t, both.Keys, 2)
	assert.Equal(t, "rotated", both.Keys[0].KeyID)
	_, err = client.VerifyReceipt(jws, both)
	require.NoError(t, err, "the old key's receipt verifies while the key is listed")
	again := status(t, s, "dev-alice", opID)
	require.NotEqual(t, jws, again.str("receipt"))
	rotated, err := client.VerifyReceipt(again.str("receipt"), both)
	require.NoError(t, err)
	assert.Equal(t, claims, rotated, "the same claims under the new key")

	// The old key removed: retired, its receipts refused.
	s.RestartGatewayWith(t, []string{"ONCEGATE_RECEIPT_KEYS=" + newKeys})
	only := gatewayJWKS(t, s)
	require.Len(t, only.Keys, 1)
	_, err = client.VerifyReceipt(jws, only)
	require.ErrorIs(t, err, receipt.ErrUnknownKey)
	_, err = client.VerifyReceipt(again.str("receipt"), only)
	require.NoError(t, err)
	out, err = s.OpsCLI(t, "receipt", "verify", jws)
	require.Error(t, err, out)
	assert.Contains(t, out, "unknown or retired")
}
