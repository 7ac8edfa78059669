-- +goose Up
-- sim_payout holds every payout: created pending (one row is one side
-- effect), it settles paid or failed settle_at. Its first response per
-- Idempotency-Key is kept in sim_idempotency_key like a transfer's.
CREATE TABLE sim_payout (
    id               text        PRIMARY KEY,
    idempotency_key  text        NOT NULL UNIQUE,
    client_reference text,
    amount           numeric     NOT NULL,
    currency         text        NOT NULL,
    payee_id         text        NOT NULL,
    memo             text,
    status           text        NOT NULL CHECK (status IN ('pending', 'paid', 'failed')),
    failure_reason   text,
    created_at       timestamptz NOT NULL,
    settle_at        timestamptz NOT NULL,
    settled_at       timestamptz
);
CREATE INDEX sim_payout_client_reference_idx ON sim_payout (client_reference, created_at DESC);
CREATE INDEX sim_payout_pending_idx ON sim_payout (settle_at) WHERE status = 'pending';

-- sim_webhook is a single row: where each payout's final state is POSTed,
-- and the secret it is signed with.
CREATE TABLE sim_webhook (
    id     boolean PRIMARY KEY DEFAULT true CHECK (id),
    url    text    NOT NULL,
    secret text    NOT NULL
);

ALTER TABLE sim_faults ADD COLUMN payout_settle_ms integer NOT NULL DEFAULT 0 CHECK (payout_settle_ms >= 0);

-- +goose Down
ALTER TABLE sim_faults DROP COLUMN payout_settle_ms;
DROP TABLE sim_webhook;
DROP TABLE sim_payout;
