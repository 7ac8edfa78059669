-- +goose Up
-- bound_params holds the canonical bound params of the claim (the exact
-- bytes whose SHA-256 is param_hash), so that an operator sees what an
-- operation is (amount, currency, payee) without the workflow's history,
-- which Temporal keeps for a shorter time than the truth. NULL for records
-- claimed before it was recorded.
-- resolution_evidence_url is the operator's evidence link and resolved_at
-- when the operator decided (the first decision; later ones are refused).
ALTER TABLE write_record
    ADD COLUMN bound_params jsonb NULL,
    ADD COLUMN resolution_evidence_url text NOT NULL DEFAULT '',
    ADD COLUMN resolved_at timestamptz NULL;

-- +goose Down
ALTER TABLE write_record
    DROP COLUMN bound_params,
    DROP COLUMN resolution_evidence_url,
    DROP COLUMN resolved_at;
