-- +goose Up
-- acting_client is the OAuth client (the token's client claim: client_id,
-- else azp, or the configured ONCEGATE_OIDC_CLIENT_CLAIM) whose confirm
-- claimed the operation for its subject: who acted for whom
-- (docs/contract.md, identity). NULL when the token named none, and for
-- records claimed before it was recorded. It is identity metadata, set
-- once with the claim: a replay by another client changes nothing.
ALTER TABLE write_record ADD COLUMN acting_client text NULL;

-- claim_operation with a thirteenth argument, the acting client: the claim
-- of 00010 and, when it inserted the record, the client written on it, in
-- the one statement (one transaction) of the claim.
-- +goose StatementBegin
CREATE FUNCTION claim_operation(
    p_idem_key text, p_subject text, p_scope text, p_param_hash text, p_owner text,
    p_fingerprint_exp timestamptz, p_terminal_ttl_us bigint, p_bound_params jsonb, p_approval_sha256 text,
    p_amount numeric, p_currency text, p_windows jsonb, p_acting_client text)
RETURNS TABLE (outcome text, usage jsonb, claimed_at timestamptz)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v record;
BEGIN
    SELECT c.outcome, c.usage, c.claimed_at INTO v
      FROM claim_operation(p_idem_key, p_subject, p_scope, p_param_hash, p_owner, p_fingerprint_exp, p_terminal_ttl_us,
                           p_bound_params, p_approval_sha256, p_amount, p_currency, p_windows) AS c;
    IF v.outcome = 'ACQUIRED' AND p_acting_client IS NOT NULL THEN
        UPDATE write_record SET acting_client = p_acting_client WHERE idem_key = p_idem_key;
    END IF;
    RETURN QUERY SELECT v.outcome, v.usage, v.claimed_at;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION claim_operation(text, text, text, text, text, timestamptz, bigint, jsonb, text, numeric, text, jsonb, text);
ALTER TABLE write_record DROP COLUMN acting_client;
