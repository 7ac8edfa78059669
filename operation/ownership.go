package operation

import (
	"encoding/json"
	"fmt"
	"time"
)

// TruthClaim says who claims an operation's truth record (PostgreSQL).
type TruthClaim string

const (
	// TruthClaimedByConfirm means the confirm whose claim starts the
	// workflow inserted the truth record IN_FLIGHT under the owner itself
	// (a first confirm: the single claim): the workflow takes that record as
	// its claim and never claims it again, and its Finalize writes the fast
	// path under that very claim, so the gateway does not refill it.
	TruthClaimedByConfirm TruthClaim = "confirm"
	// TruthClaimedByWorkflow means the workflow claims the truth record
	// itself with the ClaimTruth activity (insert, or read back the record
	// there): a takeover of an orphaned claim, a claim whose answer did not
	// come from the truth, and inputs recorded before the single claim. The
	// gateway that waits for the outcome refills the fast path.
	TruthClaimedByWorkflow TruthClaim = "workflow"
)

// Refiller is who writes an operation's terminal outcome to the Redis fast
// path once it is known.
type Refiller string

const (
	// RefillByWorkflow means only the workflow's Finalize writes it, under
	// the owner's claim: the gateway that waits does not refill.
	RefillByWorkflow Refiller = "workflow"
	// RefillByGateway means the gateway that waited for the outcome refills
	// it too (the store's FinalizeFast, owner-checked), since the
	// workflow may finalize the fast path under another claim.
	RefillByGateway Refiller = "gateway"
)

// Ownership is one value for who holds an operation's claim: the gateway
// claim's owner, who claims the truth record and when it was claimed, the
// truth record's owner when another gateway claim holds it, and so who
// writes the fast path. It travels in the workflow's Input and in the
// Finalize activity's input. Its fields are unexported: an Ownership is
// built by ConfirmClaim (from the claim a confirm took) or Takeover, and a
// takeover never counts the truth as claimed, whatever its caller passes.
type Ownership struct {
	owner      string
	truth      TruthClaim
	claimedAt  time.Time
	truthOwner string
}

// ConfirmClaim is the ownership of a workflow started under the claim the
// confirm of owner took: truthClaimed when the store said that the truth
// holds the record as owner's (claimed then, at claimedAt); otherwise the
// truth is left to the workflow's ClaimTruth. The gateway reads the
// store's answer (its confirm table's claimAnswerOf).
func ConfirmClaim(owner string, truthClaimed bool, claimedAt time.Time) Ownership {
	if !truthClaimed {
		return Ownership{owner: owner, truth: TruthClaimedByWorkflow}
	}
	return Ownership{owner: owner, truth: TruthClaimedByConfirm, claimedAt: claimedAt}
}

// Takeover is the ownership of a workflow started by owner after it took
// over an orphaned claim: the workflow claims the truth record itself
// (ClaimTruth), and the gateway refills the fast path.
func Takeover(owner string) Ownership {
	return Ownership{owner: owner, truth: TruthClaimedByWorkflow}
}

// recordedOwnership is the ownership an input recorded before Ownership
// meant by its owner, truth_claimed and claimed_at.
func recordedOwnership(owner string, truthClaimed bool, claimedAt time.Time) Ownership {
	if truthClaimed {
		return Ownership{owner: owner, truth: TruthClaimedByConfirm, claimedAt: claimedAt}
	}
	return Ownership{owner: owner, truth: TruthClaimedByWorkflow}
}

// Owner is the gateway claim's owner: the fast path's claim, and the
// truth's unless TruthOwner says otherwise.
func (o Ownership) Owner() string { return o.owner }

// Truth says who claims the truth record.
func (o Ownership) Truth() TruthClaim { return o.truth }

// TruthClaimed reports whether the confirm already claimed the truth
// record, so that the workflow must not claim it again.
func (o Ownership) TruthClaimed() bool { return o.truth == TruthClaimedByConfirm }

// ClaimedAt is when the truth record was claimed (by the confirm, or as the
// workflow's ClaimTruth found it); zero when unknown.
func (o Ownership) ClaimedAt() time.Time { return o.claimedAt }

// TruthOwner is the owner the truth record is finalized as: Owner, unless
// ClaimTruth found the record held by another gateway claim (two claims
// raced while Redis was failing); the fast path is then left to that
// owner's TTL and its next refill.
func (o Ownership) TruthOwner() string {
	if o.truthOwner != "" {
		return o.truthOwner
	}
	return o.owner
}

// Refiller says who writes the terminal outcome to the fast path.
func (o Ownership) Refiller() Refiller {
	if o.TruthClaimed() {
		return RefillByWorkflow
	}
	return RefillByGateway
}

// ClaimedAs is o after the workflow's ClaimTruth found the truth record held
// by truthOwner (empty: by o's owner) since claimedAt.
func (o Ownership) ClaimedAs(truthOwner string, claimedAt time.Time) Ownership {
	if truthOwner != "" && truthOwner != o.owner {
		o.truthOwner = truthOwner
	}
	o.claimedAt = claimedAt
	return o
}

// IsZero reports whether o is no ownership (the zero value): an input
// recorded before Ownership.
func (o Ownership) IsZero() bool { return o == Ownership{} }

// ownershipJSON is the JSON of an Ownership.
type ownershipJSON struct {
	Owner      string     `json:"owner"`
	Truth      TruthClaim `json:"truth"`
	ClaimedAt  time.Time  `json:"claimed_at,omitzero"`
	TruthOwner string     `json:"truth_owner,omitempty"`
}

// MarshalJSON encodes o as {"owner", "truth", "claimed_at", "truth_owner"}.
func (o Ownership) MarshalJSON() ([]byte, error) {
	return json.Marshal(ownershipJSON{Owner: o.owner, Truth: o.truth, ClaimedAt: o.claimedAt, TruthOwner: o.truthOwner})
}

// UnmarshalJSON decodes what MarshalJSON encodes; a truth claim it does not
// know is an error, never a guess.
func (o *Ownership) UnmarshalJSON(b []byte) error {
	var j ownershipJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	switch j.Truth {
	case TruthClaimedByConfirm, TruthClaimedByWorkflow:
	default:
		return fmt.Errorf("ownership: unknown truth claim %q", j.Truth)
	}
	*o = Ownership{owner: j.Owner, truth: j.Truth, claimedAt: j.ClaimedAt, truthOwner: j.TruthOwner}
	return nil
}
