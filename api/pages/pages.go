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
)

//go:embed templates/*.html
var files embed.FS

var templates = template.Must(template.ParseFS(files, "templates/*.html"))

// Field is one bound param as the page shows it.
type Field struct {
	// Name is the field's name.
	Name string
	// Value is its canonical value as text (decimals with the currency's scale).
	Value string
}

// Approve is what the approval page shows.
type Approve struct {
	// Title names the action for a person.
	Title string
	// Scope is the action.
	Scope string
	// OperationID is the operation.
	OperationID string
	// Subject is whose operation it is (only their passkey decides).
	Subject string
	// Amount is the amount with its currency's decimal places, such as
	// 250.00 (empty when the action binds none).
	Amount string
	// Currency is the currency code.
	Currency string
	// Payee is the payee id.
	Payee string
	// Fields are every bound param, sorted by name.
	Fields []Field
	// Reasons say why a person must approve.
	Reasons []string
	// ExpiresISO and ExpiresText are the fingerprint's expiry, as RFC 3339
	// and for reading.
	ExpiresISO, ExpiresText string
	// State is pending, approved, declined or expired.
	State string
	// StateText says the state in words.
	StateText string
	// Open reports that a decision can still be made: the buttons and the
	// script are shown.
	Open bool
	// Fingerprint and Params are the link's signed request, posted back
	// with the decision.
	Fingerprint, Params string
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
