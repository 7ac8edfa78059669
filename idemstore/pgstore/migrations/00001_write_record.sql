-- +goose Up
-- write_record is the truth of every operation: one row per idem_key (the
-- fingerprint's nonce). A unique-key collision is never an error to the
-- caller: the existing row is read back and answered.
CREATE TABLE write_record (
    id              bigserial   PRIMARY KEY,
    idem_key        text        NOT NULL CHECK (idem_key <> ''),
    subject         text        NOT NULL DEFAULT '',
    scope           text        NOT NULL DEFAULT '',
    param_hash      text        NOT NULL,
    state           text        NOT NULL CHECK (state IN ('IN_FLIGHT', 'DONE', 'FAILED', 'NEEDS_REVIEW')),
    owner           text        NOT NULL,
    result          jsonb       NULL,
    result_ref      text        NOT NULL DEFAULT '',
    reason          text        NOT NULL DEFAULT '',
    resolved_by     text        NOT NULL DEFAULT '',
    resolution_note text        NOT NULL DEFAULT '',
    -- the fingerprint's exp: no first consumption at or after it
    fingerprint_exp timestamptz NOT NULL,
    -- how long the terminal outcome is replayed
    terminal_ttl    interval    NOT NULL,
    -- set when the record turns terminal: greatest(completed_at + terminal_ttl, fingerprint_exp)
    reap_after      timestamptz NULL,
    claimed_at      timestamptz NOT NULL DEFAULT now(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    completed_at    timestamptz NULL,
    CONSTRAINT write_record_idem_key_key UNIQUE (idem_key),
    CONSTRAINT write_record_terminal_check CHECK (
        (state IN ('DONE', 'FAILED')) = (completed_at IS NOT NULL AND reap_after IS NOT NULL))
);

CREATE INDEX write_record_state_updated_at_idx ON write_record (state, updated_at);
CREATE INDEX write_record_recent_idx ON write_record (subject, scope, param_hash, created_at DESC);
CREATE INDEX write_record_reap_after_idx ON write_record (reap_after) WHERE reap_after IS NOT NULL;

-- +goose Down
DROP TABLE write_record;
