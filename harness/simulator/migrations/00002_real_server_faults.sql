-- +goose Up
-- Faults that make the simulator behave like real servers: a transfer is
-- committed commit_delay_ms after it was received whether or not its caller
-- still waits; the status endpoint sees a commit only status_lag_ms after it
-- happened; fail_after_commit transfers commit, then answer 500.
ALTER TABLE sim_faults
    ADD COLUMN commit_delay_ms   integer NOT NULL DEFAULT 0 CHECK (commit_delay_ms >= 0),
    ADD COLUMN status_lag_ms     integer NOT NULL DEFAULT 0 CHECK (status_lag_ms >= 0),
    ADD COLUMN fail_after_commit integer NOT NULL DEFAULT 0 CHECK (fail_after_commit >= 0);

-- +goose Down
ALTER TABLE sim_faults DROP COLUMN commit_delay_ms, DROP COLUMN status_lag_ms, DROP COLUMN fail_after_commit;
