package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/receipt"
)

// fieldReceipt is the body field of a terminal answer that holds its receipt.
const fieldReceipt = "receipt"

// receiptClaims is what the receipt of the terminal record rec states.
func receiptClaims(rec idemstore.Record) receipt.Claims {
	outcome := receipt.OutcomeFailed
	if rec.State == idemstore.StateDone {
		outcome = receipt.OutcomeCompleted
	}
	return receipt.Claims{
		OperationID: rec.OperationID, Subject: rec.Subject, Scope: rec.Scope, ParamHash: rec.ParamHash,
		Outcome: outcome, ResultRef: rec.ResultRef, FailureKind: string(rec.FailureKind),
		ApprovalSHA256: rec.ApprovalSHA256, FinalizedAt: rec.CompletedAt,
	}
}

// withReceipt adds to r, the answer of the terminal record rec, the receipt
// this gateway signs over it. A record that cannot be stated in full (a bug:
// every terminal record names its subject, scope, param_hash and time) is
// answered without one, and logged: a receipt never states what is not known.
func (s *Server) withReceipt(r reply, rec idemstore.Record) reply {
	jws, err := s.receipts.Sign(receiptClaims(rec))
	if err != nil {
		s.log.Error("receipt not issued", "operation_id", rec.OperationID, "err", err)
		return r
	}
	return r.with(fieldReceipt, jws)
}

// handleJWKS serves GET /.well-known/jwks.json: the public key of every
// listed receipt key (RFC 7517), the signing key first. A key removed from
// ONCEGATE_RECEIPT_KEYS is retired: no longer served, so its receipts no
// longer verify.
func (s *Server) handleJWKS(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.JSON(http.StatusOK, s.receipts.JWKS())
}
