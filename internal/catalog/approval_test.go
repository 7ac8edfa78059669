package catalog

import (
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/approval"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wireAction is one action binding amount, currency and payee_id, with the
// approval policy given (YAML lines under approval:, indented by 6).
func wireAction(bind, approval string) []byte {
	if bind == "" {
		bind = `      amount: {type: decimal, required: true, scale_from: currency}
      currency: {type: string, required: true, normalize: [trim, upper], kind: currency}
      payee_id: {type: string, required: true, kind: identifier}
`
	}
	y := `actions:
  payments.wire:
    bind:
` + bind + `    fingerprint_ttl: 15m
    in_flight_ttl: 10m
    terminal_ttl: 720h
    downstream:
      execute: http://127.0.0.1:8090/v1/transfers
      honors_idempotency_key: true
      idempotency_key_retention: 24h
      timeout: 5s
      attempts: 5
      backoff: 500ms
      backoff_max: 5s
      result_ref: id
`
	if approval != "" {
		y += "    approval:\n" + approval
	}
	return []byte(y)
}

func TestApprovalPolicyLoads(t *testing.T) {
	t.Parallel()
	c, err := parse(wireAction("", `      required: above
      above: {USD: "100.00", EUR: 100, JPY: "10000", BHD: "0.125"}
      new_payee: true
      ttl: 10m
      mandates: allowed
`), gatewayWait, devEnv)
	require.NoError(t, err)
	a := c.Actions["payments.wire"].Approval
	assert.Equal(t, approval.RequireAbove, a.Required)
	assert.True(t, a.NewPayee)
	assert.True(t, a.Mandates)
	assert.Equal(t, 10*time.Minute, a.TTL)
	require.Len(t, a.Above, 4)
	assert.Equal(t, "100", a.Above["USD"].Text('f'))
	assert.Equal(t, "0.125", a.Above["BHD"].Text('f'))
	assert.True(t, a.Asks())
	assert.Equal(t, "payments.wire", c.Actions["payments.wire"].Title, "the title defaults to the scope")

	// No policy: never, and the ttl is the fingerprint's.
	c, err = parse(wireAction("", ""), gatewayWait, devEnv)
	require.NoError(t, err)
	a = c.Actions["payments.wire"].Approval
	assert.Equal(t, approval.RequireNever, a.Required)
	assert.False(t, a.Asks())
	assert.False(t, a.Mandates, "mandates default to never")
	assert.Equal(t, 15*time.Minute, a.TTL)

	c, err = parse(wireAction("", "      required: always\n      mandates: never\n"), gatewayWait, devEnv)
	require.NoError(t, err)
	assert.False(t, c.Actions["payments.wire"].Approval.Mandates)
}

// TestApprovalPolicyRefused: every bad policy is refused at load with the
// field named.
func TestApprovalPolicyRefused(t *testing.T) {
	t.Parallel()
	noPayee := `      amount: {type: decimal, required: true, scale_from: currency}
      currency: {type: string, required: true, kind: currency}
`
	noCurrency := `      amount: {type: decimal, required: true}
      payee_id: {type: string, required: true}
`
	for name, tc := range map[string]struct {
		bind, approval, want string
	}{
		"unknown requirement":                  {"", "      required: sometimes\n", `approval.required "sometimes" is unknown`},
		"above without thresholds":             {"", "      required: above\n", "approval.above is required with required: above"},
		"thresholds without above":             {"", "      required: always\n      above: {USD: 1}\n", "approval.above applies only with required: above"},
		"unknown currency":                     {"", "      required: above\n      above: {XTS: 1}\n", `approval.above.XTS: "XTS" is not an active ISO 4217 currency code`},
		"lower-case currency":                  {"", "      required: above\n      above: {usd: 1}\n", "approval.above.usd"},
		"bad scale for USD":                    {"", "      required: above\n      above: {USD: \"100.001\"}\n", "approval.above.USD 100.001 has 3 decimal places; USD allows at most 2"},
		"bad scale for JPY":                    {"", "      required: above\n      above: {JPY: \"100.5\"}\n", "approval.above.JPY 100.5 has 1 decimal places; JPY allows at most 0"},
		"negative threshold":                   {"", "      required: above\n      above: {USD: \"-1\"}\n", "approval.above.USD -1 must be >= 0"},
		"missing threshold":                    {"", "      required: above\n      above: {USD: }\n", "approval.above.USD: a threshold amount is required"},
		"ttl longer than the fingerprint's":    {"", "      required: always\n      ttl: 20m\n", "approval.ttl 20m must be <= fingerprint_ttl 15m"},
		"ttl not a duration":                   {"", "      required: always\n      ttl: soon\n", `approval.ttl "soon" is not a duration`},
		"negative ttl":                         {"", "      required: always\n      ttl: -1m\n", "approval.ttl -1m must be > 0"},
		"approvers without a policy that asks": {"", "      approvers: {role: finance, count: 2}\n", "approval.approvers applies only to a policy that asks"},
		"approvers without a role":             {"", "      required: always\n      approvers: {count: 2}\n", `approval.approvers.role "" must be a role name`},
		"approvers with a bad role":            {"", "      required: always\n      approvers: {role: \"fin ance\", count: 2}\n", `approval.approvers.role "fin ance" must be a role name`},
		"approvers count zero":                 {"", "      required: always\n      approvers: {role: finance}\n", "approval.approvers.count 0 must be between 1 and 10"},
		"approvers count too many":             {"", "      required: always\n      approvers: {role: finance, count: 11}\n", "approval.approvers.count 11 must be between 1 and 10"},
		"new payee without payee_id":           {noPayee, "      new_payee: true\n", "approval.new_payee needs the bound string field payee_id"},
		"above without a currency field":       {noCurrency, "      required: above\n      above: {USD: 1}\n", "approval.above needs the bound field currency of kind currency"},
		"unknown mandates value":               {"", "      required: always\n      mandates: sometimes\n", `approval.mandates "sometimes" is unknown (want never or allowed)`},
		"mandates without a policy that asks":  {"", "      mandates: allowed\n", "approval.mandates applies only to a policy that asks"},
		"mandates without payee_id":            {noPayee, "      required: always\n      mandates: allowed\n", "approval.mandates needs the bound string field payee_id"},
		"mandates without a currency field":    {noCurrency, "      required: always\n      mandates: allowed\n", "approval.mandates needs the bound field currency of kind currency"},
		"unknown key":                          {"", "      required: always\n      approver: bob\n", "field approver not found"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := parse(wireAction(tc.bind, tc.approval), gatewayWait, devEnv)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			if !strings.Contains(tc.want, "not found") {
				assert.Contains(t, err.Error(), "payments.wire: ", "the action is named")
			}
		})
	}
}
