-- +goose Up
-- downstream_state is the business state the downstream last reported for
-- an operation still in flight (a payout "pending"), shown to agents and
-- operators; empty when the downstream reports none.
ALTER TABLE write_record ADD COLUMN downstream_state text NOT NULL DEFAULT '';

-- webhook_receipt remembers every webhook event accepted, by its signature,
-- so that a replayed event is refused and changes nothing.
CREATE TABLE webhook_receipt (
    signature   text        PRIMARY KEY,
    scope       text        NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_receipt_received_at_idx ON webhook_receipt (received_at);

-- +goose Down
DROP TABLE webhook_receipt;
ALTER TABLE write_record DROP COLUMN downstream_state;
