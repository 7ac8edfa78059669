// Package truthfill fills the truth (pgstore's PostgreSQL tables) with
// synthetic operations by COPY (pgx CopyFrom), in the shapes finished
// operations leave: write_record rows DONE (with a result) and FAILED
// (with a reason and a failure kind), one budget reservation each (a
// FAILED one released, as Finalize releases it), an approval with one
// decision for every ApprovalEvery-th operation and a webhook receipt for
// every WebhookEvery-th. Every row satisfies its table's checks and is one
// the gateway (Get, FindRecent, Usage) and the reaper (ReapBounded) treat
// as real. It is the scale benchmark's filler (cmd/bench-scale); it is not
// used by the gateway.
package truthfill

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options are what Fill writes. Zero fields take Defaults' values.
type Options struct {
	// Rows is the number of operations (write_record rows).
	Rows int
	// Prefix starts every operation ID, so that fills do not collide.
	Prefix string
	// Subjects is how many subjects the operations are spread over, in turn.
	Subjects int
	// Scope is the action of every operation.
	Scope string
	// CompletedBefore is when the newest operation completed; the others
	// completed one Spacing apart before it.
	CompletedBefore time.Time
	// Spacing is the time between two operations' completions.
	Spacing time.Duration
	// TerminalTTL is each record's terminal_ttl: the record's reap_after is
	// its completion plus TerminalTTL, so that with CompletedBefore and
	// Spacing it decides which rows the reaper may remove.
	TerminalTTL time.Duration
	// FailedEvery makes every FailedEvery-th operation FAILED (refused by
	// the downstream), the others DONE.
	FailedEvery int
	// ApprovalEvery gives every ApprovalEvery-th operation an approval,
	// approved by one passkey.
	ApprovalEvery int
	// WebhookEvery gives every WebhookEvery-th operation a webhook receipt.
	WebhookEvery int
	// BatchRows is how many operations one COPY of each table carries.
	BatchRows int
}

// Defaults are the fill's shape unless Options say otherwise: a truth of
// one day of finished operations (kept for their terminal TTL of a day),
// over 1000 subjects, 1 in 20 FAILED, 1 in 10 approved, 1 in 10 with a
// webhook receipt.
var Defaults = Options{
	Prefix:        "fill",
	Subjects:      1000,
	Scope:         "payments.transfer",
	Spacing:       time.Millisecond,
	TerminalTTL:   24 * time.Hour,
	FailedEvery:   20,
	ApprovalEvery: 10,
	WebhookEvery:  10,
	BatchRows:     100_000,
}

func (o Options) withDefaults() Options {
	d := Defaults
	o.Prefix = cmp.Or(o.Prefix, d.Prefix)
	o.Scope = cmp.Or(o.Scope, d.Scope)
	o.CompletedBefore = cmp.Or(o.CompletedBefore, time.Now())
	o.Subjects = cmp.Or(o.Subjects, d.Subjects)
	o.Spacing = cmp.Or(o.Spacing, d.Spacing)
	o.TerminalTTL = cmp.Or(o.TerminalTTL, d.TerminalTTL)
	o.FailedEvery = cmp.Or(o.FailedEvery, d.FailedEvery)
	o.ApprovalEvery = cmp.Or(o.ApprovalEvery, d.ApprovalEvery)
	o.WebhookEvery = cmp.Or(o.WebhookEvery, d.WebhookEvery)
	o.BatchRows = cmp.Or(o.BatchRows, d.BatchRows)
	return o
}

// Counts are the rows Fill wrote, table by table.
type Counts struct {
	// Records, Reservations, Approvals, Decisions and Webhooks are the rows
	// of write_record, budget_reservation, approval, approval_decision and
	// webhook_receipt.
	Records, Reservations, Approvals, Decisions, Webhooks int64
}

// Op is the i-th operation of a fill, as Fill writes it.
type Op struct {
	// ID is the operation ID (idem_key).
	ID string
	// Subject is its subject.
	Subject string
	// Failed says it is FAILED (refused by the downstream) rather than DONE.
	Failed bool
	// Approved and Webhook say it has an approval and a webhook receipt.
	Approved, Webhook bool
	// CompletedAt is when it completed.
	CompletedAt time.Time
}

// At returns the i-th operation (0 ≤ i < Rows) of a fill with o.
func (o Options) At(i int) Op {
	o = o.withDefaults()
	return o.at(i)
}

// at is At on options with their defaults.
func (o Options) at(i int) Op {
	return Op{
		ID:          o.Prefix + "-" + strconv.Itoa(i),
		Subject:     "fill-subject-" + strconv.Itoa(i%o.Subjects),
		Failed:      i%o.FailedEvery == o.FailedEvery-1,
		Approved:    i%o.ApprovalEvery == 0,
		Webhook:     i%o.WebhookEvery == 0,
		CompletedAt: o.CompletedBefore.Add(-time.Duration(o.Rows-1-i) * o.Spacing),
	}
}

// Fill writes o.Rows operations and their reservations, approvals and
// webhook receipts, o.BatchRows operations per COPY of each table.
func Fill(ctx context.Context, pool *pgxpool.Pool, o Options) (Counts, error) {
	o = o.withDefaults()
	var c Counts
	for from := 0; from < o.Rows; from += o.BatchRows {
		to := min(from+o.BatchRows, o.Rows)
		for _, t := range tables {
			n, err := pool.CopyFrom(ctx, pgx.Identifier{t.name}, t.columns, &source{o: o, next: from, to: to, rows: t.rows})
			if err != nil {
				return c, fmt.Errorf("fill %s rows %d-%d: %w", t.name, from, to, err)
			}
			*t.count(&c) += n
		}
	}
	return c, nil
}

// table is one table Fill copies into: rows gives the rows operation op
// leaves in it (none, one or more).
type table struct {
	name    string
	columns []string
	rows    func(o Options, op Op) [][]any
	count   func(c *Counts) *int64
}

// source is a pgx.CopyFromSource over the rows a range of operations
// leaves in one table.
type source struct {
	o        Options
	next, to int
	rows     func(o Options, op Op) [][]any
	pending  [][]any
	row      []any
}

func (s *source) Next() bool {
	for len(s.pending) == 0 {
		if s.next >= s.to {
			return false
		}
		s.pending = s.rows(s.o, s.o.at(s.next))
		s.next++
	}
	s.row, s.pending = s.pending[0], s.pending[1:]
	return true
}

func (s *source) Values() ([]any, error) { return s.row, nil }

func (s *source) Err() error { return nil }

// paramHash is operation op's param_hash: 64 hex digits, one per operation.
func paramHash(op Op) string { return hexSHA("params:" + op.ID) }

// hexSHA is the SHA-256 of s in hex.
func hexSHA(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// amount is operation op's amount, in minor-unit-exact decimal text.
func amount(op Op) string { return strconv.Itoa(1+int(op.CompletedAt.UnixMilli()%500)) + ".00" }

// tables are the tables Fill copies into, in the order of their references
// (approval before approval_decision).
var tables = []table{
	{
		name: "write_record",
		columns: []string{"idem_key", "subject", "scope", "param_hash", "state", "owner", "result", "result_ref", "reason",
			"failure_kind", "bound_params", "fingerprint_exp", "terminal_ttl", "reap_after", "claimed_at", "created_at",
			"updated_at", "completed_at"},
		rows: func(o Options, op Op) [][]any {
			claimed := op.CompletedAt.Add(-40 * time.Millisecond)
			bound := fmt.Sprintf(`{"amount":%q,"currency":"EUR","payee_id":"payee-%d","reference":%q}`,
				amount(op), len(op.ID)%97, op.ID)
			state, result, reason, kind := "DONE", any(fmt.Sprintf(`{"transfer_id":"tr_%s","status":"succeeded"}`, op.ID)), "", ""
			if op.Failed {
				state, result, reason, kind = "FAILED", nil, "insufficient_funds", "downstream_refused"
			}
			return [][]any{{op.ID, op.Subject, o.Scope, paramHash(op), state, "fill-worker", result, "", reason, kind, bound,
				claimed.Add(15 * time.Minute), o.TerminalTTL, op.CompletedAt.Add(o.TerminalTTL), claimed, claimed,
				op.CompletedAt, op.CompletedAt}}
		},
		count: func(c *Counts) *int64 { return &c.Records },
	},
	{
		name:    "budget_reservation",
		columns: []string{"operation_id", "subject", "scope", "currency", "amount", "reserved_at", "released_at", "released_by"},
		rows: func(o Options, op Op) [][]any {
			reserved := op.CompletedAt.Add(-40 * time.Millisecond)
			var released any
			by := ""
			if op.Failed {
				released, by = op.CompletedAt, "downstream_refused"
			}
			return [][]any{{op.ID, op.Subject, o.Scope, "EUR", amount(op), reserved, released, by}}
		},
		count: func(c *Counts) *int64 { return &c.Reservations },
	},
	{
		name: "approval",
		columns: []string{"operation_id", "subject", "scope", "param_hash", "reasons", "expires_at", "state", "requested_at",
			"decided_at", "credential_id", "evidence", "evidence_sha256", "given"},
		rows: func(o Options, op Op) [][]any {
			if !op.Approved {
				return nil
			}
			requested := op.CompletedAt.Add(-time.Minute)
			return [][]any{{op.ID, op.Subject, o.Scope, paramHash(op), []string{"amount_over_threshold"},
				requested.Add(15 * time.Minute), "APPROVED", requested, requested.Add(30 * time.Second), "cred-" + op.Subject,
				evidence(op), evidenceSHA(op), 1}}
		},
		count: func(c *Counts) *int64 { return &c.Approvals },
	},
	{
		name:    "approval_decision",
		columns: []string{"operation_id", "approver", "state", "decided_at", "credential_id", "evidence", "evidence_sha256"},
		rows: func(o Options, op Op) [][]any {
			if !op.Approved {
				return nil
			}
			decided := op.CompletedAt.Add(-30 * time.Second)
			return [][]any{{op.ID, op.Subject, "APPROVED", decided, "cred-" + op.Subject, evidence(op), evidenceSHA(op)}}
		},
		count: func(c *Counts) *int64 { return &c.Decisions },
	},
	{
		name:    "webhook_receipt",
		columns: []string{"signature", "scope", "received_at"},
		rows: func(o Options, op Op) [][]any {
			if !op.Webhook {
				return nil
			}
			return [][]any{{"sig-" + op.ID, o.Scope, op.CompletedAt.Add(time.Second)}}
		},
		count: func(c *Counts) *int64 { return &c.Webhooks },
	},
}

// evidence is a WebAuthn assertion's shape, as an approval keeps it.
func evidence(op Op) string {
	return fmt.Sprintf(`{"credential_id":"cred-%s","client_data_json":"eyJ0eXBlIjoid2ViYXV0aG4uZ2V0In0","authenticator_data":"SZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2MFAAAAAQ","signature":"MEUCIQ%s"}`,
		op.Subject, op.ID)
}

// evidenceSHA is the SHA-256 of evidence(op), as an approval keeps it.
func evidenceSHA(op Op) string { return hexSHA(evidence(op)) }
