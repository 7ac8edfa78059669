-- +goose Up
-- sim_transfer holds every executed transfer: one row is one side effect.
CREATE TABLE sim_transfer (
    id               text        PRIMARY KEY,
    kind             text        NOT NULL CHECK (kind IN ('idempotent', 'legacy')),
    idempotency_key  text,
    client_reference text,
    amount           numeric     NOT NULL,
    currency         text        NOT NULL,
    payee_id         text        NOT NULL,
    memo             text,
    created_at       timestamptz NOT NULL
);
CREATE INDEX sim_transfer_idempotency_key_idx ON sim_transfer (idempotency_key);
CREATE INDEX sim_transfer_client_reference_idx ON sim_transfer (client_reference, created_at DESC);

-- sim_idempotency_key holds the first response given for each Idempotency-Key
-- of POST /v1/transfers, replayed byte for byte on every repeat.
CREATE TABLE sim_idempotency_key (
    idem_key      text        PRIMARY KEY,
    request_hash  text        NOT NULL,
    status_code   integer     NOT NULL,
    response_body bytea       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- sim_faults is a single row: the fault set shared by every simulator process.
CREATE TABLE sim_faults (
    id                   boolean PRIMARY KEY DEFAULT true CHECK (id),
    latency_ms           integer NOT NULL DEFAULT 0 CHECK (latency_ms >= 0),
    fail_next            integer NOT NULL DEFAULT 0 CHECK (fail_next >= 0),
    hang_after_commit_ms integer NOT NULL DEFAULT 0 CHECK (hang_after_commit_ms >= 0),
    status_unavailable   boolean NOT NULL DEFAULT false
);
INSERT INTO sim_faults (id) VALUES (true);

-- +goose Down
DROP TABLE sim_faults;
DROP TABLE sim_idempotency_key;
DROP TABLE sim_transfer;
