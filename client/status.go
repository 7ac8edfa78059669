package client

import "github.com/oncegate/oncegate/status"

// Status is the status of a gateway answer: the gateway's own registry's
// type (package status, whose constants name every status and whose
// registry tells each one's HTTP code and description).
type Status = status.Status

// classes maps each refusal an agent can receive to the sentinel error its
// *Error matches. It is the client's own knowledge (which Err* a caller
// tests for); what the statuses are, their codes and whether they are
// refusals, the client reads from the registry, and a test checks that
// every agent-facing refusal of the registry has its class here.
var classes = map[Status]error{
	status.ParamMismatch:          ErrSecurity,
	status.SubjectMismatch:        ErrSecurity,
	status.ScopeMismatch:          ErrSecurity,
	status.FingerprintInvalid:     ErrSecurity,
	status.FingerprintExpired:     ErrFingerprintExpired,
	status.InvalidParams:          ErrInvalidParams,
	status.Unauthenticated:        ErrUnauthenticated,
	status.UnknownAction:          ErrUnknownAction,
	status.RepeatUnacknowledged:   ErrRepeatUnacknowledged,
	status.TemporarilyUnavailable: ErrTemporarilyUnavailable,
	status.DownstreamRefused:      ErrDownstreamRefused,
	status.UnknownOperation:       ErrUnknownOperation,
	status.Forbidden:              ErrBadRequest,
	status.NotFound:               ErrBadRequest,
	status.MethodNotAllowed:       ErrBadRequest,
	status.MalformedRequest:       ErrBadRequest,
	status.RequestTooLarge:        ErrBadRequest,
	status.InternalError:          ErrInternal,
	status.ApprovalRequired:       ErrApprovalRequired,
	status.ApprovalDeclined:       ErrApprovalDeclined,
	status.LimitExceeded:          ErrLimitExceeded,
	status.RateLimited:            ErrRateLimited,
}

// ClassOf returns the sentinel error a refusal with status s matches
// (ErrSecurity for param_mismatch, ...), ErrNeedsManualReview for
// needs_manual_review, ErrUnexpectedAnswer for a status the registry does
// not have, and nil for the other operation states.
func ClassOf(s Status) error {
	if s == status.NeedsManualReview {
		return ErrNeedsManualReview
	}
	if class, ok := classes[s]; ok {
		return class
	}
	if !s.Known() {
		return ErrUnexpectedAnswer
	}
	return nil
}

// isRefusal reports whether an answer with s refuses the call: a status the
// registry calls a refusal, or one it does not know.
func isRefusal(s Status) bool {
	info, ok := status.Lookup(s)
	return !ok || info.Kind == status.Refusal
}
