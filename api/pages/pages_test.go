package pages

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/gateway"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestApprovalPage(t *testing.T) {
	t.Parallel()
	a := Approve{ApprovalPage: gateway.ApprovalPage{Title: "Wire transfer", Scope: "payments.wire", OperationID: "op1",
		Subject: "alice", Amount: "250.00", Currency: "USD", Payee: `p-1"><script>alert(1)</script>`,
		Fields: []gateway.PageField{{Name: "amount", Value: "250.00"}}, State: "pending", Open: true,
		Fingerprint: `fp"</script><script>x()</script>`, Params: "cA"},
		Reasons: []string{"the amount is above the threshold that needs approval"}, StateText: "Waiting for your decision."}
	var b bytes.Buffer
	require.NoError(t, Approval(&b, a))
	page := b.String()
	assert.Contains(t, page, `<span id="amount">250.00</span> <span id="currency">USD</span>`)
	assert.Contains(t, page, `id="approve"`)
	assert.Contains(t, page, "navigator.credentials.get")
	assert.NotContains(t, page, "<script>alert(1)</script>", "values are escaped in HTML")
	assert.NotContains(t, page, `</script><script>x()`, "values are escaped in the script")
	assert.Equal(t, 1, strings.Count(page, "<script>"), "one script, the page's own")

	a.Open, a.State, a.StateText = false, "approved", "Approved."
	b.Reset()
	require.NoError(t, Approval(&b, a))
	assert.NotContains(t, b.String(), `id="approve"`, "a decided approval has no buttons")
	assert.NotContains(t, b.String(), "<script>")
}

func TestEnrolAndRefusedPages(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, Enrolment(&b, Enrol{Subject: "alice", Open: true, ExpiresText: "soon"}))
	assert.Contains(t, b.String(), `<span id="subject">alice</span>`)
	assert.Contains(t, b.String(), "navigator.credentials.create")
	b.Reset()
	require.NoError(t, Refused(&b, "This link cannot be used: <it expired>."))
	assert.Contains(t, b.String(), "&lt;it expired&gt;")
	assert.NotContains(t, b.String(), "<script>")
}
