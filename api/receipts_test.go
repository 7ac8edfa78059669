package api

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/openapi"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/receipt"
	"github.com/oncegate/oncegate/status"
)

// jwks fetches the gateway's JWK set, as a verifier does.
func (b *bundle) jwks(t *testing.T) jose.JSONWebKeySet {
	t.Helper()
	rec := httptest.NewRecorder()
	b.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", receipt.JWKSPath, nil))
	require.Equal(t, 200, rec.Code, rec.Body.String())
	v, err := openapi.NewValidator()
	require.NoError(t, err)
	require.NoError(t, v.ValidateResponse("GET", receipt.JWKSPath, rec.Code, rec.Header(), rec.Body.Bytes()))
	var set jose.JSONWebKeySet
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &set))
	return set
}

// verified verifies the receipt of r through the served JWK set.
func (b *bundle) verified(t *testing.T, r resp) receipt.Claims {
	t.Helper()
	tok := r.str(fieldReceipt)
	require.NotEmpty(t, tok, "a %s answer carries a receipt: %s", r.status(), r.raw)
	c, err := receipt.Verify(tok, b.jwks(t))
	require.NoError(t, err)
	return c
}

// Every terminal answer carries the receipt of its record: the first
// confirm, its replay and its status carry the very same bytes; answers of
// an operation still moving carry none.
func TestReceiptsOfTerminalAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pv := b.preview(t, "dev-alice", "payments.transfer", transferParams)
	assert.NotContains(t, pv.body, fieldReceipt)
	fp, opID := pv.str("fingerprint"), pv.str("operation_id")
	p, err := b.keys.Parse(fp)
	require.NoError(t, err)

	first := b.confirm(t, "dev-alice", "payments.transfer", fp, transferParams)
	require.Equal(t, status.Completed, first.status(), first.raw)
	c := b.verified(t, first)
	assert.Equal(t, receipt.Claims{
		OperationID: opID, Subject: "alice", Scope: "payments.transfer", ParamHash: p.ParamHash,
		Outcome: receipt.OutcomeCompleted, ResultRef: first.str("result_ref"), FinalizedAt: b.clock.Now().UTC(),
	}, c)

	b.clock.Add(time.Minute) // later answers name the time the outcome was decided
	replay := b.confirm(t, "dev-alice", "payments.transfer", fp, `{"amount":"12.5","currency":"USD","payee_id":"p-1","memo":"other"}`)
	require.Equal(t, status.AlreadyCompleted, replay.status(), replay.raw)
	st := b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "")
	require.Equal(t, status.Completed, st.status(), st.raw)
	assert.Equal(t, first.str(fieldReceipt), replay.str(fieldReceipt), "the replay's receipt is the first one")
	assert.Equal(t, first.str(fieldReceipt), st.str(fieldReceipt), "the status's receipt is the first one")

	// A failure's receipt states it, and how it is known.
	big := `{"amount":"20000","currency":"USD","payee_id":"p-1"}`
	pv = b.preview(t, "dev-alice", "payments.legacy_transfer", big)
	failed := b.confirm(t, "dev-alice", "payments.legacy_transfer", pv.str("fingerprint"), big)
	require.Equal(t, status.Failed, failed.status(), failed.raw)
	c = b.verified(t, failed)
	assert.Equal(t, receipt.OutcomeFailed, c.Outcome)
	assert.Equal(t, "payments.legacy_transfer", c.Scope)
	again := b.confirm(t, "dev-alice", "payments.legacy_transfer", pv.str("fingerprint"), big)
	require.Equal(t, status.AlreadyFailed, again.status(), again.raw)
	assert.Equal(t, failed.str(fieldReceipt), again.str(fieldReceipt))

	// Still moving: no receipt.
	slow := `{"amount":"1","currency":"USD","payee_id":"slow"}`
	pv = b.preview(t, "dev-alice", "payments.transfer", slow)
	r := b.confirm(t, "dev-alice", "payments.transfer", pv.str("fingerprint"), slow)
	require.Equal(t, status.InProgress, r.status(), r.raw)
	assert.NotContains(t, r.body, fieldReceipt)
	r = b.do(t, "GET", "/v1/operations/"+pv.str("operation_id"), "dev-alice", "")
	assert.NotContains(t, r.body, fieldReceipt)
}

// The approval an operation was claimed under is named by its receipt.
func TestReceiptNamesTheApproval(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, pv := b.transferred(t, "dev-alice", transferParams)
	opID := pv.str("operation_id")
	approval := strings.Repeat("5e", 32)
	rec, err := b.store.Get(context.Background(), opID)
	require.NoError(t, err)
	rec.ApprovalSHA256 = approval
	b.store.Put(rec)
	r := b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "")
	assert.Equal(t, approval, b.verified(t, r).ApprovalSHA256)
}

// transferred previews and confirms a payments.transfer of params with
// token, which completes; it returns the confirm's answer and the
// preview's (its fingerprint and operation_id).
func (b *bundle) transferred(t *testing.T, token, params string) (confirmed, previewed resp) {
	t.Helper()
	pv := b.preview(t, token, "payments.transfer", params)
	r := b.confirm(t, token, "payments.transfer", pv.str("fingerprint"), params)
	require.Equal(t, status.Completed, r.status(), r.raw)
	return r, pv
}

// The client that acted for the subject is kept with the claim and named
// by the receipt; a retry by another client of the same subject replays
// the first outcome, and the first confirm's client stays the one that
// acted.
func TestReceiptNamesTheActingClient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, pv := b.transferred(t, "dev-alice-app", transferParams)
	opID := pv.str("operation_id")
	assert.Equal(t, "alice-app", b.verified(t, first).ActingClient)
	rec, err := b.store.Get(context.Background(), opID)
	require.NoError(t, err)
	assert.Equal(t, "alice-app", rec.ActingClient, "the store keeps the acting client")

	replay := b.confirm(t, "dev-alice", "payments.transfer", pv.str("fingerprint"), transferParams)
	require.Equal(t, status.AlreadyCompleted, replay.status(), replay.raw)
	assert.Equal(t, first.str(fieldReceipt), replay.str(fieldReceipt), "another client's retry replays the first receipt")
	st := b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "")
	assert.Equal(t, first.str(fieldReceipt), st.str(fieldReceipt))

	// A token that names no client records none.
	r, _ := b.transferred(t, "dev-alice", `{"amount":"3","currency":"USD","payee_id":"p-2"}`)
	assert.Empty(t, b.verified(t, r).ActingClient)
}

// A confirm of another client that attaches to an operation in flight
// (the same subject's fingerprint, sent again by another app) is answered
// the outcome of the claim it found: its answer and its receipt name the
// client that claimed the operation, never the attaching caller's. The
// answers while it runs name that client too.
func TestAnAttachedConfirmNamesTheClientThatClaimed(t *testing.T) {
	t.Parallel()
	b := setup(t, func(d *gateway.Deps) { d.Config.ConfirmWait = 20 * time.Second })
	params := `{"amount":"4","currency":"USD","payee_id":"slow"}`
	pv := b.preview(t, "dev-alice-app", "payments.transfer", params)
	fp, opID := pv.str("fingerprint"), pv.str("operation_id")

	answers := make(chan resp, 2)
	go func() { answers <- b.confirm(t, "dev-alice-app", "payments.transfer", fp, params) }()
	require.Eventually(t, func() bool { return b.started() == 1 }, 10*time.Second, 5*time.Millisecond, "alice-app's confirm claimed and started it")
	st := b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "")
	require.Equal(t, status.InProgress, st.status(), st.raw)
	assert.Equal(t, "alice-app", st.str("acting_client"), "the status names the client that claimed it")

	go func() { answers <- b.confirm(t, "dev-alice", "payments.transfer", fp, params) }()
	require.Eventually(t, func() bool { return b.metric(t, "oncegate_claims_total", "IN_FLIGHT") == 1 }, 10*time.Second, 5*time.Millisecond,
		"the second confirm found alice-app's claim in flight and waits on it")
	close(b.release)
	got := map[status.Status]resp{}
	for range 2 {
		a := <-answers
		got[a.status()] = a
	}
	first, attached := got[status.Completed], got[status.AlreadyCompleted]
	require.NotNil(t, first.body, "the claiming confirm completes: %v", got)
	require.NotNil(t, attached.body, "the attached confirm replays: %v", got)
	assert.Equal(t, "alice-app", b.verified(t, attached).ActingClient, "the attached confirm's receipt names the client that claimed")
	assert.Equal(t, "alice-app", attached.str("acting_client"))
	assert.Equal(t, first.str(fieldReceipt), attached.str(fieldReceipt), "both answers carry the operation's one receipt")
	assert.Equal(t, 1, b.started(), "one workflow")
	st = b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "")
	assert.Equal(t, "alice-app", st.str("acting_client"))
	assert.Equal(t, first.str(fieldReceipt), st.str(fieldReceipt))
}

// A confirm that takes over an orphaned claim (its owner died before the
// start: no workflow exists) starts the workflow under the orphan's
// client, the claim that acted, and its receipt names that client, not
// the caller's.
func TestATakeoverKeepsTheOrphansClient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pv := b.preview(t, "dev-alice-app", "payments.transfer", transferParams)
	fp := pv.str("fingerprint")
	p, err := b.keys.Parse(fp)
	require.NoError(t, err)
	d, err := b.store.Acquire(context.Background(), idemstore.Claim{OperationID: p.Nonce, ParamHash: p.ParamHash, Owner: "gw-dead:1",
		Subject: "alice", ActingClient: "alice-app", Scope: "payments.transfer", InFlightTTL: 10 * time.Minute,
		TerminalTTL: time.Hour, FingerprintExp: p.ExpiresAt()})
	require.NoError(t, err)
	require.Equal(t, idemstore.OutcomeAcquired, d.Outcome, "alice-app's claim, whose gateway died before the start")
	b.clock.Add(time.Minute) // past the claim grace period (30s)

	r := b.confirm(t, "dev-alice", "payments.transfer", fp, transferParams)
	require.Equal(t, status.Completed, r.status(), r.raw)
	require.Equal(t, 1, b.started(), "the orphan was taken over and started")
	assert.Equal(t, "alice-app", b.engine.Starts()[0].Input.ActingClient, "the workflow's input names the orphan's client")
	assert.Equal(t, "alice-app", b.verified(t, r).ActingClient)
	assert.Equal(t, "alice-app", r.str("acting_client"))
}

// The JWK set is public (no token), names every listed key, and is what
// verifies a receipt.
func TestJWKSEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	set := b.jwks(t)
	require.Len(t, set.Keys, 1)
	assert.Equal(t, "r1", set.Keys[0].KeyID)
	assert.Equal(t, b.receipts.JWKS().Keys[0].Key, set.Keys[0].Key)
	assert.True(t, set.Keys[0].IsPublic())
}

// fieldReceipt is the body field of a terminal answer that holds its receipt.
const fieldReceipt = "receipt"
