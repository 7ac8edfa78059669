package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/internal/params"
	"github.com/oncegate/oncegate/internal/telemetry"

	"github.com/oncegate/oncegate/status"
)

// Passkeys: an operator makes a one-time enrolment link for a subject
// (Invite); the subject opens it (EnrolPage) and registers a passkey
// (EnrolOptions, then EnrolFinish); operators list and revoke passkeys
// (Passkeys, RevokePasskey) and list approvals (Approvals). The link's token
// is only kept as its SHA-256.

// tokenHash is the hex SHA-256 of an enrolment token.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// EnrolPage reads the enrolment link's invite for its page: a *PageError
// when it is unknown, expired or used, or cannot be read.
func (s *Service) EnrolPage(ctx context.Context, token string) (approval.Invite, error) {
	inv, err := s.approvals.Invite(ctx, tokenHash(token), s.now())
	switch {
	case errors.Is(err, approval.ErrInviteInvalid):
		return approval.Invite{}, &PageError{Code: http.StatusGone, Why: "it is unknown, expired or used; ask an operator for a new one"}
	case err != nil:
		return approval.Invite{}, &PageError{Code: http.StatusServiceUnavailable,
			Why: "the enrolment cannot be read right now; reload the page in a moment"}
	}
	return inv, nil
}

// usableInvite reads the link's invite, or the answer refusing it.
func (s *Service) usableInvite(ctx context.Context, token string) (approval.Invite, Answer, bool) {
	inv, err := s.approvals.Invite(ctx, tokenHash(token), s.now())
	switch {
	case errors.Is(err, approval.ErrInviteInvalid):
		s.approvalEvent(ctx, eventCeremonyRefused, "", "", "", telemetry.TraceID(ctx), "enrolment link unknown, expired or used")
		return approval.Invite{}, ceremonyRefusedAnswer("", "the enrolment link is unknown, expired or used", nil), false
	case err != nil:
		return approval.Invite{}, s.storeErrorAnswer("", "", fmt.Errorf("enrolment invite: %w", err)), false
	}
	return inv, Answer{}, true
}

// EnrolOptions answers the passkey's creation options for the enrolment
// link token, their session kept on the invite.
func (s *Service) EnrolOptions(ctx context.Context, token string) Answer {
	inv, r, ok := s.usableInvite(ctx, token)
	if !ok {
		return r
	}
	keys, err := s.approvals.Passkeys(ctx, inv.Subject, false)
	if err != nil {
		return s.storeErrorAnswer("", "", fmt.Errorf("passkeys of %s: %w", inv.Subject, err))
	}
	opts, session, err := s.ceremony.BeginEnrolment(inv.Subject, keys)
	if err != nil {
		return InternalErrorAnswer("", err)
	}
	switch err := s.approvals.BeginEnrolment(ctx, inv.TokenSHA256, session, s.now()); {
	case errors.Is(err, approval.ErrInviteInvalid):
		return ceremonyRefusedAnswer("", "the enrolment link is unknown, expired or used", nil)
	case err != nil:
		return s.storeErrorAnswer("", "", err)
	}
	return webAuthnOptionsAnswer("", opts)
}

// EnrolFinish verifies the browser's registration (credential) for the
// enrolment link token and stores the passkey, using the link up.
func (s *Service) EnrolFinish(ctx context.Context, token string, credential json.RawMessage) Answer {
	traceID := telemetry.TraceID(ctx)
	inv, r, ok := s.usableInvite(ctx, token)
	if !ok {
		return r
	}
	pk, err := s.ceremony.FinishEnrolment(inv.Subject, inv.Session, credential)
	if err != nil {
		s.approvalEvent(ctx, eventCeremonyRefused, inv.Subject, "", "", traceID, err.Error())
		return ceremonyRefusedAnswer("", "the passkey's registration does not verify: "+err.Error(), nil)
	}
	pk.EnrolTraceID, pk.Roles = traceID, inv.Roles
	switch err := s.approvals.Enrol(ctx, inv.TokenSHA256, pk, s.now()); {
	case errors.Is(err, approval.ErrInviteInvalid):
		return ceremonyRefusedAnswer("", "the enrolment link is unknown, expired or used", nil)
	case err != nil:
		return s.storeErrorAnswer("", "", err)
	}
	pk.CreatedAt = s.now().UTC()
	s.approvalEvent(ctx, eventPasskeyEnrolled, inv.Subject, "", pk.ID, traceID, "invited by "+inv.CreatedBy)
	return passkeyEnrolledAnswer(pk)
}

// validSubject reports whether s can name a subject: 1 to 128 printable
// characters without white space.
func validSubject(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// Invite makes a one-time enrolment link for req's person, whose passkey
// will have req's roles, by the operator caller.
func (s *Service) Invite(ctx context.Context, caller Caller, req InviteRequest) Answer {
	traceID := telemetry.TraceID(ctx)
	subject := req.Subject
	var problems []params.FieldProblem
	if !validSubject(subject) {
		problems = append(problems, params.FieldProblem{Field: "subject", Rule: params.RuleRequired,
			Problem: "must be the subject's name: 1 to 128 printable characters, no spaces"})
	}
	roles, problem := inviteRoles(req.Roles)
	if problem != "" {
		problems = append(problems, params.FieldProblem{Field: "roles", Rule: params.RuleType, Problem: problem})
	}
	if len(problems) > 0 {
		return invalidResolutionAnswer("", problems, "")
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails (Go 1.24+)
	token := base64.RawURLEncoding.EncodeToString(raw)
	expires := s.now().Add(s.cfg.EnrolmentTTL)
	by := caller.Subject
	if err := s.approvals.CreateInvite(ctx, approval.Invite{TokenSHA256: tokenHash(token), Subject: subject, Roles: roles,
		CreatedBy: by, ExpiresAt: expires, TraceID: traceID}); err != nil {
		return s.storeErrorAnswer("", "", err)
	}
	s.approvalEvent(ctx, eventPasskeyInvited, subject, "", "", traceID, "by "+by+" roles="+strings.Join(roles, ","))
	return passkeyInvitedAnswer(subject, roles, s.cfg.PublicURL+"/enrol/"+token, expires)
}

// inviteRoles checks an invite's roles and returns them sorted without
// repeats, or the problem with them.
func inviteRoles(roles []string) ([]string, string) {
	out := slices.Clone(roles)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > approval.MaxRoles {
		return nil, fmt.Sprintf("at most %d roles", approval.MaxRoles)
	}
	for _, r := range out {
		if !approval.ValidRole(r) {
			return nil, fmt.Sprintf("%q is not a role name (letters, digits, ., _, -; 1 to 64)", r)
		}
	}
	return out, ""
}

// Passkeys lists subject's passkeys (every subject's when empty), the
// revoked ones too when withRevoked.
func (s *Service) Passkeys(ctx context.Context, subject string, withRevoked bool) Answer {
	keys, err := s.approvals.Passkeys(ctx, strings.TrimSpace(subject), withRevoked)
	if err != nil {
		return s.storeErrorAnswer("", "", err)
	}
	return passkeysListedAnswer(keys)
}

// RevokePasskey revokes the passkey id, by the operator caller.
func (s *Service) RevokePasskey(ctx context.Context, caller Caller, id string) Answer {
	traceID := telemetry.TraceID(ctx)
	by := caller.Subject
	pk, err := s.approvals.Revoke(ctx, approval.Revocation{ID: id, By: by, TraceID: traceID, At: s.now()})
	switch {
	case errors.Is(err, approval.ErrNotFound):
		return NewAnswer(status.UnknownPasskey)
	case errors.Is(err, approval.ErrRevoked):
		return passkeyRevokedAnswer(pk)
	case err != nil:
		return s.storeErrorAnswer("", "", err)
	}
	s.approvalEvent(ctx, eventPasskeyRevoked, pk.Subject, "", pk.ID, traceID, "by "+by)
	return passkeyRevokedAnswer(pk)
}

// approvalStateFilters maps the state filter to approval states.
var approvalStateFilters = map[string]approval.State{
	"pending": approval.StatePending, "approved": approval.StateApproved, "declined": approval.StateDeclined,
}

// Approvals lists approvals by state for operators.
func (s *Service) Approvals(ctx context.Context, req ApprovalsRequest) Answer {
	state, r, ok := stateFilter(req.State, approvalStateFilters, "pending, approved, declined")
	if !ok {
		return r
	}
	limit, r, ok := listLimit(req.Limit)
	if !ok {
		return r
	}
	recs, err := s.approvals.Approvals(ctx, state, limit)
	if err != nil {
		return s.storeErrorAnswer("", "", err)
	}
	return approvalsListedAnswer(recs, state)
}
