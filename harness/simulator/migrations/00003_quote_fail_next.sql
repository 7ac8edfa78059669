-- +goose Up
-- quote_fail_next: how many of the next POST /v1/quotes answer 503.
ALTER TABLE sim_faults ADD COLUMN quote_fail_next integer NOT NULL DEFAULT 0 CHECK (quote_fail_next >= 0);

-- +goose Down
ALTER TABLE sim_faults DROP COLUMN quote_fail_next;
