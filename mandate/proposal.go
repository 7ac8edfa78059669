package mandate

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"
	"golang.org/x/text/secure/precis"

	"github.com/oncegate/oncegate/internal/iso4217"
)

// Bounds of a proposal that do not depend on the deployment.
const (
	// DefaultMaxLifetime is the longest a mandate may cover (from its
	// proposal to its expires_at) when the deployment sets no maximum
	// (ONCEGATE_MANDATE_MAX_LIFETIME).
	DefaultMaxLifetime = 30 * 24 * time.Hour
	// MaxCountLimit is the largest max_count a mandate may have.
	MaxCountLimit = 10000
	// MaxPayees is the most payees a mandate may list.
	MaxPayees = 100
	// MaxIDLength bounds each action and payee id, in characters.
	MaxIDLength = 64
	// MaxDescriptionLength bounds the description, in characters.
	MaxDescriptionLength = 500
)

// identifier is PRECIS's IdentifierClass, as the catalog's kind: identifier
// checks payee ids: no control, format or invisible characters.
var identifier = precis.NewIdentifier()

// Proposal is what an agent proposes (POST /v1/mandates): every bound of
// a mandate; the subject comes from its token, never from the body.
type Proposal struct {
	// Bounds are the limits proposed.
	Bounds
	// Description is free text for the person; never authority.
	Description string `json:"description,omitempty"`
}

// Validate checks p's bounds for subject at now, with maxLifetime the
// deployment's longest mandate (DefaultMaxLifetime when not positive), and
// returns the PROPOSED mandate id would be, or an error wrapping ErrInvalid
// that names every problem. Times are kept to the second (the statement's
// precision); actions and payees are sorted and deduplicated.
func Validate(p Proposal, id, subject string, now time.Time, maxLifetime time.Duration) (Mandate, error) {
	if maxLifetime <= 0 {
		maxLifetime = DefaultMaxLifetime
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	m := Mandate{ID: id, Subject: subject, Description: p.Description, State: StateProposed, ProposedAt: now,
		Bounds: Bounds{Currency: strings.ToUpper(strings.TrimSpace(p.Currency)), MaxCount: p.MaxCount, PayeesKnown: p.PayeesKnown}}
	if subject == "" {
		bad("no subject")
	}
	m.Actions = sortedSet(p.Actions)
	if len(m.Actions) == 0 {
		bad("actions: at least one")
	}
	for _, a := range m.Actions {
		if a == "" || utf8.RuneCountInString(a) > MaxIDLength {
			bad("actions: %q is not an action name", a)
		}
	}
	if c, err := iso4217.Lookup(m.Currency); err != nil {
		bad("currency: %q is not an active ISO 4217 code", p.Currency)
	} else {
		checkAmount(bad, "max_per_operation", &p.MaxPerOperation, c.Scale)
		checkAmount(bad, "max_total", &p.MaxTotal, c.Scale)
	}
	m.MaxPerOperation.Reduce(&p.MaxPerOperation)
	m.MaxTotal.Reduce(&p.MaxTotal)
	if m.MaxPerOperation.Cmp(&m.MaxTotal) > 0 {
		bad("max_per_operation: %s is above max_total %s", DecimalText(&m.MaxPerOperation), DecimalText(&m.MaxTotal))
	}
	if p.MaxCount < 1 || p.MaxCount > MaxCountLimit {
		bad("max_count: %d is not between 1 and %d", p.MaxCount, MaxCountLimit)
	}
	switch {
	case p.PayeesKnown && len(p.Payees) > 0:
		bad("payees: a list or payees_known, not both")
	case !p.PayeesKnown && len(p.Payees) == 0:
		bad("payees: at least one, or payees_known")
	case len(p.Payees) > MaxPayees:
		bad("payees: %d, at most %d", len(p.Payees), MaxPayees)
	case !p.PayeesKnown:
		m.Payees = sortedSet(p.Payees)
	}
	for _, id := range m.Payees {
		if _, err := identifier.String(id); err != nil || utf8.RuneCountInString(id) > MaxIDLength {
			bad("payees: %q is not an identifier of at most %d characters", id, MaxIDLength)
		}
	}
	m.NotBefore = p.NotBefore
	if m.NotBefore.IsZero() {
		m.NotBefore = now
	}
	m.NotBefore, m.ExpiresAt = m.NotBefore.Truncate(time.Second).UTC(), p.ExpiresAt.Truncate(time.Second).UTC()
	switch {
	case !m.ExpiresAt.After(now):
		bad("expires_at: %s is not in the future", m.ExpiresAt.Format(time.RFC3339))
	case !m.ExpiresAt.After(m.NotBefore):
		bad("expires_at: %s is not after not_before %s", m.ExpiresAt.Format(time.RFC3339), m.NotBefore.Format(time.RFC3339))
	case m.ExpiresAt.Sub(now) > maxLifetime:
		bad("expires_at: %s is more than the deployment's maximum %s from now", m.ExpiresAt.Format(time.RFC3339), maxLifetime)
	}
	if utf8.RuneCountInString(p.Description) > MaxDescriptionLength || !utf8.ValidString(p.Description) {
		bad("description: at most %d characters of UTF-8", MaxDescriptionLength)
	}
	if len(problems) > 0 {
		return Mandate{}, fmt.Errorf("%w: %s", ErrInvalid, strings.Join(problems, "; "))
	}
	return m, nil
}

// Sane checks what every stored mandate holds whoever built it (the
// truth's table checks the same): positive maxima, max_total at least
// max_per_operation, a count of at least 1, expires_at after not_before,
// and payees listed unless PayeesKnown. An error wraps ErrInvalid. Stores
// refuse to propose a mandate that is not sane; Validate's proposals are.
func Sane(m Mandate) error {
	switch {
	case m.MaxPerOperation.Sign() <= 0 || m.MaxTotal.Cmp(&m.MaxPerOperation) < 0:
		return fmt.Errorf("%w: maxima %s per operation, %s in total", ErrInvalid, m.MaxPerOperation.Text('f'), m.MaxTotal.Text('f'))
	case m.MaxCount < 1:
		return fmt.Errorf("%w: max_count %d", ErrInvalid, m.MaxCount)
	case !m.ExpiresAt.After(m.NotBefore):
		return fmt.Errorf("%w: expires_at not after not_before", ErrInvalid)
	case !m.PayeesKnown && len(m.Payees) == 0:
		return fmt.Errorf("%w: no payees", ErrInvalid)
	}
	return nil
}

// checkAmount reports through bad unless d is positive with at most scale decimal places.
func checkAmount(bad func(string, ...any), name string, d *apd.Decimal, scale int) {
	var r apd.Decimal
	r.Reduce(d)
	switch {
	case d.Form != apd.Finite || d.Sign() <= 0:
		bad("%s: %s is not a positive amount", name, d.Text('f'))
	case -r.Exponent > int32(scale):
		bad("%s: %s has more than %d decimal places", name, d.Text('f'), scale)
	}
}

// sortedSet is ss sorted without duplicates, in a new slice.
func sortedSet(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return slices.Compact(out)
}
