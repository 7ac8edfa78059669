package api

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oncegate/oncegate/api/messages"
	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/status"
)

// The transport's own answers (a body it cannot read, a missing member)
// and what the renderer derives from every answer: the texts' data from
// the body's fields and words, and the approval reasons in words.

// malformed is a malformed_request answer with the detail key; w fills the
// detail's placeholders.
func malformed(detail string, w gateway.Words) gateway.Answer {
	r := gateway.NewAnswer(status.MalformedRequest)
	r.Detail = detail
	r.Words = w
	return r
}

// memberMissingAnswer is malformed_request naming a member of the body that
// is absent or null, and what it must be.
func memberMissingAnswer(member, expected string) gateway.Answer {
	return malformed(detailMemberMissing, gateway.Words{Field: member, Expected: expected})
}

// wordsData is the texts' data of an answer's words.
func wordsData(w gateway.Words) messages.Data {
	return messages.Data{ExpiresAt: w.ExpiresAt, Got: w.Got, Detail: w.Detail, State: w.State, Field: w.Field,
		Expected: w.Expected, Err: w.Err, Offset: w.Offset}
}

// reasonsText says reasons in lang, joined by "; ".
func (s *Server) reasonsText(lang messages.Lang, reasons []approval.Reason) string {
	out := ""
	for i, r := range reasons {
		text := string(r)
		if key, ok := gateway.ReasonDetail(r); ok {
			if t, err := s.msgs.Fragment(lang, key, messages.Data{}); err == nil {
				text = t
			}
		}
		if i > 0 {
			out += "; "
		}
		out += text
	}
	return out
}

// bodyTexts fills the texts' data from the body fields they also show, so
// that each value is written once, into the body. Each entry reads one
// field; a field of another type than its entry expects is a bug, reported
// by textData. The data goes in and comes out by value: a pointer to it,
// passed to functions called through this map, would move every answer's
// data to the heap.
var bodyTexts = map[string]func(d messages.Data, v any) (messages.Data, bool){
	"state":            shows(func(d messages.Data, v operation.State) messages.Data { d.State = string(v); return d }),
	"downstream_state": shows(func(d messages.Data, v string) messages.Data { d.State = v; return d }),
	"result_ref":       shows(func(d messages.Data, v string) messages.Data { d.ResultRef = v; return d }),
	"reason":           shows(func(d messages.Data, v string) messages.Data { d.Reason = v; return d }),
	"failure_kind": shows(func(d messages.Data, v string) messages.Data {
		d.FailureKind, d.NothingExecuted = v, operation.FailureKind(v).ProvesNothingExecuted()
		return d
	}),
	"expires_at": shows(func(d messages.Data, v string) messages.Data { d.ExpiresAt = v; return d }),
	"redis":      shows(func(d messages.Data, v string) messages.Data { d.Redis = v; return d }),
	"operation":  shows(func(d messages.Data, v stated) messages.Data { d.State = string(v.OperationState()); return d }),
	"subject":    shows(func(d messages.Data, v string) messages.Data { d.Subject = v; return d }),
	"passkey":    shows(func(d messages.Data, v approval.Passkey) messages.Data { d.Subject = v.Subject; return d }),
	"approval": shows(func(d messages.Data, v gateway.ApprovalView) messages.Data {
		d.ApprovalURL, d.ApprovalRole, d.ApprovalNeeded, d.ApprovalGiven = v.URL, v.Role, v.Needed, v.Given
		d.ApprovedBy = strings.Join(v.ApprovedBy, ", ")
		if v.State != "" {
			d.State = string(v.State)
		}
		if d.ExpiresAt == "" {
			d.ExpiresAt = v.ExpiresAt
		}
		return d
	}),
	"recent_operation": func(d messages.Data, v any) (messages.Data, bool) {
		view, ok := v.(gateway.RecentView)
		if !ok {
			return d, false
		}
		// A member the texts read must be a string when present: any other
		// type would leave its words blank.
		for _, m := range [...]struct {
			key string
			dst *string
		}{{"operation_id", &d.RecentOperationID}, {"state", &d.State}, {"result_ref", &d.ResultRef}, {"reason", &d.Reason}} {
			if x, present := view[m.key]; present {
				if *m.dst, ok = x.(string); !ok {
					return d, false
				}
			}
		}
		return d, true
	},
	"limit": shows(func(d messages.Data, v gateway.LimitView) messages.Data {
		d.LimitName, d.LimitWindow, d.LimitCurrency = v.Name, v.Window, v.Currency
		d.LimitMax, d.LimitUsed, d.LimitLeft = v.Max, v.Used, v.Left
		if v.ResetsAt != nil {
			d.LimitResetsAt = *v.ResetsAt
		}
		return d
	}),
	"decision": shows(func(d messages.Data, v gateway.DecisionView) messages.Data {
		d.DecidedBy, d.DecidedOutcome = v.Operator, string(v.Outcome)
		if !v.DecidedAt.IsZero() {
			d.DecidedAt = v.DecidedAt.UTC().Format(time.RFC3339)
		}
		return d
	}),
}

// stated is an operation's record as the texts read it: its state.
type stated interface {
	// OperationState is the operation's state.
	OperationState() operation.State
}

// shows adapts a typed filler to bodyTexts; it reports false when the
// field's value is not a T.
func shows[T any](fill func(d messages.Data, v T) messages.Data) func(d messages.Data, v any) (messages.Data, bool) {
	return func(d messages.Data, v any) (messages.Data, bool) {
		t, ok := v.(T)
		if !ok {
			return d, false
		}
		return fill(d, t), true
	}
}

// textData is the texts' data of r before the envelope's values (operation,
// scope, tools, waits): its text-only values plus those of its body fields.
// It fails when a body field's value has the wrong type for the texts.
//
// The fields fill the texts in the order of their keys (sorted): an answer
// has a few of them, far fewer than bodyTexts has entries.
func textData(r gateway.Answer) (messages.Data, error) {
	d := wordsData(r.Words)
	var room [bodyKeys]string
	keys := room[:0]
	for k := range r.Fields {
		if _, read := bodyTexts[k]; read {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := r.Fields[k]
		var ok bool
		if d, ok = bodyTexts[k](d, v); !ok {
			return d, fmt.Errorf("body field %s: unexpected %T for the texts", k, v)
		}
	}
	return d, nil
}
