// Package operation holds what the operation workflow (package workflows)
// and its activities (package activities) exchange: the workflow's input
// with its Ownership, the activities' inputs and answers, the application
// error types the workflow tells apart, and the pure helpers both sides
// use. It is a leaf: it imports only internal/plan, so the
// workflow calls its activities by method value (workflows imports
// activities) and internal/downstream reads the refusal's shape without
// either.
package operation

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/oncegate/oncegate/internal/plan"
)

// Input is the workflow's input: everything it needs, copied from the
// catalog and the confirm's claim at start, so a later catalog change cannot
// alter a running operation or the replay of its history. The ClaimTruth,
// Execute and Reconcile activities take it too.
type Input struct {
	// OperationID is the operation id: the workflow ID, Idempotency-Key and
	// client_reference.
	OperationID string `json:"operation_id"`
	// Subject is who the operation belongs to.
	Subject string `json:"subject"`
	// Scope is the action.
	Scope string `json:"scope"`
	// ParamHash binds the canonical params.
	ParamHash string `json:"param_hash"`
	// Ownership is who holds the claim the workflow runs under, who claims
	// the truth record and who writes the fast path. Inputs recorded
	// before it carry RecordedOwner, RecordedTruthClaimed and
	// RecordedClaimedAt instead; Resolved reads them.
	Ownership Ownership `json:"ownership,omitzero"`
	// Params is the JSON body sent downstream: normalized bound params plus free params.
	Params json.RawMessage `json:"params"`
	// BoundParams are the canonical bound params (param_hash is their
	// SHA-256), kept in the truth at claim for operators.
	BoundParams json.RawMessage `json:"bound_params,omitempty"`
	// Charge is what the operation spends of its subject's budgets; a
	// ClaimTruth (the takeover of a claim the truth never saw) reserves it,
	// or refuses the claim over budget.
	Charge *Charge `json:"charge,omitempty"`
	// FingerprintExp is the fingerprint's expiry.
	FingerprintExp time.Time `json:"fingerprint_exp"`
	// InFlightTTL is the action's in_flight_ttl.
	InFlightTTL time.Duration `json:"in_flight_ttl"`
	// TerminalTTL is the action's terminal_ttl.
	TerminalTTL time.Duration `json:"terminal_ttl"`
	// Downstream is the action's downstream, resolved by the catalog into
	// the plain values the workflow and its activities run.
	Downstream plan.Downstream `json:"downstream_plan"`
	// CatalogDownstream is the catalog's downstream configuration that
	// gateways sent before the plan existed; read only (by Resolved) to
	// replay and continue their workflows. New inputs leave it empty.
	CatalogDownstream json.RawMessage `json:"downstream,omitempty"`
	// Summary is a short human text (action and amount) for the Web UI.
	Summary string `json:"summary"`
	// ApprovalSHA256 is the hex SHA-256 of the approval evidence (a
	// person's passkey assertion) the operation runs under, when its action
	// asked for one: the history shows which approval it executed under.
	// Empty for operations that needed none (and in histories before it).
	ApprovalSHA256 string `json:"approval_sha256,omitempty"`
	// Mandate names the standing mandate the operation runs under instead
	// of a per-operation approval (nil: none): the truth's claim reserves
	// it (a takeover's workflow claims under it), and the history shows
	// which mandate and which signed statement it executed under.
	Mandate *MandateUse `json:"mandate,omitempty"`
	// ResolutionKeys are the public keys an operator's resolution token
	// must be signed with (package resolution), the gateway's at start:
	// with them, the workflow accepts a manual decision only with a valid
	// token. Empty in histories before them (any decision is accepted, as
	// it was then).
	ResolutionKeys []ResolutionKey `json:"resolution_keys,omitempty"`
	// ActingClient is the OAuth client whose confirm started the operation
	// for Subject (who acted for whom); the truth's claim keeps it. Empty
	// when the token named none (and in histories before it).
	ActingClient string `json:"acting_client,omitempty"`
	// ExecuteFinalizes, in the input of an Execute activity, asks it to
	// finalize a DONE outcome itself (truth, then fast path, under
	// Ownership) the moment the downstream answered one (its 2xx is the
	// outcome: no business_state), and to say so in
	// ExecuteResult.Finalized. The workflow sets it from
	// workflows.ChangeExecuteFinalizes on; an activity that cannot finalize
	// leaves it to the workflow.
	ExecuteFinalizes bool `json:"execute_finalizes,omitempty"`

	// RecordedOwner is the gateway claim's owner as inputs recorded before
	// Ownership carried it; read only, by Resolved. New inputs leave it empty.
	RecordedOwner string `json:"owner,omitempty"`
	// RecordedTruthClaimed is true in inputs recorded before Ownership
	// whose gateway inserted the truth record itself; read only, by Resolved.
	RecordedTruthClaimed bool `json:"truth_claimed,omitempty"`
	// RecordedClaimedAt is when the gateway's claim was taken, in inputs
	// recorded before Ownership; read only, by Resolved.
	RecordedClaimedAt time.Time `json:"claimed_at,omitzero"`
}

// CatalogPlan decodes a downstream in the catalog's JSON form, as inputs
// recorded before the plan carry it, into its plan (catalog.PlanOf).
type CatalogPlan func(json.RawMessage) (plan.Downstream, error)

// Resolved returns in as today's code reads it: with its Downstream plan
// (decoded by catalogPlan from the catalog's downstream of an input
// recorded before the plan existed) and its Ownership (from the owner,
// truth_claimed and claimed_at of an input recorded before it), and
// without the recorded fields. It is a pure function of the input, so a
// replay resolves it the same way.
func (in Input) Resolved(catalogPlan CatalogPlan) (Input, error) {
	if in.Downstream.Kind == "" && len(in.CatalogDownstream) > 0 {
		ds, err := catalogPlan(in.CatalogDownstream)
		if err != nil {
			return in, fmt.Errorf("decode the downstream of %s: %w", in.OperationID, err)
		}
		in.Downstream = ds
	}
	in.CatalogDownstream = nil
	if in.Ownership.IsZero() {
		in.Ownership = recordedOwnership(in.RecordedOwner, in.RecordedTruthClaimed, in.RecordedClaimedAt)
	}
	in.RecordedOwner, in.RecordedTruthClaimed, in.RecordedClaimedAt = "", false, time.Time{}
	return in, nil
}

// ResolutionKey is a public key that verifies resolution tokens.
type ResolutionKey struct {
	// ID names the key in a token (the receipt key's id it is derived from).
	ID string `json:"kid"`
	// PublicKey is the Ed25519 public key, ed25519.PublicKeySize bytes.
	PublicKey []byte `json:"public_key"`
}
