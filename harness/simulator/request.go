package simulator

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxBodyBytes bounds every request body.
const maxBodyBytes = 1 << 20

// transferRequest is the body of POST /v1/quotes, POST /v1/transfers and
// POST /legacy/transfers. Fields the simulator does not know are ignored.
type transferRequest struct {
	Amount          json.RawMessage `json:"amount"`
	Currency        *string         `json:"currency"`
	PayeeID         *string         `json:"payee_id"`
	Memo            *string         `json:"memo"`
	ClientReference *string         `json:"client_reference"`
}

// transferParams is a validated transferRequest.
type transferParams struct {
	amount          string // reduced plain decimal
	exceedsFunds    bool
	fee             string
	currency        string
	payeeID         string
	memo            string
	clientReference string
}

// hash identifies the parameters for the Idempotency-Key reuse check: two
// requests with the same key must carry the same parameters.
func (p transferParams) hash() string {
	b, _ := json.Marshal([]string{p.amount, p.currency, p.payeeID, p.memo, p.clientReference})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// decodeJSON reads exactly one JSON object from the request body into v.
func decodeJSON(r *http.Request, v any, disallowUnknown bool) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBodyBytes))
	dec.UseNumber()
	if disallowUnknown {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid JSON body: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("invalid JSON body: trailing data after the object")
	}
	return nil
}

// readTransfer decodes and validates a transfer or quote body.
func readTransfer(r *http.Request, needClientReference bool) (transferParams, error) {
	var req transferRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return transferParams{}, err
	}
	amount, err := parseAmount(req.Amount)
	if err != nil {
		return transferParams{}, err
	}
	p := transferParams{amount: formatAmount(amount), exceedsFunds: exceedsFunds(amount)}
	if p.fee, err = quoteFee(amount); err != nil {
		return transferParams{}, err
	}
	if req.Currency == nil || strings.TrimSpace(*req.Currency) == "" {
		return transferParams{}, errors.New("currency is required")
	}
	p.currency = *req.Currency
	if req.PayeeID == nil || strings.TrimSpace(*req.PayeeID) == "" {
		return transferParams{}, errors.New("payee_id is required")
	}
	p.payeeID = *req.PayeeID
	if req.Memo != nil {
		p.memo = *req.Memo
	}
	if req.ClientReference != nil {
		p.clientReference = *req.ClientReference
	}
	if needClientReference && strings.TrimSpace(p.clientReference) == "" {
		return transferParams{}, errors.New("client_reference is required")
	}
	return p, nil
}

// newID returns prefix followed by 24 random hex characters.
func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand).
	return prefix + hex.EncodeToString(b)
}
