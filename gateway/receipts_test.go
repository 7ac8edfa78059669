package gateway

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/receipt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A terminal record that does not name the operation in full gets no
// receipt: a receipt never states what is not known.
func TestNoReceiptForAnIncompleteRecord(t *testing.T) {
	t.Parallel()
	s := receiptService(t)
	full := idemstore.Record{OperationID: strings.Repeat("0a", 16), Subject: "alice", Scope: "payments.transfer",
		ParamHash: strings.Repeat("ab", 32), State: operation.StateDone, ResultRef: "tr_1", CompletedAt: time.Now()}
	assert.Contains(t, s.answerFor(full, false).Fields, fieldReceipt)
	for name, change := range map[string]func(r *idemstore.Record){
		"no subject":     func(r *idemstore.Record) { r.Subject = "" },
		"no scope":       func(r *idemstore.Record) { r.Scope = "" },
		"no param_hash":  func(r *idemstore.Record) { r.ParamHash = "" },
		"no time":        func(r *idemstore.Record) { r.CompletedAt = time.Time{} },
		"in flight":      func(r *idemstore.Record) { r.State = operation.StateInFlight },
		"needs a person": func(r *idemstore.Record) { r.State = operation.StateNeedsReview },
	} {
		rec := full
		change(&rec)
		assert.NotContains(t, s.answerFor(rec, false).Fields, fieldReceipt, name)
	}
}

// The first confirm's receipt names the workflow's outcome and what the
// claim bound: the operation, subject, scope, param_hash and approval.
func TestConfirmCallRefNamesTheClaim(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	call := &confirmCall{
		req: ConfirmRequest{Caller: Caller{Subject: "alice"}}, action: &catalog.Action{Scope: "payments.transfer"},
		payload: fingerprint.Payload{Nonce: strings.Repeat("0e", 16)}, bound: boundParams{paramHash: strings.Repeat("ab", 32)},
		approvalSHA256: strings.Repeat("5e", 32),
	}
	f := operation.Final{State: operation.StateDone, ResultRef: "tr_1", CompletedAt: at}
	assert.Equal(t, receipt.Claims{
		OperationID: call.opID(), Subject: "alice", Scope: "payments.transfer", ParamHash: strings.Repeat("ab", 32),
		ApprovalSHA256: strings.Repeat("5e", 32), Outcome: receipt.OutcomeCompleted, ResultRef: "tr_1", FinalizedAt: at,
	}, receiptClaims(call.ref(""), f))
	s := receiptService(t)
	assert.Contains(t, s.withReceipt(Answer{}, call.ref(""), f).Fields, fieldReceipt)
}

// receiptService is a service that signs receipts and answers stored
// results, and nothing else.
func receiptService(t *testing.T) *Service {
	t.Helper()
	signed, err := receipt.NewCache(1)
	require.NoError(t, err)
	results, err := newResultForms(8)
	require.NoError(t, err)
	return &Service{receipts: receiptKeyring(t), signed: signed, results: results, log: slog.New(slog.DiscardHandler)}
}

func receiptKeyring(t *testing.T) *receipt.Keyring {
	t.Helper()
	k, err := receipt.NewKeyring(receipt.Key{ID: "r1", Seed: make([]byte, 32)})
	require.NoError(t, err)
	return k
}
