-- +goose Up
-- A subject with many reservations in its windows (issue 43: 100k a day)
-- made every budget check slow: budget_usage numbered every reservation of
-- the window with a running sum (a sort and a WindowAgg over all of them,
-- materialized and scanned again per window), 2.2 s a call at 100k
-- reservations. Now, per window, what the window holds is one sum over a
-- covering index (an index-only scan, no sort), and when the amount would
-- fit (frees_at) walks the same index in order with the running sum and
-- stops at the first reservation whose leaving makes room (LIMIT 1): when
-- the amount fits now, that is the oldest one. The answer is the same:
-- the running sum only grows (amounts are positive), so the reservations
-- whose leaving makes room are a tail of the order, and the earliest of
-- them is the first one the walk meets. The new index leads with the old
-- one's columns and has its predicate, so it replaces it. The function no
-- longer lets PostgreSQL compile it (jit = off): its window list is a JSON
-- recordset the planner guesses at 100 rows, which priced a call above
-- jit_above_cost and spent 250 ms compiling a query that runs in less.
CREATE INDEX budget_reservation_usage_idx ON budget_reservation (subject, currency, reserved_at, operation_id)
    INCLUDE (amount, scope) WHERE released_at IS NULL;
DROP INDEX budget_reservation_window_idx;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION budget_usage(p_subject text, p_currency text, p_amount numeric, p_windows jsonb)
RETURNS TABLE (ord bigint, used numeric, frees_at timestamptz)
LANGUAGE sql STABLE SET jit = off AS $$
    WITH w AS (
        SELECT w.ord, coalesce(w.scope, '') AS scope, w.period_us, w.max,
               greatest(now() - w.period_us * interval '1 microsecond',
                        coalesce((SELECT reset_at FROM budget_reset WHERE subject = p_subject), '-infinity')) AS since
        FROM ROWS FROM (jsonb_to_recordset(p_windows) AS (scope text, period_us bigint, max numeric))
             WITH ORDINALITY AS w(scope, period_us, max, ord)
    ), u AS MATERIALIZED (
        SELECT w.ord, w.scope, w.period_us, w.max, w.since,
               coalesce((SELECT sum(r.amount) FROM budget_reservation r
                         WHERE r.subject = p_subject AND r.currency = p_currency AND r.released_at IS NULL
                           AND w.period_us > 0 AND r.reserved_at > w.since AND (w.scope = '' OR r.scope = w.scope)), 0) AS used
        FROM w
    )
    SELECT u.ord, u.used,
           CASE WHEN u.period_us = 0 OR p_amount > u.max THEN NULL
                ELSE (SELECT x.reserved_at + u.period_us * interval '1 microsecond'
                      FROM (SELECT r.reserved_at,
                                   sum(r.amount) OVER (ORDER BY r.reserved_at, r.operation_id) AS running
                            FROM budget_reservation r
                            WHERE r.subject = p_subject AND r.currency = p_currency AND r.released_at IS NULL
                              AND r.reserved_at > u.since AND (u.scope = '' OR r.scope = u.scope)
                            ORDER BY r.reserved_at, r.operation_id) x
                      WHERE u.used - x.running + p_amount <= u.max
                      LIMIT 1)
           END
    FROM u ORDER BY u.ord
$$;
-- +goose StatementEnd

-- +goose Down
CREATE INDEX budget_reservation_window_idx ON budget_reservation (subject, currency, reserved_at)
    WHERE released_at IS NULL;
DROP INDEX budget_reservation_usage_idx;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION budget_usage(p_subject text, p_currency text, p_amount numeric, p_windows jsonb)
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
