-- +goose Up
-- fast_path_epoch is one row: how many times the fast path's recent-intent
-- index may have missed a claim (a gateway claimed on the truth alone:
-- Redis down or its index node failed), and until when such claims may
-- still be made (the lease, extended by every such gateway while it runs
-- without the fast path). A recent-intent marker of another epoch, or any
-- marker while the lease runs, answers nothing for sure; the gateways hear
-- of each change at once (NOTIFY oncegate_fast_path_epoch).
CREATE TABLE fast_path_epoch (
    singleton      boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    epoch          bigint      NOT NULL DEFAULT 1,
    leased_until   timestamptz NOT NULL DEFAULT 'epoch'
);
INSERT INTO fast_path_epoch DEFAULT VALUES;

-- +goose Down
DROP TABLE fast_path_epoch;
