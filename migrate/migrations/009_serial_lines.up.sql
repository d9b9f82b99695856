-- Serial keys as lines. The jobs of one serial key run one at a time, in
-- the order they became ready, each keeping its place while it waits.
--
-- A serial job joins its key's line when it first becomes ready (at
-- enqueue, or when the promoter makes a scheduled job due) and draws its
-- place, serial_seq. The job at the head of the line holds the key: it
-- alone is ready, running, or scheduled for a retry or a snooze; the rest
-- wait in state 'waiting', outside the claim index, so claimers never see
-- them. A holder that fails or snoozes keeps the key, so no job of a key
-- waits for a job of a later place. When the holder leaves the table
-- (completed, dead-lettered, cancelled, deleted), the next in line becomes
-- ready in the same transaction.
--
-- No connection is held while a serial job waits or runs: exclusion is the
-- holder index below, not a lock held through the handler.

ALTER TABLE {{schema}}.docket_jobs ADD COLUMN IF NOT EXISTS serial_seq bigint;

ALTER TABLE {{schema}}.docket_jobs DROP CONSTRAINT IF EXISTS docket_jobs_state_check;
ALTER TABLE {{schema}}.docket_jobs ADD CONSTRAINT docket_jobs_state_check
    CHECK (state IN ('scheduled', 'ready', 'running', 'waiting'));
ALTER TABLE {{schema}}.docket_jobs ADD CONSTRAINT docket_jobs_waiting_in_line
    CHECK (state <> 'waiting' OR (serial_key IS NOT NULL AND serial_seq IS NOT NULL));

-- Jobs already in the table take their place from their ready_seq; per key
-- the running job, else the first ready one, holds the key and the other
-- ready jobs wait. Scheduled jobs join when they become due.
UPDATE {{schema}}.docket_jobs SET serial_seq = ready_seq
WHERE serial_key IS NOT NULL AND state IN ('ready', 'running');

UPDATE {{schema}}.docket_jobs j SET state = 'waiting'
WHERE j.serial_seq IS NOT NULL AND j.state = 'ready' AND EXISTS (
    SELECT 1 FROM {{schema}}.docket_jobs o
    WHERE o.serial_key = j.serial_key AND o.id <> j.id
        AND (o.state = 'running' OR (o.state = 'ready' AND o.serial_seq < j.serial_seq)));

-- At most one holder per key, and the lookup "does this key have a holder".
CREATE UNIQUE INDEX IF NOT EXISTS docket_jobs_serial_holder_idx
    ON {{schema}}.docket_jobs (serial_key)
    WHERE serial_seq IS NOT NULL AND state <> 'waiting';

-- Each key's line, head first; also walked key by key by the sweep.
CREATE INDEX IF NOT EXISTS docket_jobs_serial_line_idx
    ON {{schema}}.docket_jobs (serial_key, serial_seq)
    WHERE state = 'waiting';

-- docket_serial_advance makes the head of key's line ready when the key has
-- no holder, and returns the head's queue, or null when it made none
-- ready. Holders are only ever made under the key's transaction-scoped
-- advisory lock, after the lock is taken, in a statement of their own (so
-- that, at READ COMMITTED, it sees every holder committed before): two
-- transactions can never both make one. With wait false it gives up when
-- another transaction holds the lock; that transaction decides instead.
CREATE OR REPLACE FUNCTION {{schema}}.docket_serial_advance(key text, wait boolean)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    lock_key bigint := hashtextextended('docket_serial_line:{{schema}}:' || key, 0);
    q text;
BEGIN
    IF wait THEN
        PERFORM pg_advisory_xact_lock(lock_key);
    ELSIF NOT pg_try_advisory_xact_lock(lock_key) THEN
        RETURN NULL;
    END IF;
    IF EXISTS (SELECT 1 FROM {{schema}}.docket_jobs
               WHERE serial_key = key AND serial_seq IS NOT NULL AND state <> 'waiting') THEN
        RETURN NULL;
    END IF;
    -- run_at moves to now: lag and pickup latency measure the wait for a
    -- worker, not the wait in line (created_at keeps the enqueue time).
    UPDATE {{schema}}.docket_jobs
    SET state = 'ready', ready_seq = nextval('{{schema}}.docket_jobs_id_seq'), run_at = greatest(run_at, now())
    WHERE id = (SELECT id FROM {{schema}}.docket_jobs
                WHERE serial_key = key AND state = 'waiting'
                ORDER BY serial_seq LIMIT 1)
        AND state = 'waiting'
    RETURNING queue INTO q;
    RETURN q;
END
$$;

-- docket_serial_join puts a serial job that just became ready without a
-- place (NEW: inserted ready, or a scheduled job made due) in its key's
-- line: at the end, waiting, and then makes the head ready if the key has
-- no holder. The wait for the key's lock is never taken here, in the
-- enqueuer's transaction, and neither is a holder made outside READ
-- COMMITTED, where a statement cannot see holders committed after the
-- transaction began: in those cases the job waits and the sweep (or the
-- holder leaving) moves the line on.
CREATE OR REPLACE FUNCTION {{schema}}.docket_serial_join()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    q text;
BEGIN
    UPDATE {{schema}}.docket_jobs SET state = 'waiting', serial_seq = NEW.ready_seq
    WHERE id = NEW.id AND state = 'ready' AND serial_seq IS NULL;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF current_setting('transaction_isolation') <> 'read committed' OR EXISTS (
        SELECT 1 FROM {{schema}}.docket_jobs
        WHERE serial_key = NEW.serial_key AND serial_seq IS NOT NULL AND state <> 'waiting') THEN
        RETURN NULL;
    END IF;
    q := {{schema}}.docket_serial_advance(NEW.serial_key, false);
    IF q IS NOT NULL AND q <> NEW.queue THEN
        PERFORM pg_notify('docket_' || TG_TABLE_SCHEMA, q);
    END IF;
    RETURN NULL;
END
$$;

-- docket_serial_pass hands a departed holder's key (OLD) to the next in
-- line, in the departing transaction, and announces the queue it became
-- ready in.
CREATE OR REPLACE FUNCTION {{schema}}.docket_serial_pass()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    q text;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RETURN NULL; -- the sweep moves the line on
    END IF;
    q := {{schema}}.docket_serial_advance(OLD.serial_key, true);
    IF q IS NOT NULL THEN
        PERFORM pg_notify('docket_' || TG_TABLE_SCHEMA, q);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER docket_jobs_serial_join_insert
    AFTER INSERT ON {{schema}}.docket_jobs
    FOR EACH ROW
    WHEN (NEW.serial_key IS NOT NULL AND NEW.serial_seq IS NULL AND NEW.state = 'ready')
    EXECUTE FUNCTION {{schema}}.docket_serial_join();

CREATE TRIGGER docket_jobs_serial_join_update
    AFTER UPDATE OF state ON {{schema}}.docket_jobs
    FOR EACH ROW
    WHEN (NEW.serial_key IS NOT NULL AND NEW.serial_seq IS NULL AND NEW.state = 'ready')
    EXECUTE FUNCTION {{schema}}.docket_serial_join();

CREATE TRIGGER docket_jobs_serial_pass
    AFTER DELETE ON {{schema}}.docket_jobs
    FOR EACH ROW
    WHEN (OLD.serial_seq IS NOT NULL AND OLD.state <> 'waiting')
    EXECUTE FUNCTION {{schema}}.docket_serial_pass();

-- docket_serial_sweep moves on up to lim lines that have no holder: those
-- left waiting by an enqueue outside READ COMMITTED, by a holder made in a
-- transaction that rolled back while another joined, or by a departure the
-- lock kept from passing the key on. Every worker runs it now and then at
-- READ COMMITTED; it returns the queues of the jobs it made ready.
CREATE OR REPLACE FUNCTION {{schema}}.docket_serial_sweep(lim integer)
RETURNS SETOF text
LANGUAGE plpgsql
AS $$
DECLARE
    k text;
    q text;
BEGIN
    FOR k IN
        WITH RECURSIVE keys(key) AS (
            SELECT min(serial_key) FROM {{schema}}.docket_jobs WHERE state = 'waiting'
            UNION ALL
            SELECT (SELECT min(serial_key) FROM {{schema}}.docket_jobs
                    WHERE state = 'waiting' AND serial_key > keys.key)
            FROM keys WHERE keys.key IS NOT NULL
        )
        SELECT keys.key FROM keys
        WHERE keys.key IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM {{schema}}.docket_jobs h
            WHERE h.serial_key = keys.key AND h.serial_seq IS NOT NULL AND h.state <> 'waiting')
        LIMIT lim
    LOOP
        q := {{schema}}.docket_serial_advance(k, false);
        IF q IS NOT NULL THEN
            RETURN NEXT q;
        END IF;
    END LOOP;
END
$$;

-- Lag is how long due jobs wait for a worker; a job waiting for its
-- key's holder is not waiting for a worker.
CREATE OR REPLACE VIEW {{schema}}.docket_queue_status AS
WITH live AS (
    SELECT queue,
        count(*) FILTER (WHERE state = 'ready') AS ready,
        count(*) FILTER (WHERE state = 'scheduled') AS scheduled,
        count(*) FILTER (WHERE state = 'running') AS running,
        min(run_at) FILTER (WHERE state IN ('ready', 'scheduled') AND run_at <= now()) AS oldest_due_at
    FROM {{schema}}.docket_jobs
    GROUP BY queue
), done AS (
    SELECT queue,
        count(*) FILTER (WHERE finished_at > now() - interval '1 minute') AS completed_1m,
        count(*) AS completed_1h,
        coalesce(sum(attempts - 1) FILTER (WHERE finished_at > now() - interval '1 minute'), 0) AS retries_1m,
        coalesce(sum(attempts - 1), 0) AS retries_1h
    FROM {{schema}}.docket_jobs_done
    WHERE finished_at > now() - interval '1 hour'
    GROUP BY queue
), dead AS (
    SELECT queue,
        count(*) AS dlq_size,
        count(*) FILTER (WHERE dead_at > now() - interval '1 minute') AS dead_1m,
        count(*) FILTER (WHERE dead_at > now() - interval '1 hour') AS dead_1h,
        count(*) FILTER (WHERE dead_at > now() - interval '24 hours') AS dead_24h,
        coalesce(sum(attempts - 1) FILTER (WHERE dead_at > now() - interval '1 minute'), 0) AS retries_1m,
        coalesce(sum(attempts - 1) FILTER (WHERE dead_at > now() - interval '1 hour'), 0) AS retries_1h
    FROM {{schema}}.docket_jobs_dead
    GROUP BY queue
), removed AS (
    SELECT queue, sum(n) AS removed_24h
    FROM {{schema}}.docket_dead_removed
    WHERE at > now() - interval '24 hours' AND dead_minute <= now() - interval '24 hours'
    GROUP BY queue
), names AS (
    SELECT queue FROM live
    UNION SELECT queue FROM done
    UNION SELECT queue FROM dead
    UNION SELECT name FROM {{schema}}.docket_queues
)
SELECT n.queue,
    coalesce(q.paused, false) AS paused,
    coalesce(l.ready, 0) AS ready,
    coalesce(l.scheduled, 0) AS scheduled,
    coalesce(l.running, 0) AS running,
    l.oldest_due_at,
    coalesce(extract(epoch FROM now() - l.oldest_due_at), 0)::double precision AS lag_seconds,
    coalesce(d.completed_1m, 0) AS completed_1m,
    coalesce(d.completed_1h, 0) AS completed_1h,
    (coalesce(d.retries_1m, 0) + coalesce(x.retries_1m, 0))::bigint AS retries_1m,
    (coalesce(d.retries_1h, 0) + coalesce(x.retries_1h, 0))::bigint AS retries_1h,
    coalesce(x.dead_1m, 0) AS dead_1m,
    coalesce(x.dead_1h, 0) AS dead_1h,
    coalesce(x.dlq_size, 0) AS dlq_size,
    (coalesce(x.dead_24h, 0) - coalesce(r.removed_24h, 0))::bigint AS dlq_delta_24h
FROM names n
LEFT JOIN live l ON l.queue = n.queue
LEFT JOIN done d ON d.queue = n.queue
LEFT JOIN dead x ON x.queue = n.queue
LEFT JOIN removed r ON r.queue = n.queue
LEFT JOIN {{schema}}.docket_queues q ON q.name = n.queue;
