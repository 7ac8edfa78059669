package gateway

import (
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/receipt"
)

// fieldReceipt is the body field of a terminal answer that holds its receipt.
const fieldReceipt = "receipt"

// operationRef names an operation in its receipt: its id and what its
// claim bound (subject, scope, param_hash, approval).
type operationRef struct {
	// ID is the operation id.
	ID string
	// Subject is whom the operation belongs to.
	Subject string
	// Scope is the action.
	Scope string
	// ParamHash binds the canonical params.
	ParamHash string
	// ApprovalSHA256 is the approval evidence's hash ("" without approval).
	ApprovalSHA256 string
	// ActingClient is the client whose confirm claimed the operation ("" when none was named).
	ActingClient string
}

// refOf is the operation rec names.
func refOf(rec idemstore.Record) operationRef {
	return operationRef{ID: rec.OperationID, Subject: rec.Subject, Scope: rec.Scope, ParamHash: rec.ParamHash,
		ApprovalSHA256: rec.ApprovalSHA256, ActingClient: rec.ActingClient}
}

// receiptClaims is what the receipt of op's terminal outcome f states.
func receiptClaims(op operationRef, f operation.Final) receipt.Claims {
	outcome := receipt.OutcomeFailed
	if f.State == operation.StateDone {
		outcome = receipt.OutcomeCompleted
	}
	return receipt.Claims{
		OperationID: op.ID, Subject: op.Subject, Scope: op.Scope, ParamHash: op.ParamHash,
		Outcome: outcome, ResultRef: f.ResultRef, FailureKind: string(f.FailureKind),
		ApprovalSHA256: op.ApprovalSHA256, ActingClient: op.ActingClient, FinalizedAt: f.CompletedAt,
	}
}

// withReceipt adds to r, the answer of op's terminal outcome f, the receipt
// this gateway signs over them (once: its replays and polls take it from
// s.signed). An outcome that cannot be stated in full (a
// bug: every terminal record names its subject, scope, param_hash and
// time) is answered without one, and logged: a receipt never states what
// is not known.
func (s *Service) withReceipt(r Answer, op operationRef, f operation.Final) Answer {
	jws, err := s.signed.Sign(s.receipts, receiptClaims(op, f))
	if err != nil {
		s.log.Error("receipt not issued", "operation_id", op.ID, "err", err)
		return r
	}
	return r.With(fieldReceipt, jws)
}
