package operation

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSummary(t *testing.T) {
	tests := []struct {
		name, params, field, want string
	}{
		{"number", `{"amount":12.5,"currency":"USD","payee_id":"p-1"}`, "amount", "payments.transfer 12.5 USD to p-1"},
		{"string amount", `{"amount":"12.50","currency":"usd","payee_id":"p-1","memo":"x"}`, "amount", "payments.transfer 12.50 usd to p-1"},
		{"no field", `{"amount":1}`, "", "payments.transfer"},
		{"not an object", `[1]`, "amount", "payments.transfer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Summary("payments.transfer", json.RawMessage(tt.params), tt.field))
		})
	}
}
