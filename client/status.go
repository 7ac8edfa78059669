package client

import "github.com/oncegate/oncegate/status"

// Status is the status of a gateway answer: the gateway's own registry's
// type (package status, whose constants name every status and whose
// registry tells each one's HTTP code and description).
type Status = status.Status

// sentinels maps each class of the registry (status.Class) to the
// sentinel error an *Error of that class matches: the client's public
// classes. A status names its class in its registry entry, so a new status
// of a known class needs nothing here; a test checks that every class the
// registry names has its sentinel.
var sentinels = map[status.Class]error{
	status.ClassSecurity:               ErrSecurity,
	status.ClassFingerprintExpired:     ErrFingerprintExpired,
	status.ClassInvalidParams:          ErrInvalidParams,
	status.ClassUnauthenticated:        ErrUnauthenticated,
	status.ClassUnknownAction:          ErrUnknownAction,
	status.ClassUnknownOperation:       ErrUnknownOperation,
	status.ClassRepeatUnacknowledged:   ErrRepeatUnacknowledged,
	status.ClassTemporarilyUnavailable: ErrTemporarilyUnavailable,
	status.ClassDownstreamRefused:      ErrDownstreamRefused,
	status.ClassBadRequest:             ErrBadRequest,
	status.ClassInternal:               ErrInternal,
	status.ClassApprovalRequired:       ErrApprovalRequired,
	status.ClassApprovalDeclined:       ErrApprovalDeclined,
	status.ClassLimitExceeded:          ErrLimitExceeded,
	status.ClassRateLimited:            ErrRateLimited,
	status.ClassManualReview:           ErrNeedsManualReview,
	status.ClassAlreadyResolved:        ErrAlreadyResolved,
	status.ClassNotAwaitingReview:      ErrNotAwaitingReview,
	status.ClassInvalidResolution:      ErrInvalidResolution,
	status.ClassUnknownPasskey:         ErrUnknownPasskey,
}

// ClassOf returns the sentinel error an answer with status s matches: the
// one of its registry entry's class (ErrSecurity for param_mismatch,
// ErrNeedsManualReview for needs_manual_review, ...), ErrUnexpectedAnswer
// for a status the registry does not have, and nil for a status without a
// class (the other operation states).
func ClassOf(s Status) error {
	info, ok := status.Lookup(s)
	if !ok {
		return ErrUnexpectedAnswer
	}
	return sentinels[info.Class]
}

// isRefusal reports whether an answer with s refuses the call: a status the
// registry calls a refusal, or one it does not know.
func isRefusal(s Status) bool {
	info, ok := status.Lookup(s)
	return !ok || info.Kind == status.Refusal
}
