// Package pages renders the two pages a person uses, server-side with
// html/template, styles inline and the least JavaScript WebAuthn needs
// (navigator.credentials, no framework): the approval page, which shows
// exactly what an operation will do from its bound canonical params (never
// from free text) and lets the subject approve or decline it with a
// passkey, and the enrolment page, which registers a passkey.
package pages

import (
	"embed"
	"fmt"
	"html/template"
	"io"

	"github.com/oncegate/oncegate/gateway"
)

//go:embed templates/*.html
var files embed.FS

var templates = template.Must(template.ParseFS(files, "templates/*.html"))

// Approve is what the approval page shows: the operation as the service
// read it from the approval link (gateway.ApprovalPage: the bound values,
// never free text) and the words a person reads.
type Approve struct {
	gateway.ApprovalPage
	// Reasons say why a person must approve, in words.
	Reasons []string
	// ExpiresISO and ExpiresText are the fingerprint's expiry, as RFC 3339
	// and for reading.
	ExpiresISO, ExpiresText string
	// StateText says the state in words.
	StateText string
}

// Enrol is what the enrolment page shows.
type Enrol struct {
	// Subject enrols a passkey.
	Subject string
	// ExpiresISO and ExpiresText are the link's expiry.
	ExpiresISO, ExpiresText string
	// Open reports that the link can still be used.
	Open bool
	// Message says why it cannot.
	Message string
}

// Approval writes the approval page.
func Approval(w io.Writer, a Approve) error { return render(w, "approve", a) }

// Refused writes the page of a link that cannot be used, saying why.
func Refused(w io.Writer, message string) error {
	return render(w, "refused", struct{ Message string }{message})
}

// Enrolment writes the enrolment page.
func Enrolment(w io.Writer, e Enrol) error { return render(w, "enrol", e) }

func render(w io.Writer, name string, data any) error {
	if err := templates.ExecuteTemplate(w, name, data); err != nil {
		return fmt.Errorf("render page %s: %w", name, err)
	}
	return nil
}
