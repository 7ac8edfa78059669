package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/mandate"
)

// The confirm's standing mandate (docs/contract.md §7c): asked only when the
// action's policy would ask a person and no usable approval is stored. The
// confirm names the mandate (mandate_id), or the gateway picks one of the
// subject's for the action and currency (pickMandate); the claim's own
// statement checks and reserves it (idemstore.Claim.Mandate), and what it
// refuses is answered as the ordinary approval_required with the reason.

// mandateFor finds the standing mandate call's operation may be confirmed
// under instead of its missing approval.
func (s *Service) mandateFor(ctx context.Context, call *confirmCall) mandateAnswer {
	if !call.action.Approval.Mandates {
		if call.req.MandateID != "" {
			return mandateAnswer{Kind: mandateRefused, Reason: mandate.ReasonNotApplicable}
		}
		return mandateAnswer{Kind: mandateNone}
	}
	use, err := mandateUseOf(call.bound)
	if err != nil {
		return mandateAnswer{Kind: mandateFailed, Err: err}
	}
	subject := call.req.Caller.Subject
	var m mandate.Mandate
	if id := call.req.MandateID; id != "" {
		m, err = s.mandates.Mandate(ctx, id)
		switch {
		case errors.Is(err, mandate.ErrNotFound) || (err == nil && m.Subject != subject):
			// Another subject's mandate is as unknown as a missing one.
			return mandateAnswer{Kind: mandateRefused, Reason: mandate.ReasonNotApplicable}
		case err != nil:
			return mandateAnswer{Kind: mandateFailed, Err: fmt.Errorf("read mandate %s: %w", id, err)}
		}
	} else {
		all, err := s.mandates.Mandates(ctx, mandate.ListFilter{Subject: subject})
		if err != nil {
			return mandateAnswer{Kind: mandateFailed, Err: fmt.Errorf("list mandates of %s: %w", subject, err)}
		}
		var ok bool
		if m, ok = pickMandate(all, subject, call.action.Scope, use.Currency, s.now()); !ok {
			return mandateAnswer{Kind: mandateNone}
		}
	}
	use.MandateID, use.StatementSHA256 = m.ID, m.StatementSHA256
	call.mandate = &use
	return mandateAnswer{Kind: mandateFound, Use: &use}
}

// pickMandate picks, among the mandates all (newest first), the one a
// confirm of subject's operation of scope in currency that names none is
// claimed under: the ACTIVE one at now expiring first; without one, the
// newest signed one that ended (revoked or expired), so that the answer
// says why it no longer covers the operation and a retry of an operation
// claimed under it is answered from its record. Proposed mandates, other
// actions and currencies are never picked; false: none.
func pickMandate(all []mandate.Mandate, subject, scope, currency string, now time.Time) (mandate.Mandate, bool) {
	var active, ended *mandate.Mandate
	for i := range all {
		m := &all[i]
		if m.Subject != subject || m.Currency != currency || !slices.Contains(m.Actions, scope) || m.SignedAt.IsZero() {
			continue
		}
		switch m.StateAt(now) {
		case mandate.StateActive:
			if now.Before(m.NotBefore) {
				continue
			}
			if active == nil || m.ExpiresAt.Before(active.ExpiresAt) {
				active = m
			}
		case mandate.StateRevoked, mandate.StateExpired:
			if ended == nil {
				ended = m
			}
		case mandate.StateProposed:
		}
	}
	switch {
	case active != nil:
		return *active, true
	case ended != nil:
		return *ended, true
	}
	return mandate.Mandate{}, false
}

// mandateUseOf is what a confirm of the bound params bp asks of a mandate:
// their amount, currency and payee (the catalog makes an action allowing
// mandates bind all three).
func mandateUseOf(bp boundParams) (mandate.Use, error) {
	amount, _, err := apd.NewFromString(fmt.Sprint(bp.normalized[catalog.ApprovalAmountField]))
	if err != nil {
		return mandate.Use{}, fmt.Errorf("mandate amount: %w", err)
	}
	return mandate.Use{Amount: *amount, Currency: fmt.Sprint(bp.normalized[catalog.ApprovalCurrencyField]),
		Payee: fmt.Sprint(bp.normalized[catalog.ApprovalPayeeField])}, nil
}

// mandateRefusalView is the approval_required answer's mandate member: the
// mandate the confirm tried and why it did not cover the operation.
type mandateRefusalView struct {
	// MandateID is the mandate tried ("" when none was found).
	MandateID string `json:"mandate_id,omitempty"`
	// Reason is one of mandate.Reasons.
	Reason approval.Reason `json:"reason"`
}

// mandateTried is the mandate call tried: the one it claimed under, else
// the one its body named.
func (call *confirmCall) mandateTried() string {
	if call.mandate != nil {
		return call.mandate.MandateID
	}
	return call.req.MandateID
}
