-- +goose Up
-- budget_reservation holds what each claimed operation spends of its
-- subject's budgets (ONCEGATE_LIMITS): one row per operation whose action
-- declares a spend, written by claim_operation in the claim's own
-- transaction. A reservation counts until it is released, which happens
-- only when the operation fails with a proof that nothing was executed
-- (released_by names the failure kind) or its claim is given back unstarted.
CREATE TABLE budget_reservation (
    operation_id text        PRIMARY KEY,
    subject      text        NOT NULL,
    scope        text        NOT NULL,
    currency     text        NOT NULL,
    amount       numeric     NOT NULL CHECK (amount > 0),
    reserved_at  timestamptz NOT NULL DEFAULT now(),
    released_at  timestamptz NULL,
    released_by  text        NOT NULL DEFAULT '',
    CHECK ((released_at IS NULL) = (released_by = ''))
);
CREATE INDEX budget_reservation_window_idx ON budget_reservation (subject, currency, reserved_at)
    WHERE released_at IS NULL;

-- budget_reset starts a subject's windows afresh (oncegate-ops limits
-- reset): reservations before reset_at no longer count.
CREATE TABLE budget_reset (
    subject  text        PRIMARY KEY,
    reset_at timestamptz NOT NULL,
    reset_by text        NOT NULL,
    trace_id text        NOT NULL DEFAULT ''
);

-- budget_usage is what each window of p_windows (a JSON array of
-- {"scope","period_us","max"}, in order) holds of p_subject's reservations
-- in p_currency, and when enough of them leave it for p_amount to fit
-- (NULL: never, or a per-operation window, whose period_us is 0 and which
-- holds nothing). It reads with the snapshot of the statement that calls
-- it: claim_operation calls it after taking the subject's lock.
-- +goose StatementBegin
CREATE FUNCTION budget_usage(p_subject text, p_currency text, p_amount numeric, p_windows jsonb)
RETURNS TABLE (ord bigint, used numeric, frees_at timestamptz)
LANGUAGE sql STABLE AS $$
    WITH w AS (
        SELECT w.ord, coalesce(w.scope, '') AS scope, w.period_us, w.max,
               greatest(now() - w.period_us * interval '1 microsecond',
                        coalesce((SELECT reset_at FROM budget_reset WHERE subject = p_subject), '-infinity')) AS since
        FROM ROWS FROM (jsonb_to_recordset(p_windows) AS (scope text, period_us bigint, max numeric))
             WITH ORDINALITY AS w(scope, period_us, max, ord)
    ), r AS (
        SELECT w.ord, r.reserved_at, r.operation_id, r.amount,
               sum(r.amount) OVER (PARTITION BY w.ord ORDER BY r.reserved_at, r.operation_id) AS running
        FROM w JOIN budget_reservation r
          ON r.subject = p_subject AND r.currency = p_currency AND r.released_at IS NULL
             AND w.period_us > 0 AND r.reserved_at > w.since AND (w.scope = '' OR r.scope = w.scope)
    ), u AS (
        SELECT w.ord, w.period_us, w.max, coalesce((SELECT sum(amount) FROM r WHERE r.ord = w.ord), 0) AS used
        FROM w
    )
    SELECT u.ord, u.used,
           CASE WHEN u.period_us = 0 OR p_amount > u.max THEN NULL
                ELSE (SELECT min(r.reserved_at) + u.period_us * interval '1 microsecond'
                      FROM r WHERE r.ord = u.ord AND u.used - r.running + p_amount <= u.max)
           END
    FROM u ORDER BY u.ord
$$;
-- +goose StatementEnd

-- claim_operation is the truth's claim, one statement: it inserts the
-- operation IN_FLIGHT and reserves its amount, or answers the record that
-- exists, or refuses over budget without writing anything. With windows to
-- check it first takes the subject's advisory lock (held to the end of the
-- transaction), so that each of its statements, taken after the lock with
-- a fresh snapshot (READ COMMITTED, a VOLATILE function), sees every
-- reservation committed before: two claims of one subject are checked one
-- after the other. outcome is ACQUIRED (claimed_at set), EXISTS (read the
-- record back) or LIMIT_EXCEEDED; usage is budget_usage's rows as a JSON
-- array [{"used","frees_at"}] when windows were checked.
-- +goose StatementBegin
CREATE FUNCTION claim_operation(
    p_idem_key text, p_subject text, p_scope text, p_param_hash text, p_owner text,
    p_fingerprint_exp timestamptz, p_terminal_ttl_us bigint, p_bound_params jsonb, p_approval_sha256 text,
    p_amount numeric, p_currency text, p_windows jsonb)
RETURNS TABLE (outcome text, usage jsonb, claimed_at timestamptz)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_checks boolean := p_amount IS NOT NULL AND jsonb_array_length(coalesce(p_windows, '[]')) > 0;
    v_usage  jsonb;
    v_over   boolean := false;
    v_at     timestamptz;
BEGIN
    IF v_checks THEN
        PERFORM pg_advisory_xact_lock(1919246426, hashtext(p_subject));
    END IF;
    PERFORM 1 FROM write_record WHERE idem_key = p_idem_key;
    IF FOUND THEN
        RETURN QUERY SELECT 'EXISTS'::text, NULL::jsonb, NULL::timestamptz;
        RETURN;
    END IF;
    IF v_checks THEN
        SELECT jsonb_agg(jsonb_build_object('used', u.used::text, 'frees_at', u.frees_at) ORDER BY u.ord),
               bool_or(u.used + p_amount > w.max)
          INTO v_usage, v_over
          FROM budget_usage(p_subject, p_currency, p_amount, p_windows) u
          JOIN ROWS FROM (jsonb_to_recordset(p_windows) AS (max numeric)) WITH ORDINALITY AS w(max, ord) ON w.ord = u.ord;
        IF v_over THEN
            RETURN QUERY SELECT 'LIMIT_EXCEEDED'::text, v_usage, NULL::timestamptz;
            RETURN;
        END IF;
    END IF;
    INSERT INTO write_record (idem_key, subject, scope, param_hash, state, owner, fingerprint_exp, terminal_ttl, bound_params,
                              approval_sha256)
    VALUES (p_idem_key, p_subject, p_scope, p_param_hash, 'IN_FLIGHT', p_owner, coalesce(p_fingerprint_exp, now()),
            coalesce(p_terminal_ttl_us * interval '1 microsecond', interval '0'), p_bound_params, coalesce(p_approval_sha256, ''))
    ON CONFLICT (idem_key) DO NOTHING
    RETURNING write_record.claimed_at INTO v_at;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'EXISTS'::text, NULL::jsonb, NULL::timestamptz;
        RETURN;
    END IF;
    IF p_amount IS NOT NULL THEN
        INSERT INTO budget_reservation (operation_id, subject, scope, currency, amount)
        VALUES (p_idem_key, p_subject, p_scope, p_currency, p_amount);
    END IF;
    RETURN QUERY SELECT 'ACQUIRED'::text, v_usage, v_at;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION claim_operation(text, text, text, text, text, timestamptz, bigint, jsonb, text, numeric, text, jsonb);
DROP FUNCTION budget_usage(text, text, numeric, jsonb);
DROP TABLE budget_reset;
DROP TABLE budget_reservation;
