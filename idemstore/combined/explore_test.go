package combined

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/decidetest"
)

// errDiskFull is the cause of a backend's replyFailed in the tables.
var errDiskFull = errors.New("disk full")

// Error texts of the sentinels, for the tables' expected errors.
const (
	textNotFound    = "idemstore: record not found"
	textNotOwner    = "idemstore: not the owner"
	textTerminal    = "idemstore: record already terminal"
	textUnavailable = "idemstore: backend unavailable"
	textDiskFull    = "disk full"
)

// option is one answer a table gives a call, named in the path's key.
type option = decidetest.Option[answer]

// callAnswers are the options of a call: found (or ok, when rec is nil)
// and every error reply, each built from an error text that names the call
// (so that a table can check whose error an answer wraps) and classified
// by answerOf. fast adds replySkipped (the store is degraded).
func callAnswers(call string, fast bool, found ...option) []option {
	opts := found
	if len(opts) == 0 {
		opts = []option{{Name: "ok", Answer: replied(nil)}}
	}
	if fast {
		opts = append(opts, option{Name: "skipped", Answer: answer{Reply: replySkipped}})
	}
	for _, e := range []struct {
		name string
		err  error
	}{
		{"not found", idemstore.ErrNotFound},
		{"not owner", idemstore.ErrNotOwner},
		{"already terminal", idemstore.ErrAlreadyTerminal},
		{"unavailable", idemstore.ErrUnavailable},
		{"failed", errDiskFull},
	} {
		opts = append(opts, option{Name: e.name, Answer: replied(callErr(call, e.err))})
	}
	return opts
}

// callErr is the error a call of the tables answers: its name, then err.
func callErr(call string, err error) error { return fmt.Errorf("%s: %w", call, err) }

// TestAnswerOf classifies every sentinel, wrapped, and nil.
func TestAnswerOf(t *testing.T) {
	t.Parallel()
	rec := idemstore.Record{OperationID: "op-1"}
	assert.Equal(t, answer{Reply: replyOK, Record: rec}, answerOf(rec, nil))
	for err, want := range map[error]reply{
		idemstore.ErrNotFound:        replyNotFound,
		idemstore.ErrNotOwner:        replyNotOwner,
		idemstore.ErrAlreadyTerminal: replyAlreadyTerminal,
		idemstore.ErrUnavailable:     replyUnavailable,
		errDiskFull:                  replyFailed,
	} {
		wrapped := fmt.Errorf("call: %w", err)
		got := answerOf(rec, wrapped)
		assert.Equal(t, want, got.Reply, "%v", err)
		assert.Same(t, wrapped, got.Err, "the backend's error is kept")
		assert.Zero(t, got.Record, "no record with an error")
	}
}

// TestSkippedTruthIsUnexpected checks every call of the truth that answers
// replySkipped (only the fast path is ever skipped): an error, never an
// answer.
func TestSkippedTruthIsUnexpected(t *testing.T) {
	t.Parallel()
	skipped := answer{Reply: replySkipped}
	ok := replied(nil)
	notOwner, notFound := replied(idemstore.ErrNotOwner), replied(idemstore.ErrNotFound)
	mine := answerOf(finalizeFastMine, nil)
	for name, err := range map[string]error{
		"Get: truth.Get":                 decideGet(getFacts{Truth: skipped}).Err,
		"Takeover: truth.Get":            decideTakeover(idemstore.TakeoverParams{}, takeoverFacts{TruthRecord: skipped}).Err,
		"Takeover: truth.Takeover":       decideTakeover(idemstore.TakeoverParams{}, takeoverFacts{TruthRecord: ok, Truth: skipped}).Err,
		"Finalize: truth.Finalize":       decideFinalize(finalizeCase, finalizeFacts{Truth: skipped}).Err,
		"Finalize: truth.Get":            decideFinalize(finalizeCase, finalizeFacts{Truth: notOwner, TruthRecord: skipped}).Err,
		"Finalize: truth.Acquire":        decideFinalize(finalizeCase, finalizeFacts{Truth: notOwner, TruthRecord: notFound, FastClaim: mine, ClaimTruth: skipped}).Err,
		"Finalize: truth.Finalize again": decideFinalize(finalizeCase, finalizeFacts{Truth: notOwner, TruthRecord: notFound, FastClaim: mine, ClaimTruth: ok, TruthAgain: skipped}).Err,
	} {
		assert.ErrorIs(t, err, errTruthAnswer, name)
	}
}
