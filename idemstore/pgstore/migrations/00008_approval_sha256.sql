-- +goose Up
-- approval_sha256 is the SHA-256 (64 lowercase hex) of the approval
-- evidence an operation was confirmed under, stored with the claim so that
-- every signed receipt of the operation names the approval it ran under.
-- Empty for an operation that needed no approval, and for records claimed
-- before it was recorded.
ALTER TABLE write_record
    ADD COLUMN approval_sha256 text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE write_record
    DROP COLUMN approval_sha256;
