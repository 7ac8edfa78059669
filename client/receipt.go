package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/go-jose/go-jose/v4"

	"github.com/oncegate/oncegate/receipt"
)

// ErrReceiptMismatch means an answer's receipt verifies but states another
// operation or outcome than the answer it came with.
var ErrReceiptMismatch = errors.New("oncegate: the receipt states another outcome than its answer")

// maxJWKS bounds the JWK set read from a gateway.
const maxJWKS = 1 << 20

// VerifyReceipt verifies a receipt (the receipt of a terminal answer)
// offline against keys, the gateway's JWK set (Client.JWKS, FetchJWKS), and
// returns what it states. It refuses a receipt with any byte changed, one
// signed by a key the set does not list (unknown, or retired by the
// gateway), and any algorithm but EdDSA; errors.Is tells which with the
// receipt package's Err* values.
func VerifyReceipt(jws string, keys jose.JSONWebKeySet) (receipt.Claims, error) {
	c, err := receipt.Verify(jws, keys)
	if err != nil {
		return receipt.Claims{}, fmt.Errorf("verify receipt: %w", err)
	}
	return c, nil
}

// VerifyReceipt verifies a's receipt against keys (VerifyReceipt) and that
// it states a itself: the same operation, the outcome of a's status
// (completed or failed, replays included), its result_ref and failure_kind.
// ErrReceiptMismatch otherwise; an error too when a carries no receipt (only
// terminal answers do).
func (a *Answer) VerifyReceipt(keys jose.JSONWebKeySet) (receipt.Claims, error) {
	if a.Receipt == "" {
		return receipt.Claims{}, fmt.Errorf("verify receipt: a %s answer carries no receipt", a.Status)
	}
	c, err := VerifyReceipt(a.Receipt, keys)
	if err != nil {
		return receipt.Claims{}, err
	}
	outcome := receipt.OutcomeFailed
	if a.Status.Succeeded() {
		outcome = receipt.OutcomeCompleted
	}
	switch {
	case !a.Status.Terminal():
		err = fmt.Errorf("a %s answer is not an outcome", a.Status)
	case c.OperationID != a.OperationID:
		err = fmt.Errorf("operation %s, the answer's is %s", c.OperationID, a.OperationID)
	case c.Outcome != outcome:
		err = fmt.Errorf("outcome %s, the answer is %s", c.Outcome, a.Status)
	case c.ResultRef != a.ResultRef:
		err = fmt.Errorf("result_ref %q, the answer's is %q", c.ResultRef, a.ResultRef)
	case c.FailureKind != a.FailureKind:
		err = fmt.Errorf("failure_kind %q, the answer's is %q", c.FailureKind, a.FailureKind)
	}
	if err != nil {
		return receipt.Claims{}, fmt.Errorf("verify receipt: %w: %w", ErrReceiptMismatch, err)
	}
	return c, nil
}

// JWKS fetches the gateway's receipt keys (GET /.well-known/jwks.json, no
// token needed) with the client's HTTP client.
func (c *Client) JWKS(ctx context.Context) (jose.JSONWebKeySet, error) {
	return FetchJWKS(ctx, c.http, c.base.String()+receipt.JWKSPath)
}

// FetchJWKS reads the JWK set served at url (a gateway's
// /.well-known/jwks.json, or a copy kept elsewhere) with hc (nil:
// http.DefaultClient).
func FetchJWKS(ctx context.Context, hc *http.Client, url string) (jose.JSONWebKeySet, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("fetch jwks %s: %w", url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("fetch jwks %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS))
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("fetch jwks %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return jose.JSONWebKeySet{}, fmt.Errorf("fetch jwks %s: HTTP %d: %.200s", url, resp.StatusCode, body)
	}
	return ParseJWKS(body)
}

// ParseJWKS decodes a JWK set (RFC 7517), such as a saved copy of a
// gateway's /.well-known/jwks.json.
func ParseJWKS(data []byte) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("parse jwks: %w", err)
	}
	if len(set.Keys) == 0 {
		return jose.JSONWebKeySet{}, errors.New("parse jwks: no keys")
	}
	return set, nil
}
