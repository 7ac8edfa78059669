package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/harness/testenv"
)

// TestSecurityEventsReachTheWebhook: a param_mismatch, a subject_mismatch and
// a forged signature at confirm are refused, nothing executes, and each is
// delivered to the configured alert webhook with subject, scope and operation.
func TestSecurityEventsReachTheWebhook(t *testing.T) {
	events := make(chan gateway.SecurityEvent, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev gateway.SecurityEvent
		if err := json.NewDecoder(r.Body).Decode(&ev); err == nil {
			events <- ev
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: []string{"ONCEGATE_ALERT_WEBHOOK=" + hook.URL}})

	params := transferParams("700.00")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
	next := func() gateway.SecurityEvent {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no security event reached the webhook")
			return gateway.SecurityEvent{}
		}
	}

	tampered := transferParams("700.00")
	tampered["amount"] = "7000.00"
	a := confirm(t, s, "dev-alice", "payments.transfer", fp, tampered)
	assert.Equal(t, http.StatusUnprocessableEntity, a.Code, a.String())
	assert.Equal(t, "param_mismatch", a.str("status"))
	ev := next()
	assert.Equal(t, gateway.EventParamMismatch, ev.Kind)
	assert.Equal(t, "alice", ev.Subject)
	assert.Equal(t, "payments.transfer", ev.Scope)
	assert.Equal(t, id, ev.OperationID)

	b := confirm(t, s, "dev-bob", "payments.transfer", fp, params)
	assert.Equal(t, http.StatusForbidden, b.Code, b.String())
	assert.Equal(t, "subject_mismatch", b.str("status"))
	ev = next()
	assert.Equal(t, gateway.EventSubjectMismatch, ev.Kind)
	assert.Equal(t, "bob", ev.Subject)
	assert.Equal(t, id, ev.OperationID)

	// The transfer's fingerprint at the legacy action's confirm.
	sm := confirm(t, s, "dev-alice", "payments.legacy_transfer", fp, params)
	assert.Equal(t, http.StatusForbidden, sm.Code, sm.String())
	assert.Equal(t, "scope_mismatch", sm.str("status"))
	ev = next()
	assert.Equal(t, gateway.EventScopeMismatch, ev.Kind)
	assert.Equal(t, "alice", ev.Subject)
	assert.Equal(t, "payments.legacy_transfer", ev.Scope)
	assert.Equal(t, id, ev.OperationID)
	assert.Contains(t, ev.Detail, "payments.transfer")

	// Re-signed with a key the gateway does not know: a forgery.
	seg, _, _ := strings.Cut(fp, ".")
	forged := seg + ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	c := confirm(t, s, "dev-alice", "payments.transfer", forged, params)
	assert.Equal(t, http.StatusBadRequest, c.Code, c.String())
	assert.Equal(t, "fingerprint_invalid", c.str("status"))
	ev = next()
	assert.Equal(t, gateway.EventInvalidFingerprint, ev.Kind)

	// Nothing ran, and the genuine confirm still works afterwards.
	assert.Equal(t, 0, executions(t, s, id))
	done := confirmUntilTerminal(t, s, "dev-alice", "payments.transfer", fp, id, params)
	assert.Equal(t, "completed", done.str("status"), done.String())
	assert.Equal(t, 1, executions(t, s, id))
}
