package api

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/api/pages"
	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/internal/params"

	"github.com/oncegate/oncegate/status"
)

// Passkeys: an operator makes a one-time enrolment link for a subject
// (POST /v1/ops/passkeys/invites); the subject opens it (GET /enrol/{token})
// and registers a passkey (POST /enrol/{token}/options, then /finish);
// operators list and revoke passkeys and list approvals. The link's token
// is only kept as its SHA-256.

// tokenHash is the hex SHA-256 of an enrolment token.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// handleEnrolPage serves GET /enrol/:token.
func (s *Server) handleEnrolPage(c echo.Context) error {
	inv, err := s.approvals.Invite(c.Request().Context(), tokenHash(c.Param("token")), s.now())
	switch {
	case errors.Is(err, approval.ErrInviteInvalid):
		return s.pageError(c, http.StatusGone, "it is unknown, expired or used; ask an operator for a new one")
	case err != nil:
		return s.pageError(c, http.StatusServiceUnavailable, "the enrolment cannot be read right now; reload the page in a moment")
	}
	return s.page(c, http.StatusOK, func(b *bytes.Buffer) error {
		return pages.Enrolment(b, pages.Enrol{Subject: inv.Subject, Open: true,
			ExpiresISO: inv.ExpiresAt.UTC().Format(time.RFC3339), ExpiresText: inv.ExpiresAt.UTC().Format(time.RFC1123)})
	})
}

// usableInvite reads the link's invite, or the reply refusing it.
func (s *Server) usableInvite(c echo.Context) (approval.Invite, reply, bool) {
	inv, err := s.approvals.Invite(c.Request().Context(), tokenHash(c.Param("token")), s.now())
	switch {
	case errors.Is(err, approval.ErrInviteInvalid):
		s.approvalEvent(c.Request().Context(), eventCeremonyRefused, "", "", "", traceIDOf(c), "enrolment link unknown, expired or used")
		return approval.Invite{}, ceremonyRefusedReply("", "the enrolment link is unknown, expired or used", nil), false
	case err != nil:
		return approval.Invite{}, s.storeErrorReply("", "", fmt.Errorf("enrolment invite: %w", err)), false
	}
	return inv, reply{}, true
}

// handleEnrolOptions serves POST /enrol/:token/options: the creation
// options, their session kept on the invite.
func (s *Server) handleEnrolOptions(c echo.Context) error {
	ctx := c.Request().Context()
	inv, r, ok := s.usableInvite(c)
	if !ok {
		return s.render(c, r)
	}
	keys, err := s.approvals.Passkeys(ctx, inv.Subject, false)
	if err != nil {
		return s.render(c, s.storeErrorReply("", "", fmt.Errorf("passkeys of %s: %w", inv.Subject, err)))
	}
	opts, session, err := s.ceremony.BeginEnrolment(inv.Subject, keys)
	if err != nil {
		return s.render(c, internalErrorReply("", err))
	}
	switch err := s.approvals.BeginEnrolment(ctx, inv.TokenSHA256, session, s.now()); {
	case errors.Is(err, approval.ErrInviteInvalid):
		return s.render(c, ceremonyRefusedReply("", "the enrolment link is unknown, expired or used", nil))
	case err != nil:
		return s.render(c, s.storeErrorReply("", "", err))
	}
	return s.render(c, webAuthnOptionsReply("", opts))
}

// enrolFinish is the body of POST /enrol/:token/finish.
type enrolFinish struct {
	// Credential is the browser's registration response.
	Credential json.RawMessage `json:"credential"`
}

// handleEnrolFinish serves POST /enrol/:token/finish: it verifies the
// registration and stores the passkey, using the link up.
func (s *Server) handleEnrolFinish(c echo.Context) error {
	ctx := c.Request().Context()
	var req enrolFinish
	if r, ok := decodeBody(c, &req); !ok {
		return s.render(c, r)
	}
	inv, r, ok := s.usableInvite(c)
	if !ok {
		return s.render(c, r)
	}
	pk, err := s.ceremony.FinishEnrolment(inv.Subject, inv.Session, req.Credential)
	if err != nil {
		s.approvalEvent(ctx, eventCeremonyRefused, inv.Subject, "", "", traceIDOf(c), err.Error())
		return s.render(c, ceremonyRefusedReply("", "the passkey's registration does not verify: "+err.Error(), nil))
	}
	pk.EnrolTraceID = traceIDOf(c)
	switch err := s.approvals.Enrol(ctx, inv.TokenSHA256, pk, s.now()); {
	case errors.Is(err, approval.ErrInviteInvalid):
		return s.render(c, ceremonyRefusedReply("", "the enrolment link is unknown, expired or used", nil))
	case err != nil:
		return s.render(c, s.storeErrorReply("", "", err))
	}
	pk.CreatedAt = s.now().UTC()
	s.approvalEvent(ctx, eventPasskeyEnrolled, inv.Subject, "", pk.ID, traceIDOf(c), "invited by "+inv.CreatedBy)
	return s.render(c, passkeyEnrolledReply(pk))
}

// inviteRequest is the body of POST /v1/ops/passkeys/invites.
type inviteRequest struct {
	// Subject is who enrols.
	Subject string `json:"subject"`
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

// handleOpsInvite serves POST /v1/ops/passkeys/invites.
func (s *Server) handleOpsInvite(c echo.Context) error {
	ctx := c.Request().Context()
	var req inviteRequest
	if r, ok := decodeBody(c, &req); !ok {
		return s.render(c, r)
	}
	if !validSubject(req.Subject) {
		return s.render(c, invalidResolutionReply("", []params.FieldProblem{{Field: "subject", Rule: params.RuleRequired,
			Problem: "must be the subject's name: 1 to 128 printable characters, no spaces"}}, ""))
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails (Go 1.24+)
	token := base64.RawURLEncoding.EncodeToString(raw)
	expires := s.now().Add(s.cfg.EnrolmentTTL)
	by := identityOf(c).Subject
	if err := s.approvals.CreateInvite(ctx, approval.Invite{TokenSHA256: tokenHash(token), Subject: req.Subject, CreatedBy: by,
		ExpiresAt: expires, TraceID: traceIDOf(c)}); err != nil {
		return s.render(c, s.storeErrorReply("", "", err))
	}
	s.approvalEvent(ctx, eventPasskeyInvited, req.Subject, "", "", traceIDOf(c), "by "+by)
	return s.render(c, passkeyInvitedReply(req.Subject, s.cfg.PublicURL+"/enrol/"+token, expires))
}

// handleOpsPasskeys serves GET /v1/ops/passkeys?subject=&revoked=true.
func (s *Server) handleOpsPasskeys(c echo.Context) error {
	withRevoked, _ := strconv.ParseBool(c.QueryParam("revoked"))
	keys, err := s.approvals.Passkeys(c.Request().Context(), strings.TrimSpace(c.QueryParam("subject")), withRevoked)
	if err != nil {
		return s.render(c, s.storeErrorReply("", "", err))
	}
	return s.render(c, passkeysListedReply(keys))
}

// handleOpsRevoke serves POST /v1/ops/passkeys/:id/revoke.
func (s *Server) handleOpsRevoke(c echo.Context) error {
	ctx := c.Request().Context()
	by := identityOf(c).Subject
	pk, err := s.approvals.Revoke(ctx, approval.Revocation{ID: c.Param("id"), By: by, TraceID: traceIDOf(c), At: s.now()})
	switch {
	case errors.Is(err, approval.ErrNotFound):
		return s.render(c, newReply(status.UnknownPasskey))
	case errors.Is(err, approval.ErrRevoked):
		return s.render(c, passkeyRevokedReply(pk))
	case err != nil:
		return s.render(c, s.storeErrorReply("", "", err))
	}
	s.approvalEvent(ctx, eventPasskeyRevoked, pk.Subject, "", pk.ID, traceIDOf(c), "by "+by)
	return s.render(c, passkeyRevokedReply(pk))
}

// approvalStateFilters maps ?state= to approval states.
var approvalStateFilters = map[string]approval.State{
	"pending": approval.StatePending, "approved": approval.StateApproved, "declined": approval.StateDeclined,
}

// handleOpsApprovals serves GET /v1/ops/approvals?state=pending&limit=.
func (s *Server) handleOpsApprovals(c echo.Context) error {
	var state approval.State
	if q := strings.ToLower(strings.TrimSpace(c.QueryParam("state"))); q != "" {
		st, ok := approvalStateFilters[q]
		if !ok {
			return s.render(c, newReply(status.InvalidResolution).withProblems(keyInvalidFilter,
				[]params.FieldProblem{{Field: "state", Rule: params.RuleEnum, Problem: "must be one of pending, approved, declined"}}))
		}
		state = st
	}
	limit, r, ok := listLimit(c)
	if !ok {
		return s.render(c, r)
	}
	recs, err := s.approvals.Approvals(c.Request().Context(), state, limit)
	if err != nil {
		return s.render(c, s.storeErrorReply("", "", err))
	}
	return s.render(c, approvalsListedReply(recs, state))
}
