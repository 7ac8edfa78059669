package soak

import (
	"slices"
	"sync"
	"time"
)

// Intents: what the agent meant an operation to be, which fixes how often
// it may execute.
const (
	// intentRun is an operation the agent wants executed (at most once).
	intentRun = "run"
	// intentUnacknowledgedRepeat is an amnesia re-preview confirmed without
	// acknowledge_repeat_of: it must be refused and never execute.
	intentUnacknowledgedRepeat = "unacknowledged_repeat"
	// intentAcknowledgedRepeat is an intended second operation ("again"),
	// confirmed with acknowledge_repeat_of.
	intentAcknowledgedRepeat = "acknowledged_repeat"
)

// seen is one answer an agent received about an operation.
type seen struct {
	// Sent is when the request was sent.
	Sent time.Time `json:"sent"`
	// At is when the answer arrived.
	At time.Time `json:"at"`
	// Agent is the agent that sent it.
	Agent int `json:"agent"`
	// Request is preview, confirm or status.
	Request string `json:"request"`
	answer
}

// opRecord is what the agents know about one operation: who asked for it,
// what they meant, and every answer they received about it.
type opRecord struct {
	// ID is the operation_id (the fingerprint's nonce).
	ID string `json:"operation_id"`
	// Scope is the action.
	Scope string `json:"scope"`
	// Subject is who asked for it.
	Subject string `json:"subject"`
	// Episode is the episode kind that made it.
	Episode string `json:"episode"`
	// Intent is what the agent meant it to be (intentRun, ...).
	Intent string `json:"intent"`
	// RepeatOf is the operation a repeat repeats.
	RepeatOf string `json:"repeat_of,omitempty"`
	// Answers is every answer about it, in arrival order.
	Answers []seen `json:"answers"`
}

// ledger collects, for the audit, every operation the agents created and
// every answer they got, plus what the agents themselves found wrong.
type ledger struct {
	mu         sync.Mutex
	ops        map[string]*opRecord
	order      []string
	statuses   map[string]int
	episodes   map[string]int
	lost       int
	transport  int
	violations []Violation
}

func newLedger() *ledger {
	return &ledger{ops: map[string]*opRecord{}, statuses: map[string]int{}, episodes: map[string]int{}}
}

// add registers a new operation.
func (l *ledger) add(op *opRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.ops[op.ID]; !ok {
		l.ops[op.ID] = op
		l.order = append(l.order, op.ID)
	}
}

// record stores an answer about op and checks what can be checked at once:
// the answer names the operation it was asked about, and retryable is true
// exactly for temporarily_unavailable (docs/contract.md §4).
func (l *ledger) record(op *opRecord, agent int, request string, sent time.Time, a answer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.statuses[a.Status]++
	op.Answers = append(op.Answers, seen{Sent: sent, At: time.Now(), Agent: agent, Request: request, answer: a})
	if a.OperationID != "" && a.OperationID != op.ID {
		l.violations = append(l.violations, violation(op.ID, checkAnswer,
			"a %s answer about %s named operation %s", request, op.ID, a.OperationID))
	}
	if a.Retryable != (a.Status == "temporarily_unavailable") {
		l.violations = append(l.violations, violation(op.ID, checkAnswer,
			"a %s answer %s (HTTP %d) has retryable=%v", request, a.Status, a.Code, a.Retryable))
	}
}

// tally counts an answer that concerns no operation (a refused preview).
func (l *ledger) tally(status string) {
	l.mu.Lock()
	l.statuses[status]++
	l.mu.Unlock()
}

// violate records something an agent found wrong.
func (l *ledger) violate(v Violation) {
	l.mu.Lock()
	l.violations = append(l.violations, v)
	l.mu.Unlock()
}

// count adds to one of the ledger's counters.
func (l *ledger) count(counter *int) {
	l.mu.Lock()
	*counter++
	l.mu.Unlock()
}

// episode counts one episode of kind.
func (l *ledger) episode(kind string) {
	l.mu.Lock()
	l.episodes[kind]++
	l.mu.Unlock()
}

// snapshot returns the operations in creation order.
func (l *ledger) snapshot() []*opRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*opRecord, 0, len(l.order))
	for _, id := range l.order {
		op := l.ops[id]
		cp := *op
		cp.Answers = slices.Clone(op.Answers)
		out = append(out, &cp)
	}
	return out
}
