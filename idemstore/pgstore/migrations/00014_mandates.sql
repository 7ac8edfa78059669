-- +goose Up
-- mandate is a standing mandate (package mandate, docs/contract.md §7c):
-- bounds a person signs once with a passkey, within which their agent's
-- confirms run without a per-operation approval. payees NULL means "payees
-- already paid". state is PROPOSED, ACTIVE or REVOKED; EXPIRED is read from
-- expires_at, never written. statement_sha256 is the SHA-256 of the
-- canonical statement of the bounds (mandate.Statement), fixed at the
-- proposal: what the passkey signs and what claims under it record.
CREATE TABLE mandate (
    id                text        PRIMARY KEY,
    subject           text        NOT NULL,
    actions           text[]      NOT NULL,
    currency          text        NOT NULL,
    max_per_operation numeric     NOT NULL CHECK (max_per_operation > 0),
    max_total         numeric     NOT NULL CHECK (max_total >= max_per_operation),
    max_count         integer     NOT NULL CHECK (max_count > 0),
    payees            text[]      NULL,
    not_before        timestamptz NOT NULL,
    expires_at        timestamptz NOT NULL CHECK (expires_at > not_before),
    description       text        NOT NULL DEFAULT '',
    statement_sha256  text        NOT NULL,
    state             text        NOT NULL CHECK (state IN ('PROPOSED', 'ACTIVE', 'REVOKED')),
    proposed_at       timestamptz NOT NULL,
    propose_trace_id  text        NOT NULL DEFAULT '',
    signed_at         timestamptz NULL,
    credential_id     text        NOT NULL DEFAULT '',
    evidence          bytea       NULL,
    evidence_sha256   text        NOT NULL DEFAULT '',
    sign_trace_id     text        NOT NULL DEFAULT '',
    revoked_at        timestamptz NULL,
    revoked_by        text        NOT NULL DEFAULT '',
    revoke_trace_id   text        NOT NULL DEFAULT ''
);
CREATE INDEX mandate_subject_idx ON mandate (subject, proposed_at);

-- mandate_reservation is what one operation claimed under a mandate holds
-- of it: its amount and one of its count, written by claim_operation in the
-- claim's transaction, released exactly when the operation's budget
-- reservation is (a failure proving nothing was executed, an operator's
-- failed, or the claim given back unstarted: then the row is deleted).
CREATE TABLE mandate_reservation (
    operation_id text        PRIMARY KEY,
    mandate_id   text        NOT NULL REFERENCES mandate (id),
    amount       numeric     NOT NULL CHECK (amount > 0),
    reserved_at  timestamptz NOT NULL DEFAULT now(),
    released_at  timestamptz NULL,
    released_by  text        NOT NULL DEFAULT '',
    CHECK ((released_at IS NULL) = (released_by = ''))
);
CREATE INDEX mandate_reservation_mandate_idx ON mandate_reservation (mandate_id) WHERE released_at IS NULL;

-- The mandate a record was claimed under, and its statement's hash.
ALTER TABLE write_record ADD COLUMN mandate_id text NULL, ADD COLUMN mandate_sha256 text NOT NULL DEFAULT '';

-- mandate_refusal is why mandate m (NULL: none of that id) does not cover
-- a claim of p_subject, p_scope for p_amount p_currency to p_payee now, or
-- NULL when it does; mandate.Check decides the same, in the same order.
-- The caller holds m's row lock, so its usage is read after every claim
-- and release committed before.
-- +goose StatementBegin
CREATE FUNCTION mandate_refusal(m mandate, p_subject text, p_scope text, p_amount numeric, p_currency text, p_payee text)
RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_used  numeric;
    v_count bigint;
BEGIN
    IF m.id IS NULL OR m.subject <> p_subject OR m.state = 'PROPOSED' OR now() < m.not_before
       OR NOT (p_scope = ANY (m.actions)) OR m.currency <> p_currency THEN
        RETURN 'mandate_not_applicable';
    END IF;
    IF m.state = 'REVOKED' THEN
        RETURN 'mandate_revoked';
    END IF;
    IF now() >= m.expires_at THEN
        RETURN 'mandate_expired';
    END IF;
    IF m.payees IS NULL THEN
        PERFORM 1 FROM write_record
          WHERE subject = p_subject AND scope = p_scope AND state = 'DONE' AND bound_params ->> 'payee_id' = p_payee;
        IF NOT FOUND THEN
            RETURN 'payee_not_in_mandate';
        END IF;
    ELSIF NOT (p_payee = ANY (m.payees)) THEN
        RETURN 'payee_not_in_mandate';
    END IF;
    SELECT coalesce(sum(amount), 0), count(*) INTO v_used, v_count
      FROM mandate_reservation WHERE mandate_id = m.id AND released_at IS NULL;
    IF p_amount > m.max_per_operation OR v_count >= m.max_count OR v_used + p_amount > m.max_total THEN
        RETURN 'mandate_exceeded';
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- claim_operation with the mandate: the claim of 00013 and, with
-- p_mandate_id, in the same statement (one transaction) before it, the
-- mandate's row locked (FOR UPDATE: claims under one mandate are decided
-- one after the other, and a revocation's commit is seen by every claim
-- after it) and checked (mandate_refusal: MANDATE_REFUSED with the reason,
-- nothing written), and after it, when it inserted the record, the
-- reservation and the mandate named on the record. A claim that finds its
-- record is answered EXISTS without a look at the mandate.
-- +goose StatementBegin
CREATE FUNCTION claim_operation(
    p_idem_key text, p_subject text, p_scope text, p_param_hash text, p_owner text,
    p_fingerprint_exp timestamptz, p_terminal_ttl_us bigint, p_bound_params jsonb, p_approval_sha256 text,
    p_amount numeric, p_currency text, p_windows jsonb, p_acting_client text,
    p_mandate_id text, p_mandate_amount numeric, p_mandate_currency text, p_mandate_payee text)
RETURNS TABLE (outcome text, usage jsonb, claimed_at timestamptz, mandate_reason text, mandate_sha256 text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    m        mandate;
    v        record;
    v_reason text;
BEGIN
    IF p_mandate_id IS NOT NULL THEN
        PERFORM 1 FROM write_record WHERE idem_key = p_idem_key;
        IF NOT FOUND THEN
            SELECT * INTO m FROM mandate WHERE id = p_mandate_id FOR UPDATE;
            v_reason := mandate_refusal(m, p_subject, p_scope, p_mandate_amount, p_mandate_currency, p_mandate_payee);
            IF v_reason IS NOT NULL THEN
                RETURN QUERY SELECT 'MANDATE_REFUSED'::text, NULL::jsonb, NULL::timestamptz, v_reason, ''::text;
                RETURN;
            END IF;
        END IF;
    END IF;
    SELECT c.outcome, c.usage, c.claimed_at INTO v
      FROM claim_operation(p_idem_key, p_subject, p_scope, p_param_hash, p_owner, p_fingerprint_exp, p_terminal_ttl_us,
                           p_bound_params, p_approval_sha256, p_amount, p_currency, p_windows, p_acting_client) AS c;
    IF v.outcome = 'ACQUIRED' AND m.id IS NOT NULL THEN
        INSERT INTO mandate_reservation (operation_id, mandate_id, amount) VALUES (p_idem_key, m.id, p_mandate_amount);
        UPDATE write_record SET mandate_id = m.id, mandate_sha256 = m.statement_sha256 WHERE idem_key = p_idem_key;
    END IF;
    RETURN QUERY SELECT v.outcome, v.usage, v.claimed_at, NULL::text, coalesce(m.statement_sha256, '');
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION claim_operation(text, text, text, text, text, timestamptz, bigint, jsonb, text, numeric, text, jsonb, text,
                              text, numeric, text, text);
DROP FUNCTION mandate_refusal(mandate, text, text, numeric, text, text);
ALTER TABLE write_record DROP COLUMN mandate_sha256, DROP COLUMN mandate_id;
DROP TABLE mandate_reservation;
DROP TABLE mandate;
