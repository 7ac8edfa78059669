// Package history checks what clients saw of oncegate's operations, as
// Jepsen does: every agent call with the time it was sent and the time its
// answer came back, every execution the downstream recorded, and the
// truth's final record, judged by porcupine
// (github.com/anishathalye/porcupine) against a model of one operation's
// state machine. An operation's history is linearizable when some order of
// its events, each placed between its call and its return, is a run of the
// model: no answer moves back from a terminal state, no completed before
// the single execution, no failure that proves nothing was executed for an
// operation the downstream executed, never "unknown" after "it exists".
package history

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Kinds of events.
const (
	// KindConfirm is an agent's confirm and its answer.
	KindConfirm = "confirm"
	// KindStatus is an agent's status query and its answer.
	KindStatus = "status"
	// KindExecute is an execution the downstream recorded (its commit).
	KindExecute = "execute"
	// KindFinal is the truth's record read after the run settled.
	KindFinal = "final"
)

// Answer statuses the model knows (docs/contract.md §4); every other
// status (temporarily_unavailable, a refusal) says nothing of the state.
const (
	statusCompleted        = "completed"
	statusAlreadyCompleted = "already_completed"
	statusFailed           = "failed"
	statusAlreadyFailed    = "already_failed"
	statusInProgress       = "in_progress"
	statusReview           = "needs_manual_review"
	statusUnknown          = "unknown_operation"
	statusRepeat           = "repeat_unacknowledged"
)

// Truth states a KindFinal event carries (operation.State).
const (
	finalDone   = "DONE"
	finalFailed = "FAILED"
	// FinalNone is an operation the truth never held.
	FinalNone = "NONE"
)

// provesNothing are the failure kinds that prove the downstream executed
// nothing (operation.FailureKind.ProvesNothingExecuted; the harness keeps
// its own copy so that a broken product cannot move the bar).
var provesNothing = map[string]bool{"downstream_refused": true, "not_executed": true, "not_sent": true}

// Event is one element of an operation's history.
type Event struct {
	// Op is the operation_id.
	Op string `json:"operation_id"`
	// Client is who saw it: an agent's number; the downstream and the
	// audit have their own (ClientDownstream, ClientAudit).
	Client int `json:"client"`
	// Kind is KindConfirm, KindStatus, KindExecute or KindFinal.
	Kind string `json:"kind"`
	// Call and Return bound when it happened, in unix nanoseconds: the
	// request sent and its answer read; for an execution and the final
	// record, the one instant observed.
	Call   int64 `json:"call"`
	Return int64 `json:"return"`
	// Status is an answer's status, or a final record's state (DONE,
	// FAILED, NEEDS_REVIEW, IN_FLIGHT, FinalNone).
	Status string `json:"status,omitempty"`
	// ResultRef is a completed answer's or a DONE record's result_ref.
	ResultRef string `json:"result_ref,omitempty"`
	// FailureKind is a failed answer's or a FAILED record's failure_kind.
	FailureKind string `json:"failure_kind,omitempty"`
	// NoEffect marks an execution whose downstream record itself says it
	// failed (a payout to a closed account): recorded, nothing moved.
	NoEffect bool `json:"no_effect,omitempty"`
}

// Clients of the events that are not agents.
const (
	// ClientDownstream sees the downstream's executions.
	ClientDownstream = 100
	// ClientAudit reads the truth at the end.
	ClientAudit = 101
)

// state is one operation's state in the model.
type state struct {
	// executed: the downstream executed it (an effect).
	executed bool
	// recorded: the downstream recorded it without an effect.
	recorded bool
	// final is "" until an answer or the truth made it terminal, then
	// DONE or FAILED.
	final string
	// ref is the DONE outcome's result_ref.
	ref string
	// kind is the FAILED outcome's failure_kind (empty: not told).
	kind string
	// nothing: a failure that proves nothing was executed was answered.
	nothing bool
	// known: an answer said the operation exists.
	known bool
}

// step is the model's transition: whether e may happen in s, and the state after it.
func step(s state, e Event) (bool, state) {
	switch e.Kind {
	case KindExecute:
		if s.executed || s.recorded || (s.nothing && !e.NoEffect) || (s.final == finalDone && e.NoEffect) {
			return false, s
		}
		if e.NoEffect {
			s.recorded = true
		} else {
			s.executed = true
		}
		return true, s
	case KindFinal:
		return stepFinal(s, e)
	}
	switch e.Status {
	case statusCompleted, statusAlreadyCompleted:
		return done(s, e.ResultRef)
	case statusFailed, statusAlreadyFailed:
		return failed(s, e.FailureKind)
	case statusInProgress, statusReview:
		if s.final != "" {
			return false, s // back from a terminal state
		}
		s.known = true
		return true, s
	case statusUnknown:
		return !s.known, s
	case statusRepeat:
		// An unacknowledged repeat is refused before anything is claimed.
		return !s.known && !s.executed && !s.recorded, s
	}
	return true, s // temporarily_unavailable and the like: no news
}

// done is a completed answer (or a DONE record) with result_ref ref.
func done(s state, ref string) (bool, state) {
	switch {
	case !s.executed, s.final == finalFailed, s.final == finalDone && s.ref != ref:
		return false, s
	}
	s.final, s.ref, s.known = finalDone, ref, true
	return true, s
}

// failed is a failed answer (or a FAILED record) of kind.
func failed(s state, kind string) (bool, state) {
	switch {
	case s.final == finalDone, provesNothing[kind] && s.executed,
		s.final == finalFailed && kind != "" && s.kind != "" && kind != s.kind:
		return false, s
	}
	s.final, s.known = finalFailed, true
	if kind != "" {
		s.kind = kind
	}
	s.nothing = s.nothing || provesNothing[kind]
	return true, s
}

// stepFinal is the truth's record at the end: it agrees with every answer.
func stepFinal(s state, e Event) (bool, state) {
	switch e.Status {
	case finalDone:
		return done(s, e.ResultRef)
	case finalFailed:
		return failed(s, e.FailureKind)
	case FinalNone:
		return !s.known && !s.executed && !s.recorded, s
	}
	return s.final == "", s // still IN_FLIGHT or NEEDS_REVIEW: nothing was final
}

// Model is porcupine's model of one operation, the history partitioned by
// operation.
var Model = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byOp := map[string][]porcupine.Operation{}
		var order []string
		for _, o := range h {
			id := o.Input.(Event).Op
			if _, ok := byOp[id]; !ok {
				order = append(order, id)
			}
			byOp[id] = append(byOp[id], o)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, id := range order {
			out = append(out, byOp[id])
		}
		return out
	},
	Init: func() any { return state{} },
	Step: func(s, in, _ any) (bool, any) { return step(s.(state), in.(Event)) },
	DescribeOperation: func(in, _ any) string {
		return in.(Event).String()
	},
	DescribeState: func(s any) string { return s.(state).String() },
}

// String describes the event as the visualization and the reports show it.
func (e Event) String() string {
	switch e.Kind {
	case KindExecute:
		if e.NoEffect {
			return "downstream recorded it (no effect)"
		}
		return "downstream executed it"
	case KindFinal:
		return "truth: " + e.Status + suffix(e.ResultRef, e.FailureKind)
	}
	return e.Kind + " → " + e.Status + suffix(e.ResultRef, e.FailureKind)
}

func suffix(ref, kind string) string {
	var parts []string
	if ref != "" {
		parts = append(parts, ref)
	}
	if kind != "" {
		parts = append(parts, kind)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// String describes a state.
func (s state) String() string {
	var parts []string
	switch {
	case s.executed:
		parts = append(parts, "executed")
	case s.recorded:
		parts = append(parts, "recorded, no effect")
	}
	switch s.final {
	case finalDone:
		parts = append(parts, "DONE "+s.ref)
	case finalFailed:
		parts = append(parts, "FAILED "+s.kind)
	}
	if s.known && s.final == "" {
		parts = append(parts, "known")
	}
	if len(parts) == 0 {
		return "nothing yet"
	}
	return fmt.Sprint(strings.Join(parts, ", "))
}
