package simulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/apd/v3"
)

// Limits of the amounts the simulator accepts, so that a plain decimal string
// stays short.
const (
	maxAmountIntegerDigits = 20
	maxAmountScale         = 18
)

var (
	// fundsLimit is the balance every payer has: a larger amount is refused
	// with insufficient_funds.
	fundsLimit = apd.New(10000, 0)
	// feeRate is the fee of a quote, 1%.
	feeRate = apd.New(1, -2)
	// minFee is the smallest fee of a quote.
	minFee = apd.New(25, -2)
	// decimalCtx does the exact arithmetic of fees.
	decimalCtx = apd.BaseContext.WithPrecision(60)
)

// errAmount is returned for an amount that is not a positive exact decimal.
var errAmount = errors.New("amount must be a positive decimal number, given as a JSON number or string")

// parseAmount reads an amount given as a JSON number or a JSON string holding
// a decimal, exactly (never through float64), and returns it reduced: no
// trailing zeros, so "12.50", 12.5 and 1.25e1 are the same amount.
func parseAmount(raw json.RawMessage) (*apd.Decimal, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, errors.New("amount is required")
	}
	var text string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, errAmount
		}
	} else {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, errAmount
		}
		text = n.String()
	}
	d, _, err := apd.NewFromString(text)
	if err != nil || d.Form != apd.Finite || d.Sign() <= 0 {
		return nil, errAmount
	}
	d.Reduce(d)
	if -int64(d.Exponent) > maxAmountScale || d.NumDigits()+int64(d.Exponent) > maxAmountIntegerDigits {
		return nil, fmt.Errorf("amount must have at most %d integer digits and %d decimal places", maxAmountIntegerDigits, maxAmountScale)
	}
	return d, nil
}

// formatAmount writes d as a plain decimal: no exponent.
func formatAmount(d *apd.Decimal) string { return d.Text('f') }

// exceedsFunds reports whether amount is above the payer's balance.
func exceedsFunds(amount *apd.Decimal) bool { return amount.Cmp(fundsLimit) > 0 }

// quoteFee returns the fee of a transfer of amount: 1% rounded half up to two
// decimals, at least 0.25, always written with two decimals.
func quoteFee(amount *apd.Decimal) (string, error) {
	fee := new(apd.Decimal)
	if _, err := decimalCtx.Mul(fee, amount, feeRate); err != nil {
		return "", fmt.Errorf("fee: %w", err)
	}
	rc := decimalCtx.WithPrecision(60)
	rc.Rounding = apd.RoundHalfUp
	if _, err := rc.Quantize(fee, fee, -2); err != nil {
		return "", fmt.Errorf("round fee: %w", err)
	}
	if fee.Cmp(minFee) < 0 {
		fee.Set(minFee)
	}
	return fee.Text('f'), nil
}
