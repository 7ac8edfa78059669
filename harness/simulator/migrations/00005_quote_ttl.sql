-- +goose Up
-- quote_ttl_ms: how long the quotes made now hold (0: the simulator's default, 10 minutes).
ALTER TABLE sim_faults ADD COLUMN quote_ttl_ms integer NOT NULL DEFAULT 0 CHECK (quote_ttl_ms >= 0);

-- +goose Down
ALTER TABLE sim_faults DROP COLUMN quote_ttl_ms;
