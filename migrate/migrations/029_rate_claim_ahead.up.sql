-- A rate limit's claim may take tokens before they are due. A job of a
-- rate limit started a limited claim's round trip after its token at
-- best, and when a claim stalled (a busy server) every job whose token
-- fell due meanwhile started late by up to the stall. Now the claim may
-- take the tokens due within ahead_ms (the worker asks for tens of
-- milliseconds) and says when each of those jobs' tokens is due
-- (docket.limit_ahead); the worker starts each no earlier. The bucket
-- then holds a debt: tokens below zero, repaid as they accrue. Starts
-- stay within the bucket: were each job charged when its token is due,
-- the bucket would never go below zero.
--
-- Claims of earlier versions must not read a debt as tokens: 026's claim
-- (still here for workers from before 027) granted least(budget,
-- floor(tokens)), a negative budget that paid the debt off. It now grants
-- none until the debt is repaid. Everything else is as in 026 and 027.
CREATE OR REPLACE FUNCTION {{schema}}.docket_claim_limited(
    limit_name text, queues text[], kinds text[], n integer, worker uuid, lease_ms bigint,
    range_queues text[], range_priorities smallint[], range_after bigint[], range_upto bigint[])
RETURNS SETOF {{schema}}.docket_jobs
LANGUAGE plpgsql
AS $$
DECLARE
    l {{schema}}.docket_limits;
    counts jsonb := '{}';
    keys text[];
    k text;
    q text;
    picked bigint[] := '{}';
    got bigint[];
    budget integer;
    took integer;
    have double precision;
    wait_ms bigint;
    claim bigint;
    key_held boolean;
    at timestamptz;
BEGIN
    PERFORM set_config('docket.limit_wait_ms', '', true);
    PERFORM set_config('docket.limit_seen', '', true);
    SELECT * INTO l FROM {{schema}}.docket_limits WHERE name = limit_name;
    IF NOT FOUND OR n < 1 THEN
        RETURN;
    END IF;
    IF NOT pg_try_advisory_xact_lock(hashtextextended('docket_limit:{{schema}}:' || limit_name, 0)) THEN
        PERFORM set_config('docket.limit_wait_ms', '0', true);
        RETURN;
    END IF;
    -- Every ready_seq drawn so far, read before the ranges are probed: when
    -- they hold no job of the limit, the claimer's cursors move here.
    IF NOT l.per_tenant THEN
        PERFORM set_config('docket.limit_seen',
            COALESCE(pg_sequence_last_value('{{schema}}.docket_jobs_id_seq'), 0)::text, true);
    END IF;

    IF l.max_running IS NOT NULL THEN
        SELECT COALESCE(jsonb_object_agg(key, c), '{}') INTO counts
        FROM (
            SELECT CASE WHEN l.per_tenant THEN tenant ELSE '' END AS key, count(*) AS c
            FROM {{schema}}.docket_jobs j
            WHERE state = 'running' AND (kind = l.kind OR (l.kind IS NULL
                AND (l.queue IS NULL OR queue = l.queue)
                AND NOT EXISTS (SELECT 1 FROM {{schema}}.docket_limits x WHERE x.kind = j.kind)
                AND (l.queue IS NOT NULL
                    OR NOT EXISTS (SELECT 1 FROM {{schema}}.docket_limits x WHERE x.queue = j.queue))))
            GROUP BY 1
        ) s;
    END IF;

    -- The keys: one, or each tenant with ready jobs in the queues (a skip
    -- scan of docket_jobs_tenant_idx per queue) and '' for jobs without one.
    IF l.per_tenant THEN
        SELECT array_agg(DISTINCT t) INTO keys FROM (
            SELECT (WITH RECURSIVE s(tenant) AS (
                SELECT min(tenant) FROM {{schema}}.docket_jobs
                WHERE state = 'ready' AND tenant <> '' AND queue = qq
                UNION ALL
                SELECT (SELECT min(tenant) FROM {{schema}}.docket_jobs
                    WHERE state = 'ready' AND tenant <> '' AND queue = qq AND tenant > s.tenant)
                FROM s WHERE s.tenant IS NOT NULL
            ) SELECT array_agg(tenant) FROM s WHERE tenant IS NOT NULL) AS ts
            FROM unnest(queues) AS qq
        ) per_queue, unnest(COALESCE(ts, '{}')) AS t;
        keys := COALESCE(keys, '{}') || ''::text;
    ELSE
        keys := ARRAY[''];
    END IF;

    -- A per-tenant concurrency limit takes every tenant's share in one
    -- statement, not one statement per tenant: each statement of this
    -- function is planned at each call (generic plans, blind to which
    -- branch a limit takes, are far slower), and with many tenants the
    -- planning cost more than the probes. Tenants are given their free
    -- places in key order until n is reached; a tenant that had ready jobs
    -- and no free place, or took all its free places, may have more
    -- waiting: the limit held jobs back. Jobs without a tenant are looked
    -- for after, as before.
    IF l.per_tenant AND l.rate IS NULL AND l.max_running IS NOT NULL THEN
        WITH f AS (
            SELECT t AS tk, greatest(0, l.max_running - COALESCE((counts ->> t)::integer, 0)) AS free
            FROM unnest(keys) AS t WHERE t <> ''
        ), c AS (
            SELECT tk, least(free, greatest(0, n - (sum(free) OVER (ORDER BY tk) - free)))::integer AS budget
            FROM f
        ), t AS (
            SELECT c.tk, c.budget, j.id
            FROM c CROSS JOIN LATERAL (
                SELECT x.id FROM unnest(queues) WITH ORDINALITY AS qq(name, ord)
                CROSS JOIN LATERAL (
                    SELECT id, priority, ready_seq FROM {{schema}}.docket_jobs
                    WHERE state = 'ready' AND tenant <> '' AND queue = qq.name AND tenant = c.tk AND kind = ANY(kinds)
                    ORDER BY priority DESC, ready_seq
                    LIMIT c.budget
                    FOR NO KEY UPDATE SKIP LOCKED
                ) x
                ORDER BY qq.ord, x.priority DESC, x.ready_seq
                LIMIT c.budget
            ) j
            WHERE c.budget > 0
        )
        SELECT COALESCE((SELECT array_agg(id) FROM t), '{}'),
            EXISTS (SELECT 1 FROM c WHERE c.budget = 0 OR c.budget = (SELECT count(*) FROM t WHERE t.tk = c.tk))
        INTO picked, key_held;
        IF key_held AND cardinality(picked) < n THEN
            wait_ms := 0;
        END IF;
        keys := ARRAY[''];
    END IF;

    FOREACH k IN ARRAY keys LOOP
        EXIT WHEN cardinality(picked) >= n;
        budget := n - cardinality(picked);
        IF l.max_running IS NOT NULL THEN
            -- Never below 0: a lowered limit may leave more running.
            budget := greatest(0, least(budget, l.max_running - COALESCE((counts ->> k)::integer, 0)));
        END IF;
        -- A rate limit's bucket is refilled and charged the whole budget in
        -- one write, and given back what the probe could not take: each
        -- write leaves a row version that a held vacuum horizon keeps.
        IF l.rate IS NOT NULL THEN
            -- One reading of the clock: the bucket is dated at the instant
            -- its tokens were counted up to (024 read it again for the
            -- new date, and the time between the two readings was never
            -- paid: a few percent of the rate when claims come often, more
            -- on a busy server).
            at := clock_timestamp();
            INSERT INTO {{schema}}.docket_limit_buckets (name, key, tokens, refilled_at)
            VALUES (l.name, k, l.burst, at)
            ON CONFLICT (name, key) DO NOTHING;
            WITH cur AS (
                SELECT least(l.burst::double precision, b.tokens
                    + l.rate * extract(epoch FROM at - b.refilled_at) * 1000 / l.period_ms) AS t
                FROM {{schema}}.docket_limit_buckets b
                WHERE b.name = l.name AND b.key = k
            )
            UPDATE {{schema}}.docket_limit_buckets b
            SET tokens = cur.t - greatest(0, least(budget, floor(cur.t))), refilled_at = at
            FROM cur
            WHERE b.name = l.name AND b.key = k
            RETURNING greatest(0, least(budget, floor(cur.t)))::integer, b.tokens INTO budget, have;
        END IF;

        took := 0;
        IF budget > 0 AND NOT l.per_tenant THEN
            picked := picked || ARRAY(SELECT j.id
                FROM unnest(range_queues, range_priorities, range_after, range_upto)
                    AS r(queue, priority, after, upto)
                CROSS JOIN LATERAL (
                    SELECT id FROM {{schema}}.docket_jobs
                    WHERE state = 'ready' AND queue = r.queue AND priority = r.priority
                        AND ready_seq > r.after AND ready_seq <= r.upto AND kind = ANY(kinds)
                    ORDER BY ready_seq
                    LIMIT budget
                    FOR NO KEY UPDATE SKIP LOCKED
                ) j
                LIMIT budget);
            took := cardinality(picked);
        ELSIF budget > 0 THEN
            FOREACH q IN ARRAY queues LOOP
                EXIT WHEN took >= budget;
                IF k <> '' THEN
                    got := ARRAY(SELECT id FROM {{schema}}.docket_jobs
                        WHERE state = 'ready' AND tenant <> '' AND queue = q AND tenant = k AND kind = ANY(kinds)
                        ORDER BY priority DESC, ready_seq
                        LIMIT budget - took
                        FOR NO KEY UPDATE SKIP LOCKED);
                ELSE
                    -- Jobs without a tenant are looked for among the
                    -- queue's first ready jobs of the limit's kinds: the
                    -- ones this claim took, and 4 × what this key may
                    -- still take (013: 4n, whatever the key's budget:
                    -- behind other kinds, each look stepped over ten
                    -- times as many jobs of theirs).
                    got := ARRAY(SELECT id FROM {{schema}}.docket_jobs
                        WHERE id = ANY(ARRAY(SELECT id FROM {{schema}}.docket_jobs
                                WHERE state = 'ready' AND queue = q AND kind = ANY(kinds)
                                ORDER BY priority DESC, ready_seq
                                LIMIT cardinality(picked) + 4 * (budget - took)))
                            AND state = 'ready' AND tenant = ''
                        ORDER BY priority DESC, ready_seq
                        LIMIT budget - took
                        FOR NO KEY UPDATE SKIP LOCKED);
                END IF;
                picked := picked || got;
                took := took + cardinality(got);
            END LOOP;
        END IF;

        IF l.rate IS NOT NULL AND took < budget THEN
            UPDATE {{schema}}.docket_limit_buckets SET tokens = docket_limit_buckets.tokens + (budget - took)
            WHERE name = l.name AND key = k;
            have := have + (budget - took);
        END IF;
        -- Held back: the budget ran out while the key may have more ready
        -- jobs (all it could take was taken, or it could take none).
        -- Jobs without a tenant of a per-tenant limit are only known to
        -- wait when some were taken: looking for them walks the queue.
        IF took = budget AND cardinality(picked) < n AND (budget > 0
            OR (l.per_tenant AND k <> '' AND EXISTS (
                SELECT 1 FROM {{schema}}.docket_jobs
                WHERE state = 'ready' AND tenant <> '' AND queue = ANY(queues) AND tenant = k AND kind = ANY(kinds)))
            OR (NOT l.per_tenant AND EXISTS (
                SELECT 1 FROM unnest(range_queues, range_priorities, range_after, range_upto)
                    AS r(queue, priority, after, upto)
                CROSS JOIN LATERAL (
                    SELECT 1 FROM {{schema}}.docket_jobs
                    WHERE state = 'ready' AND queue = r.queue AND priority = r.priority
                        AND ready_seq > r.after AND ready_seq <= r.upto AND kind = ANY(kinds)
                    LIMIT 1
                ) j))) THEN
            IF l.rate IS NOT NULL AND have < 1 THEN
                -- Until the next whole token: a held job starts as soon
                -- as its bucket can pay for it. The worker asks no more
                -- often than every few milliseconds (limitRateWait), so a
                -- fast rate is still taken a few jobs per claim.
                wait_ms := least(COALESCE(wait_ms, 9223372036854775807),
                    ceil((1 - have) * l.period_ms / l.rate)::bigint);
            ELSE
                wait_ms := COALESCE(wait_ms, 0);
            END IF;
        END IF;
    END LOOP;

    IF wait_ms IS NOT NULL THEN
        PERFORM set_config('docket.limit_wait_ms', wait_ms::text, true);
    END IF;
    IF cardinality(picked) = 0 THEN
        RETURN;
    END IF;
    claim := nextval('{{schema}}.docket_claims_seq');
    RETURN QUERY WITH u AS (
        UPDATE {{schema}}.docket_jobs
        SET state = 'running', attempts = attempts + 1, locked_by = worker, locked_at = now(),
            lease_until = now() + lease_ms * interval '1 millisecond', claim_id = claim
        WHERE id = ANY(picked) AND state = 'ready'
        RETURNING *
    ) SELECT * FROM u ORDER BY priority DESC, ready_seq;
END
$$;

-- 027's claim gives way to one that also takes ahead_ms, with a default:
-- workers of 027's version call it with eleven arguments and claim
-- nothing ahead.
DROP FUNCTION {{schema}}.docket_claim_limited(
    text, text[], text[], integer, uuid, bigint, text[], smallint[], bigint[], bigint[], integer);

CREATE FUNCTION {{schema}}.docket_claim_limited(
    limit_name text, queues text[], kinds text[], n integer, worker uuid, lease_ms bigint,
    range_queues text[], range_priorities smallint[], range_after bigint[], range_upto bigint[],
    jobs_per_place integer, ahead_ms integer DEFAULT 0)
RETURNS SETOF {{schema}}.docket_jobs
LANGUAGE plpgsql
AS $$
DECLARE
    l {{schema}}.docket_limits;
    counts jsonb := '{}';
    keys text[];
    k text;
    q text;
    picked bigint[] := '{}';
    got bigint[];
    budget integer;
    took integer;
    have double precision;
    wait_ms bigint;
    claim bigint;
    key_held boolean;
    at timestamptz;
    -- Of the claiming worker, per key: its running jobs, and how many of
    -- the key's places those use.
    mine jsonb := '{}';
    mine_used jsonb := '{}';
    -- The places the claiming worker holds now, per key.
    granted jsonb;
    -- A rate limit's tokens that a claim may take before they are due
    -- (ahead_ms' worth), and, per key that took some, the tokens its
    -- bucket held and the time it was refilled at.
    early_tokens double precision := 0;
    tok double precision;
    early jsonb := '{}';
BEGIN
    PERFORM set_config('docket.limit_wait_ms', '', true);
    PERFORM set_config('docket.limit_seen', '', true);
    PERFORM set_config('docket.limit_places', '', true);
    PERFORM set_config('docket.limit_ahead', '', true);
    SELECT * INTO l FROM {{schema}}.docket_limits WHERE name = limit_name;
    IF NOT FOUND OR n < 1 THEN
        RETURN;
    END IF;
    IF NOT pg_try_advisory_xact_lock(hashtextextended('docket_limit:{{schema}}:' || limit_name, 0)) THEN
        PERFORM set_config('docket.limit_wait_ms', '0', true);
        RETURN;
    END IF;
    -- Claims ahead of the tokens, for a rate limit without a concurrency
    -- cap only: a job held for its token would hold a place too.
    IF l.rate IS NOT NULL AND l.max_running IS NULL AND ahead_ms > 0 THEN
        early_tokens := l.rate::double precision * ahead_ms / l.period_ms;
    END IF;
    -- Every ready_seq drawn so far, read before the ranges are probed: when
    -- they hold no job of the limit, the claimer's cursors move here.
    IF NOT l.per_tenant THEN
        PERFORM set_config('docket.limit_seen',
            COALESCE(pg_sequence_last_value('{{schema}}.docket_jobs_id_seq'), 0)::text, true);
    END IF;

    IF l.max_running IS NOT NULL THEN
        -- A key's places in use: each worker's running jobs of the key, but
        -- no more than the places it holds of the key, if it holds any.
        SELECT COALESCE(jsonb_object_agg(key, used), '{}'),
            COALESCE(jsonb_object_agg(key, my_jobs) FILTER (WHERE my_jobs IS NOT NULL), '{}'),
            COALESCE(jsonb_object_agg(key, my_used) FILTER (WHERE my_jobs IS NOT NULL), '{}')
        INTO counts, mine, mine_used
        FROM (
            SELECT r.key, sum(least(r.c, COALESCE(p.places, r.c))) AS used,
                sum(r.c) FILTER (WHERE r.locked_by = worker) AS my_jobs,
                sum(least(r.c, COALESCE(p.places, r.c))) FILTER (WHERE r.locked_by = worker) AS my_used
            FROM (
                SELECT CASE WHEN l.per_tenant THEN tenant ELSE '' END AS key, locked_by, count(*) AS c
                FROM {{schema}}.docket_jobs j
                WHERE state = 'running' AND (kind = l.kind OR (l.kind IS NULL
                    AND (l.queue IS NULL OR queue = l.queue)
                    AND NOT EXISTS (SELECT 1 FROM {{schema}}.docket_limits x WHERE x.kind = j.kind)
                    AND (l.queue IS NOT NULL
                        OR NOT EXISTS (SELECT 1 FROM {{schema}}.docket_limits x WHERE x.queue = j.queue))))
                GROUP BY 1, 2
            ) r
            LEFT JOIN {{schema}}.docket_limit_places p ON p.name = l.name AND p.key = r.key AND p.holder = r.locked_by
            GROUP BY r.key
        ) s;
    END IF;

    -- The keys: one, or each tenant with ready jobs in the queues (a skip
    -- scan of docket_jobs_tenant_idx per queue) and '' for jobs without one.
    IF l.per_tenant THEN
        SELECT array_agg(DISTINCT t) INTO keys FROM (
            SELECT (WITH RECURSIVE s(tenant) AS (
                SELECT min(tenant) FROM {{schema}}.docket_jobs
                WHERE state = 'ready' AND tenant <> '' AND queue = qq
                UNION ALL
                SELECT (SELECT min(tenant) FROM {{schema}}.docket_jobs
                    WHERE state = 'ready' AND tenant <> '' AND queue = qq AND tenant > s.tenant)
                FROM s WHERE s.tenant IS NOT NULL
            ) SELECT array_agg(tenant) FROM s WHERE tenant IS NOT NULL) AS ts
            FROM unnest(queues) AS qq
        ) per_queue, unnest(COALESCE(ts, '{}')) AS t;
        keys := COALESCE(keys, '{}') || ''::text;
    ELSE
        keys := ARRAY[''];
    END IF;

    -- A per-tenant concurrency limit takes every tenant's share in one
    -- statement, not one statement per tenant: each statement of this
    -- function is planned at each call (generic plans, blind to which
    -- branch a limit takes, are far slower), and with many tenants the
    -- planning cost more than the probes. The worker is given, per
    -- tenant, every place the other workers do not use, and may hold
    -- jobs_per_place jobs per place: it runs at most its places' worth at
    -- once (027). Tenants are given jobs for their free places in key
    -- order, then jobs to wait for places, until n is reached; a tenant
    -- that may take no more, or took all it might, may have more waiting:
    -- the limit held jobs back. Jobs without a tenant are looked for
    -- after, as before.
    IF l.per_tenant AND l.rate IS NULL AND l.max_running IS NOT NULL THEN
        WITH p AS (
            SELECT t AS tk, greatest(0, l.max_running - COALESCE((counts ->> t)::integer, 0)
                    + COALESCE((mine_used ->> t)::integer, 0)) AS places,
                COALESCE((mine ->> t)::integer, 0) AS holding
            -- Tenants of which the worker holds jobs too, ready ones or
            -- not: it runs them within the places reported here.
            FROM (SELECT unnest(keys) UNION SELECT jsonb_object_keys(mine)) AS k(t) WHERE t <> ''
        ), f AS (
            -- What each tenant may take: first the jobs its free places
            -- run at once, then the ones to wait for them.
            SELECT tk, places, holding, greatest(0, places - holding) AS free,
                greatest(0, jobs_per_place * places - greatest(places, holding)) AS ahead
            FROM p
        ), s AS (
            SELECT tk, places, holding,
                least(free, greatest(0, n - (sum(free) OVER (ORDER BY tk) - free))) AS now,
                least(ahead, greatest(0, n - sum(free) OVER () - (sum(ahead) OVER (ORDER BY tk) - ahead))) AS later
            FROM f
        ), c AS (
            SELECT tk, places, holding, (now + later)::integer AS budget FROM s
        ), t AS (
            SELECT c.tk, c.budget, j.id
            FROM c CROSS JOIN LATERAL (
                SELECT x.id FROM unnest(queues) WITH ORDINALITY AS qq(name, ord)
                CROSS JOIN LATERAL (
                    SELECT id, priority, ready_seq FROM {{schema}}.docket_jobs
                    WHERE state = 'ready' AND tenant <> '' AND queue = qq.name AND tenant = c.tk AND kind = ANY(kinds)
                    ORDER BY priority DESC, ready_seq
                    LIMIT c.budget
                    FOR NO KEY UPDATE SKIP LOCKED
                ) x
                ORDER BY qq.ord, x.priority DESC, x.ready_seq
                LIMIT c.budget
            ) j
            WHERE c.budget > 0
        )
        SELECT COALESCE((SELECT array_agg(id) FROM t), '{}'),
            EXISTS (SELECT 1 FROM c WHERE c.budget = 0 OR c.budget = (SELECT count(*) FROM t WHERE t.tk = c.tk)),
            (SELECT COALESCE(jsonb_object_agg(c.tk, c.places), '{}') FROM c
                WHERE c.holding > 0 OR EXISTS (SELECT 1 FROM t WHERE t.tk = c.tk))
        INTO picked, key_held, granted;
        IF key_held AND cardinality(picked) < n THEN
            wait_ms := 0;
        END IF;
        INSERT INTO {{schema}}.docket_limit_places (name, key, holder, places)
        SELECT l.name, g.key, worker, g.value::integer FROM jsonb_each_text(granted) AS g
        ON CONFLICT (name, key, holder) DO UPDATE SET places = EXCLUDED.places;
        -- Holders with no running job of the key use none of its places.
        DELETE FROM {{schema}}.docket_limit_places h
        WHERE h.name = l.name AND NOT (granted ? h.key AND h.holder = worker)
            AND NOT EXISTS (SELECT 1 FROM {{schema}}.docket_jobs j
                WHERE j.state = 'running' AND j.locked_by = h.holder AND j.tenant = h.key);
        -- Numbered in the order of the limit's lock: a worker whose claims
        -- of the limit return out of order keeps the last one's places.
        PERFORM set_config('docket.limit_places', jsonb_build_object(
            'seq', nextval('{{schema}}.docket_claims_seq'), 'places', granted)::text, true);
        keys := ARRAY[''];
    END IF;

    FOREACH k IN ARRAY keys LOOP
        EXIT WHEN cardinality(picked) >= n;
        budget := n - cardinality(picked);
        IF l.max_running IS NOT NULL THEN
            -- Never below 0: a lowered limit may leave more running.
            budget := greatest(0, least(budget, l.max_running - COALESCE((counts ->> k)::integer, 0)));
        END IF;
        -- A rate limit's bucket is refilled and charged the whole budget in
        -- one write, and given back what the probe could not take: each
        -- write leaves a row version that a held vacuum horizon keeps.
        IF l.rate IS NOT NULL THEN
            -- One reading of the clock: the bucket is dated at the instant
            -- its tokens were counted up to (024 read it again for the
            -- new date, and the time between the two readings was never
            -- paid: a few percent of the rate when claims come often, more
            -- on a busy server).
            at := clock_timestamp();
            INSERT INTO {{schema}}.docket_limit_buckets (name, key, tokens, refilled_at)
            VALUES (l.name, k, l.burst, at)
            ON CONFLICT (name, key) DO NOTHING;
            WITH cur AS (
                SELECT least(l.burst::double precision, b.tokens
                    + l.rate * extract(epoch FROM at - b.refilled_at) * 1000 / l.period_ms) AS t
                FROM {{schema}}.docket_limit_buckets b
                WHERE b.name = l.name AND b.key = k
            )
            UPDATE {{schema}}.docket_limit_buckets b
            SET tokens = cur.t - greatest(0, least(budget, floor(cur.t + early_tokens))), refilled_at = at
            FROM cur
            WHERE b.name = l.name AND b.key = k
            RETURNING greatest(0, least(budget, floor(cur.t + early_tokens)))::integer, b.tokens, cur.t
                INTO budget, have, tok;
        END IF;

        took := 0;
        IF budget > 0 AND NOT l.per_tenant THEN
            picked := picked || ARRAY(SELECT j.id
                FROM unnest(range_queues, range_priorities, range_after, range_upto)
                    AS r(queue, priority, after, upto)
                CROSS JOIN LATERAL (
                    SELECT id FROM {{schema}}.docket_jobs
                    WHERE state = 'ready' AND queue = r.queue AND priority = r.priority
                        AND ready_seq > r.after AND ready_seq <= r.upto AND kind = ANY(kinds)
                    ORDER BY ready_seq
                    LIMIT budget
                    FOR NO KEY UPDATE SKIP LOCKED
                ) j
                LIMIT budget);
            took := cardinality(picked);
        ELSIF budget > 0 THEN
            FOREACH q IN ARRAY queues LOOP
                EXIT WHEN took >= budget;
                IF k <> '' THEN
                    got := ARRAY(SELECT id FROM {{schema}}.docket_jobs
                        WHERE state = 'ready' AND tenant <> '' AND queue = q AND tenant = k AND kind = ANY(kinds)
                        ORDER BY priority DESC, ready_seq
                        LIMIT budget - took
                        FOR NO KEY UPDATE SKIP LOCKED);
                ELSE
                    -- Jobs without a tenant are looked for among the
                    -- queue's first ready jobs of the limit's kinds: the
                    -- ones this claim took, and 4 × what this key may
                    -- still take (013: 4n, whatever the key's budget:
                    -- behind other kinds, each look stepped over ten
                    -- times as many jobs of theirs).
                    got := ARRAY(SELECT id FROM {{schema}}.docket_jobs
                        WHERE id = ANY(ARRAY(SELECT id FROM {{schema}}.docket_jobs
                                WHERE state = 'ready' AND queue = q AND kind = ANY(kinds)
                                ORDER BY priority DESC, ready_seq
                                LIMIT cardinality(picked) + 4 * (budget - took)))
                            AND state = 'ready' AND tenant = ''
                        ORDER BY priority DESC, ready_seq
                        LIMIT budget - took
                        FOR NO KEY UPDATE SKIP LOCKED);
                END IF;
                picked := picked || got;
                took := took + cardinality(got);
            END LOOP;
        END IF;

        IF l.rate IS NOT NULL AND took < budget THEN
            UPDATE {{schema}}.docket_limit_buckets SET tokens = docket_limit_buckets.tokens + (budget - took)
            WHERE name = l.name AND key = k;
            have := have + (budget - took);
        END IF;
        -- When the key's jobs are due: the j-th (from 1) when the bucket
        -- has accrued j - tok tokens since at, at once for j <= tok.
        IF l.rate IS NOT NULL AND took > 0 THEN
            early := early || jsonb_build_object(k, jsonb_build_array(tok, extract(epoch FROM at)));
        END IF;
        -- Held back: the budget ran out while the key may have more ready
        -- jobs (all it could take was taken, or it could take none).
        -- Jobs without a tenant of a per-tenant limit are only known to
        -- wait when some were taken: looking for them walks the queue.
        IF took = budget AND cardinality(picked) < n AND (budget > 0
            OR (l.per_tenant AND k <> '' AND EXISTS (
                SELECT 1 FROM {{schema}}.docket_jobs
                WHERE state = 'ready' AND tenant <> '' AND queue = ANY(queues) AND tenant = k AND kind = ANY(kinds)))
            OR (NOT l.per_tenant AND EXISTS (
                SELECT 1 FROM unnest(range_queues, range_priorities, range_after, range_upto)
                    AS r(queue, priority, after, upto)
                CROSS JOIN LATERAL (
                    SELECT 1 FROM {{schema}}.docket_jobs
                    WHERE state = 'ready' AND queue = r.queue AND priority = r.priority
                        AND ready_seq > r.after AND ready_seq <= r.upto AND kind = ANY(kinds)
                    LIMIT 1
                ) j))) THEN
            IF l.rate IS NOT NULL AND have + early_tokens < 1 THEN
                -- Until the next whole token: a held job starts as soon
                -- as its bucket can pay for it. The worker asks no more
                -- often than every few milliseconds (limitRateWait), so a
                -- fast rate is still taken a few jobs per claim.
                wait_ms := least(COALESCE(wait_ms, 9223372036854775807),
                    ceil((1 - have - early_tokens) * l.period_ms / l.rate)::bigint);
            ELSE
                wait_ms := COALESCE(wait_ms, 0);
            END IF;
        END IF;
    END LOOP;

    IF wait_ms IS NOT NULL THEN
        PERFORM set_config('docket.limit_wait_ms', wait_ms::text, true);
    END IF;
    IF cardinality(picked) = 0 THEN
        RETURN;
    END IF;
    claim := nextval('{{schema}}.docket_claims_seq');
    RETURN QUERY WITH u AS (
        UPDATE {{schema}}.docket_jobs
        SET state = 'running', attempts = attempts + 1, locked_by = worker, locked_at = now(),
            lease_until = now() + lease_ms * interval '1 millisecond', claim_id = claim
        WHERE id = ANY(picked) AND state = 'ready'
        RETURNING *
    ) SELECT * FROM u ORDER BY priority DESC, ready_seq;
    -- When the jobs a rate limit granted are due: each key's tokens in
    -- hand and how long ago, read now, it held them (the claimer counts
    -- from the claim's return, later than now: it never starts one early).
    IF early <> '{}' THEN
        PERFORM set_config('docket.limit_ahead', jsonb_build_object(
            'token_ms', l.period_ms::double precision / l.rate,
            'keys', (SELECT jsonb_object_agg(e.key, jsonb_build_array(e.value -> 0,
                    (extract(epoch FROM clock_timestamp()) - (e.value ->> 1)::double precision) * 1000))
                FROM jsonb_each(early) AS e))::text, true);
    END IF;
END
$$;
