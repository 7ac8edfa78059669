-- +goose Up
-- Approvers named by policy (docs/contract.md §7b): a passkey carries the
-- roles its invite named; an approval records who approves (approvers:
-- role, count, subject_may_approve; NULL: the subject alone), how many
-- have approved (given), and each person's first decision in
-- approval_decision, one row per person (the primary key: one person with
-- two passkeys counts once). The approval row's evidence is the one
-- decision's assertion, or the joint evidence of several.
ALTER TABLE passkey ADD COLUMN roles text[] NOT NULL DEFAULT '{}';
ALTER TABLE passkey_invite ADD COLUMN roles text[] NOT NULL DEFAULT '{}';
CREATE INDEX passkey_roles_idx ON passkey USING gin (roles) WHERE revoked_at IS NULL;
ALTER TABLE approval ADD COLUMN approvers jsonb NULL;
ALTER TABLE approval ADD COLUMN given int NOT NULL DEFAULT 0;
-- Approvals decided before this migration were decided by their subject alone.
UPDATE approval SET given = 1 WHERE state = 'APPROVED';
CREATE TABLE approval_decision (
    operation_id    text        NOT NULL REFERENCES approval (operation_id) ON DELETE CASCADE,
    approver        text        NOT NULL,
    state           text        NOT NULL CHECK (state IN ('APPROVED', 'DECLINED')),
    decided_at      timestamptz NOT NULL,
    credential_id   text        NOT NULL,
    evidence        jsonb       NOT NULL,
    evidence_sha256 text        NOT NULL,
    trace_id        text        NOT NULL DEFAULT '',
    PRIMARY KEY (operation_id, approver)
);
-- Decisions made before this migration: the approval row's own.
INSERT INTO approval_decision (operation_id, approver, state, decided_at, credential_id, evidence, evidence_sha256, trace_id)
SELECT operation_id, subject, state, decided_at, credential_id, evidence, evidence_sha256, trace_id
FROM approval WHERE state <> 'PENDING' AND decided_at IS NOT NULL AND evidence IS NOT NULL;

-- +goose Down
DROP TABLE approval_decision;
ALTER TABLE approval DROP COLUMN given;
ALTER TABLE approval DROP COLUMN approvers;
DROP INDEX passkey_roles_idx;
ALTER TABLE passkey_invite DROP COLUMN roles;
ALTER TABLE passkey DROP COLUMN roles;
