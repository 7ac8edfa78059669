package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/operation"

	"github.com/oncegate/oncegate/status"
)

// sign is the signature header of body at t: t=<unix>,v1=HMAC-SHA256(secret, "<t>.<body>").
func sign(secret string, t time.Time, body string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + body))
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// TestWebhookReplayIsRefused: a verified event is delivered to the
// operation's workflow once; the same event sent again is refused and not
// delivered again.
func TestWebhookReplayIsRefused(t *testing.T) {
	t.Setenv("ONCEGATE_TEST_WEBHOOK_SECRET", "whsec")
	b := setup(t)
	const scope, opID = "payments.payout", "0123456789abcdef0123456789abcdef"
	b.cat.Actions[scope] = &catalog.Action{Scope: scope, Downstream: catalog.Downstream{
		Webhook: &catalog.Webhook{SecretEnv: "ONCEGATE_TEST_WEBHOOK_SECRET", SignatureHeader: "X-Signature",
			Tolerance: 5 * time.Minute, ReferenceField: "data.client_reference", ObjectField: "data"},
	}}
	b.store.Put(idemstore.Record{OperationID: opID, Scope: scope, State: operation.StateInFlight})
	// Its workflow runs (payee "slow" waits for the test's end).
	_, err := b.engine.Start(context.Background(), operation.Input{OperationID: opID, Params: json.RawMessage(`{"payee_id":"slow"}`)},
		gateway.StartOptions{})
	require.NoError(t, err)
	body := fmt.Sprintf(`{"type":"payout.paid","data":{"client_reference":%q,"status":"paid"}}`, opID)
	header := sign("whsec", b.clock.Now(), body)

	r := b.do(t, "POST", "/v1/webhooks/"+scope, "", body, "X-Signature", header)
	require.Equal(t, status.WebhookAccepted, r.status(), r.raw)
	require.Len(t, b.engine.Events(), 1)
	assert.JSONEq(t, fmt.Sprintf(`{"client_reference":%q,"status":"paid"}`, opID), string(b.engine.Events()[0].Record))
	assert.Equal(t, "payout.paid", b.engine.Events()[0].EventType)

	r = b.do(t, "POST", "/v1/webhooks/"+scope, "", body, "X-Signature", header)
	assert.Equal(t, status.WebhookRefused, r.status(), r.raw)
	assert.Contains(t, r.str("reason"), "replayed")
	assert.Len(t, b.engine.Events(), 1, "a replayed event is not delivered again")

	// A forged event changes nothing either.
	r = b.do(t, "POST", "/v1/webhooks/"+scope, "", body, "X-Signature", sign("guess", b.clock.Now(), body))
	assert.Equal(t, status.WebhookRefused, r.status(), r.raw)
	assert.Len(t, b.engine.Events(), 1)
}
