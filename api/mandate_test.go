package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/idemstore/memstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
	"github.com/oncegate/oncegate/mandate"
	"github.com/oncegate/oncegate/status"
)

// mandateBundle is a gateway whose payments.transfer asks alice's approval
// of every operation and allows standing mandates, on memstore's truth.
func mandateBundle(t *testing.T) *bundle {
	t.Helper()
	return setup(t, func(d *gateway.Deps) {
		d.Catalog.Actions["payments.transfer"].Approval = approval.Policy{Required: approval.RequireAlways, Mandates: true,
			TTL: 15 * time.Minute}
		store := d.Claims.(*memstore.Store)
		d.Approvals, d.Mandates = store, store
		d.Config.Env = gateway.EnvDev
	})
}

// confirmUnder previews and confirms amount USD to payee with token,
// naming mandateID when set.
func (b *bundle) confirmUnder(t *testing.T, token, amount, payee, mandateID string) resp {
	t.Helper()
	params := fmt.Sprintf(`{"amount":%q,"currency":"USD","payee_id":%q}`, amount, payee)
	fp := b.preview(t, token, "payments.transfer", params).str("fingerprint")
	body := `{"fingerprint":"` + fp + `","params":` + params
	if mandateID != "" {
		body += `,"mandate_id":"` + mandateID + `"`
	}
	return b.do(t, "POST", "/v1/actions/payments.transfer/confirm", token, body+"}")
}

// refusedUnder asserts r asks the ordinary approval carrying the mandate's
// reason.
func refusedUnder(t *testing.T, r resp, id string, reason approval.Reason) {
	t.Helper()
	require.Equal(t, status.ApprovalRequired, r.status(), r.raw)
	m, ok := r.body["mandate"].(map[string]any)
	require.True(t, ok, r.raw)
	assert.Equal(t, string(reason), m["reason"], r.raw)
	assert.Equal(t, id, m["mandate_id"], r.raw)
}

// TestConfirmUnderMandate: inside alice's ACTIVE mandate her confirms run
// without a per-operation approval, each reserving the mandate in its
// claim, the workflow's input and the record naming it; outside it (over
// the maximum, another payee, another subject's, revoked) the ordinary
// approval is asked with the reason and nothing runs or is reserved.
func TestConfirmUnderMandate(t *testing.T) {
	t.Parallel()
	b := mandateBundle(t)
	ctx := context.Background()
	m := storetest.ActiveMandate(t, b.store, "alice")
	used := func() (string, int) {
		got, err := b.store.Mandate(ctx, m.ID)
		require.NoError(t, err)
		return got.Used.Text('f'), got.UsedCount
	}

	// Without a mandate of his, bob is asked the approval as before.
	r := b.confirmUnder(t, "dev-bob", "10.00", "p-1", "")
	require.Equal(t, status.ApprovalRequired, r.status(), r.raw)
	assert.NotContains(t, r.body, "mandate", "no mandate was tried")

	// Picked (none named), then named: both run under it.
	amounts := map[string]string{"": "100.00", m.ID: "50.00"}
	for _, named := range []string{"", m.ID} {
		r = b.confirmUnder(t, "dev-alice", amounts[named], "p-1", named)
		require.Equal(t, status.Completed, r.status(), r.raw)
		rec, err := b.store.Get(ctx, r.str("operation_id"))
		require.NoError(t, err)
		assert.Equal(t, m.ID, rec.MandateID, "the record names the mandate")
		assert.Equal(t, m.StatementSHA256, rec.MandateSHA256, "and its statement's hash")
	}
	starts := b.engine.Starts()
	require.Len(t, starts, 2)
	for i, s := range starts {
		require.NotNil(t, s.Input.Mandate, "the workflow's input names the mandate")
		assert.Equal(t, m.ID, s.Input.Mandate.MandateID)
		assert.Equal(t, m.StatementSHA256, s.Input.Mandate.StatementSHA256)
		want, _, err := apd.NewFromString([]string{"100.00", "50.00"}[i])
		require.NoError(t, err)
		assert.Zero(t, want.Cmp(&s.Input.Mandate.Amount), "the amount the claim reserved")
	}
	total, count := used()
	assert.Equal(t, "150", total, "each confirm reserved its amount in its claim")
	assert.Equal(t, 2, count)

	refusedUnder(t, b.confirmUnder(t, "dev-alice", "120.00", "p-1", ""), m.ID, mandate.ReasonExceeded)
	refusedUnder(t, b.confirmUnder(t, "dev-alice", "10.00", "p-9", m.ID), m.ID, mandate.ReasonPayeeNotInMandate)
	bobs := storetest.ActiveMandate(t, b.store, "bob")
	refusedUnder(t, b.confirmUnder(t, "dev-alice", "10.00", "p-1", bobs.ID), bobs.ID, mandate.ReasonNotApplicable)

	_, err := b.store.RevokeMandate(ctx, mandate.Revocation{ID: m.ID, By: "ops", TraceID: "t-revoke", At: time.Now()})
	require.NoError(t, err)
	refusedUnder(t, b.confirmUnder(t, "dev-alice", "10.00", "p-1", ""), m.ID, mandate.ReasonRevoked)
	refusedUnder(t, b.confirmUnder(t, "dev-alice", "10.00", "p-1", m.ID), m.ID, mandate.ReasonRevoked)

	assert.Len(t, b.engine.Starts(), 2, "nothing outside the mandate started")
	total, count = used()
	assert.Equal(t, "150", total, "nothing outside the mandate was reserved")
	assert.Equal(t, 2, count)
}
