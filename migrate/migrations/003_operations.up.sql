-- Operations: paused queues, the registry of live worker processes, and the
-- status views an operator reads with psql (docs/operations.md). The views
-- stay cheap on big tables: history is counted over finished_at ranges
-- (partition pruning plus a covering index), the dead-letter table over its
-- dead_at index, and the live table in one pass (it holds in-flight work only).

-- Paused queues are left out of every claim; workers re-read this table at
-- least once per poll interval.
CREATE TABLE IF NOT EXISTS {{schema}}.docket_queues (
    name      text        PRIMARY KEY,
    paused    boolean     NOT NULL DEFAULT false,
    paused_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- One row per running worker process, upserted at start and on every
-- heartbeat interval, deleted on Stop. A row whose expires_at passed belongs
-- to a process that died without saying so. Claim latency percentiles are
-- the process's own measurements over its recent claims.
CREATE TABLE IF NOT EXISTS {{schema}}.docket_workers (
    id           uuid        PRIMARY KEY,
    host         text        NOT NULL,
    pid          integer     NOT NULL,
    kinds        text[]      NOT NULL,
    queues       text[]      NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    last_seen    timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    claims       bigint      NOT NULL DEFAULT 0,
    claim_p50_ms double precision,
    claim_p95_ms double precision,
    claim_p99_ms double precision
);

-- Dead jobs taken out of the dead-letter table (replayed or purged), by
-- queue and minute of death, so that the DLQ's 24-hour delta counts
-- departures of jobs that died before the window.
CREATE TABLE IF NOT EXISTS {{schema}}.docket_dead_removed (
    queue       text        NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    dead_minute timestamptz NOT NULL,
    n           bigint      NOT NULL
);

CREATE INDEX IF NOT EXISTS docket_dead_removed_at_idx
    ON {{schema}}.docket_dead_removed (at);

-- Completions and retries per minute and hour are counted from history by
-- finished_at with index-only scans. Created on the partitioned table, so
-- every partition gets it (new ones when they are attached). Building it
-- takes a SHARE lock on existing history partitions for the build's length.
CREATE INDEX IF NOT EXISTS docket_jobs_done_finished_idx
    ON {{schema}}.docket_jobs_done (finished_at) INCLUDE (queue, attempts);

-- Per queue: backlog, lag, throughput over the last minute and hour, the
-- dead-letter queue's size and its 24-hour delta (size now minus size 24
-- hours ago: jobs that died in the window and are still dead, minus older
-- dead jobs replayed or purged in the window). lag_seconds is the age of
-- the oldest due job (ready, or scheduled and due but not promoted yet).
-- retries_* count extra attempts (attempts - 1) spent by jobs that finished
-- or died in the window.
CREATE OR REPLACE VIEW {{schema}}.docket_queue_status AS
WITH live AS (
    SELECT queue,
        count(*) FILTER (WHERE state = 'ready') AS ready,
        count(*) FILTER (WHERE state = 'scheduled') AS scheduled,
        count(*) FILTER (WHERE state = 'running') AS running,
        min(run_at) FILTER (WHERE state <> 'running' AND run_at <= now()) AS oldest_due_at
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

-- Per table of Docket's: dead and live tuples and the last (auto)vacuum and
-- (auto)analyze, from the statistics collector.
CREATE OR REPLACE VIEW {{schema}}.docket_table_status AS
SELECT s.relname::text AS table_name,
    s.n_live_tup AS live_tuples,
    s.n_dead_tup AS dead_tuples,
    s.last_vacuum, s.last_autovacuum, s.last_analyze, s.last_autoanalyze,
    s.vacuum_count, s.autovacuum_count
FROM pg_stat_user_tables s
WHERE s.relid IN (
    SELECT c.oid FROM pg_class c
    WHERE c.relnamespace = '{{schema}}'::regnamespace AND c.relname LIKE 'docket\_%'
);

-- Running jobs whose lease expired: their worker stopped heartbeating and
-- the reaper has not run (no worker process is up, or all are failing).
CREATE OR REPLACE VIEW {{schema}}.docket_stuck_jobs AS
SELECT id, queue, kind, attempts, max_attempts, locked_by, locked_at, lease_until,
    extract(epoch FROM now() - lease_until)::double precision AS overdue_seconds
FROM {{schema}}.docket_jobs
WHERE state = 'running' AND lease_until < now();

-- Worker processes that heartbeated recently.
CREATE OR REPLACE VIEW {{schema}}.docket_live_workers AS
SELECT * FROM {{schema}}.docket_workers WHERE expires_at > now();

-- Ready jobs of a (queue, kind) that no live worker process claims.
CREATE OR REPLACE VIEW {{schema}}.docket_unserved_kinds AS
WITH waiting AS (
    SELECT queue, kind, count(*) AS jobs, min(run_at) AS oldest_run_at
    FROM {{schema}}.docket_jobs
    WHERE state = 'ready'
    GROUP BY queue, kind
)
SELECT w.queue, w.kind, w.jobs, w.oldest_run_at
FROM waiting w
WHERE NOT EXISTS (
    SELECT 1 FROM {{schema}}.docket_workers p
    WHERE p.expires_at > now() AND w.kind = ANY(p.kinds) AND w.queue = ANY(p.queues)
);

-- What holds back the vacuum horizon: open transactions and snapshots,
-- replication slots and prepared transactions, oldest first. Names the
-- holder (pid, application, state, slot or gid), never its query text.
-- same_database is false for backends of other databases, which do not hold
-- back vacuum of this database's tables. age_seconds is null where
-- PostgreSQL keeps no start time (replication slots, walsenders relaying a
-- standby's hot_standby_feedback); xid_age is how many transactions old the
-- held xmin is.
CREATE OR REPLACE VIEW {{schema}}.docket_horizon AS
SELECT 'transaction'::text AS holder, a.pid, a.application_name::text, a.state::text,
    NULL::text AS name, a.datname::text AS database,
    coalesce(a.datname = current_database(), true) AS same_database,
    age(a.backend_xmin)::bigint AS xid_age,
    extract(epoch FROM now() - a.xact_start)::double precision AS age_seconds
FROM pg_stat_activity a
WHERE a.backend_xmin IS NOT NULL AND a.pid <> pg_backend_pid()
    AND a.backend_type <> 'autovacuum worker'
UNION ALL
SELECT 'replication_slot', s.active_pid, NULL, CASE WHEN s.active THEN 'active' ELSE 'inactive' END,
    s.slot_name::text, s.database::text, coalesce(s.database = current_database(), true),
    greatest(age(s.xmin), age(s.catalog_xmin))::bigint, NULL
FROM pg_replication_slots s
WHERE s.xmin IS NOT NULL OR s.catalog_xmin IS NOT NULL
UNION ALL
SELECT 'prepared_transaction', NULL, NULL, 'prepared', p.gid, p.database::text,
    p.database = current_database(), age(p.transaction)::bigint,
    extract(epoch FROM now() - p.prepared)::double precision
FROM pg_prepared_xacts p;
