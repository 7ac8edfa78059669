-- +goose Up
-- failure_kind records how a FAILED outcome is known: a definite refusal by
-- the downstream, "not executed" proved by reconciliation after the
-- downstream's processing window, a request never sent, or an operator's
-- decision. Empty for records finalized before it was recorded.
ALTER TABLE write_record ADD COLUMN failure_kind text NOT NULL DEFAULT ''
    CHECK (failure_kind IN ('', 'downstream_refused', 'not_executed', 'not_sent', 'operator_decision'));

-- +goose Down
ALTER TABLE write_record DROP COLUMN failure_kind;
