-- +goose Up
-- approval: one person's decision about one operation (CONTRACT §7), kept
-- in the truth, never in Redis. A row is written when a confirm answers
-- approval_required or the approval page is opened (PENDING), and decided
-- once (APPROVED or DECLINED) by a passkey assertion over the canonical
-- statement; the first decision stands. evidence is the assertion as
-- verified, evidence_sha256 its hash (carried by the workflow's input).
CREATE TABLE approval (
    operation_id    text PRIMARY KEY,
    subject         text        NOT NULL,
    scope           text        NOT NULL,
    param_hash      text        NOT NULL,
    bound_params    jsonb       NULL,
    reasons         text[]      NOT NULL DEFAULT '{}',
    expires_at      timestamptz NOT NULL,
    state           text        NOT NULL CHECK (state IN ('PENDING', 'APPROVED', 'DECLINED')),
    requested_at    timestamptz NOT NULL,
    decided_at      timestamptz NULL,
    credential_id   text        NOT NULL DEFAULT '',
    statement       jsonb       NULL,
    evidence        jsonb       NULL,
    evidence_sha256 text        NOT NULL DEFAULT '',
    trace_id        text        NOT NULL DEFAULT ''
);
CREATE INDEX approval_state_requested_idx ON approval (state, requested_at DESC);
-- The new-payee rule reads completed operations of a subject to a payee.
CREATE INDEX write_record_payee_idx ON write_record (subject, scope, (bound_params ->> 'payee_id')) WHERE state = 'DONE';

-- +goose Down
DROP INDEX write_record_payee_idx;
DROP TABLE approval;
