package api

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/api/messages"
	"github.com/oncegate/oncegate/api/pages"
	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/gateway"
)

// The pages a person opens: what the service says they show, in words and
// HTML (package pages).

// stateTexts say an approval page's state in words, by state.
var stateTexts = map[string]string{
	"pending": "Waiting for your decision.",
	"expired": "Expired: this can no longer be approved. Ask the agent for a new preview.",
}

// pagesApproval writes the approval page of v, its reasons said in words.
func pagesApproval(b *bytes.Buffer, v gateway.ApprovalPage, reasons []string) error {
	page := pages.Approve{ApprovalPage: v, Reasons: reasons, StateText: stateTexts[v.State]}
	page.ExpiresISO, page.ExpiresText = pageTime(v.ExpiresAt)
	if !v.DecidedAt.IsZero() {
		_, at := pageTime(v.DecidedAt)
		page.StateText = fmt.Sprintf("%s with a passkey at %s.", map[string]string{"approved": "Approved", "declined": "Declined"}[v.State], at)
	}
	return pages.Approval(b, page)
}

// pagesEnrolment writes the enrolment page of a usable invite.
func pagesEnrolment(b *bytes.Buffer, inv approval.Invite) error {
	page := pages.Enrol{Subject: inv.Subject, Open: true}
	page.ExpiresISO, page.ExpiresText = pageTime(inv.ExpiresAt)
	return pages.Enrolment(b, page)
}

// reasonTexts says an approval's reasons in English, one each, for the page.
func (s *Server) reasonTexts(reasons []approval.Reason) []string {
	var out []string
	for _, r := range reasons {
		out = append(out, s.reasonsText(messages.English, []approval.Reason{r}))
	}
	return out
}

// page writes an HTML page rendered by fill.
func (s *Server) page(c echo.Context, code int, fill func(*bytes.Buffer) error) error {
	var b bytes.Buffer
	if err := fill(&b); err != nil {
		s.log.ErrorContext(c.Request().Context(), "render page", "trace_id", traceIDOf(c), "err", err)
		return s.render(c, gateway.InternalErrorAnswer("", err))
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	return c.HTMLBlob(code, b.Bytes())
}

// pageError writes a page that says why the link cannot be used (a
// *gateway.PageError; any other error is a bug, answered as such).
func (s *Server) pageError(c echo.Context, err error) error {
	var pe *gateway.PageError
	if !errors.As(err, &pe) {
		return s.render(c, gateway.InternalErrorAnswer("", err))
	}
	return s.page(c, pe.Code, func(b *bytes.Buffer) error {
		return pages.Refused(b, "This link cannot be used: "+pe.Why+".")
	})
}
