-- +goose Up
-- The reaper deletes budget reservations in bounded batches, oldest first
-- (pgstore.Store.ReapBounded); its batch select needs reserved_at alone, which
-- budget_reservation_window_idx (subject, currency, reserved_at) does not
-- lead with. write_record (write_record_reap_after_idx) and webhook_receipt
-- (webhook_receipt_received_at_idx) have theirs already.
CREATE INDEX budget_reservation_reserved_at_idx ON budget_reservation (reserved_at);

-- +goose Down
DROP INDEX budget_reservation_reserved_at_idx;
