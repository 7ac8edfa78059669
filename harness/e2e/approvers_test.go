package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/harness/testenv"
)

// treasuryWire is the action of testdata/catalog.approvers.yaml: two
// different people with the role finance approve it, never the requester.
const treasuryWire = "payments.treasury_wire"

// TestApproversNamedByPolicy runs approvers named by policy
// (docs/contract.md §7b) against real Redis, PostgreSQL and Temporal with
// software authenticators, one per person: the requester cannot approve
// (even holding the role), a person without the role cannot, one person
// with two passkeys counts once, two different approvers run the
// operation exactly once under their joint evidence, and a decline by any
// approver ends it with nothing executed.
func TestApproversNamedByPolicy(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	s := startInprocWith(t, filepath.Join(root, "harness", "e2e", "testdata", "catalog.approvers.yaml"))
	alice := newApprover(s.url, inprocPublicURL)
	aliceCred := alice.enrol(t, "alice", "finance") // the requester, with the role: still never counts
	carol := newApprover(s.url, inprocPublicURL)
	carol.enrol(t, "carol", "finance")
	carol.enrol(t, "carol", "finance") // a second passkey of the same person
	dave := newApprover(s.url, inprocPublicURL)
	dave.enrol(t, "dave", "finance", "treasury")
	erin := newApprover(s.url, inprocPublicURL)
	erinCred := erin.enrol(t, "erin") // no role
	ctx := context.Background()

	preview := func(t *testing.T, payee string) (answer, map[string]any) {
		t.Helper()
		params := map[string]any{"amount": "5000.00", "currency": "USD", "payee_id": payee}
		p := s.post(t, "/v1/actions/"+treasuryWire+"/preview", map[string]any{"params": params})
		require.Equal(t, "preview_ready", p.str("status"), p.String())
		return p, params
	}
	confirm := func(t *testing.T, fp string, params map[string]any) answer {
		t.Helper()
		return s.post(t, "/v1/actions/"+treasuryWire+"/confirm", map[string]any{"fingerprint": fp, "params": params})
	}
	count := func(v map[string]any, k string) int {
		n, _ := v[k].(float64)
		return int(n)
	}

	t.Run("TwoDistinctApproversRunItOnce", func(t *testing.T) {
		p, params := preview(t, "p-treasury")
		fp, op := p.str("fingerprint"), p.str("operation_id")
		av := approvalOf(t, p)
		assert.Equal(t, 2, count(av, "needed"))
		assert.Equal(t, 0, count(av, "given"))
		assert.Equal(t, "finance", av["role"])
		assert.Equal(t, false, av["subject_may_approve"])
		assert.Contains(t, p.str("instruction"), "2 different people with the role finance")
		link, _ := av["url"].(string)

		c := confirm(t, fp, params)
		require.Equal(t, http.StatusPreconditionRequired, c.Code, c.String())
		assert.Equal(t, 0, count(approvalOf(t, c), "given"))

		// The requester holds the role, yet their passkey is not among
		// those that may decide: the page's options do not list it, and an
		// assertion by it over the very statement is refused.
		path, body := decisionBody(t, link, "approve")
		opts := call(t, http.MethodPost, s.url+path+"/options", "", body)
		require.Equal(t, "webauthn_options", opts.str("status"), opts.String())
		raw, err := json.Marshal(opts.Body["options"])
		require.NoError(t, err)
		_, err = alice.auth.Assert(raw)
		assert.Error(t, err, "alice's authenticator holds no passkey the options allow")
		st := approval.StatementOf(payloadOf(t, fp), approval.DecisionApprove)
		byAlice := alice.forge(t, link, "approve", aliceCred, st.Challenge())
		assert.Equal(t, "ceremony_refused", byAlice.str("status"), byAlice.String())
		byErin := erin.forge(t, link, "approve", erinCred, st.Challenge())
		assert.Equal(t, "ceremony_refused", byErin.str("status"), "a person without the role: %s", byErin)

		// Carol approves: one of two.
		d, _ := carol.decide(t, link, "approve")
		require.Equal(t, "approval_recorded", d.str("status"), d.String())
		dv := approvalOf(t, d)
		assert.Equal(t, "PENDING", dv["state"])
		assert.Equal(t, 1, count(dv, "given"))
		assert.Equal(t, []any{"carol"}, dv["approved_by"])
		assert.Contains(t, d.str("meaning"), "1 of the 2")
		c = confirm(t, fp, params)
		require.Equal(t, "approval_required", c.str("status"), c.String())
		assert.Equal(t, 1, count(approvalOf(t, c), "given"))
		assert.Contains(t, c.str("meaning"), "1 of 2 approved so far (carol)")
		s.noWorkflow(t, op)

		// Carol again, with her other passkey: the first decision of each
		// person stands, and she counts once.
		again, _ := carol.decide(t, link, "approve")
		assert.Equal(t, "ceremony_refused", again.str("status"), again.String())
		assert.Contains(t, again.str("reason"), "carol already decided")
		rec, err := s.truth.Approval(ctx, op)
		require.NoError(t, err)
		assert.Equal(t, approval.StatePending, rec.State)
		assert.Equal(t, 1, rec.Given)

		// Dave approves: two different people, approved.
		d, _ = dave.decide(t, link, "approve")
		require.Equal(t, "approval_recorded", d.str("status"), d.String())
		assert.Equal(t, "APPROVED", approvalOf(t, d)["state"])
		assert.Equal(t, 2, count(approvalOf(t, d), "given"))

		done := s.confirmUntilDone(t, treasuryWire, fp, params)
		require.Equal(t, "completed", done.str("status"), done.String())
		assert.Equal(t, 1, s.executions(t, op))
		rec, err = s.truth.Approval(ctx, op)
		require.NoError(t, err)
		require.Len(t, rec.Decisions, 2)
		_, joint := approval.JointEvidence(op, rec.Decisions)
		assert.Equal(t, joint, rec.EvidenceSHA256, "the approval's evidence is the approvers' joint evidence")
		assert.Equal(t, rec.EvidenceSHA256, s.workflowApproval(t, op), "the workflow runs under it")
	})

	t.Run("ADeclineByAnyApproverEndsIt", func(t *testing.T) {
		p, params := preview(t, "p-declined")
		fp, op := p.str("fingerprint"), p.str("operation_id")
		link, _ := approvalOf(t, p)["url"].(string)
		d, _ := carol.decide(t, link, "approve")
		require.Equal(t, "approval_recorded", d.str("status"), d.String())
		d, _ = dave.decide(t, link, "decline")
		require.Equal(t, "approval_recorded", d.str("status"), d.String())
		assert.Equal(t, "DECLINED", approvalOf(t, d)["state"])
		c := confirm(t, fp, params)
		assert.Equal(t, "approval_declined", c.str("status"), c.String())
		s.noWorkflow(t, op)
		assert.Equal(t, 0, s.executions(t, op))
	})
}
