-- Docket core tables: the hot jobs table, finished-job history partitioned by
-- day, and the dead-letter table. {{schema}} is replaced by the configured
-- schema, quoted.

CREATE SEQUENCE IF NOT EXISTS {{schema}}.docket_jobs_id_seq AS bigint;

-- The claim order inside a priority: a job draws a fresh number each time it
-- becomes ready, so the claim index only grows at its end and claimers can
-- scan from a cursor instead of from entries that vacuum cannot remove yet.
CREATE SEQUENCE IF NOT EXISTS {{schema}}.docket_jobs_ready_seq AS bigint;

-- Live jobs only: scheduled (future run_at), ready and running. Finished jobs
-- leave this table, so it stays small and its unique index means "no
-- duplicate in-flight work". Lock and lease columns are in no index, so
-- heartbeats are HOT updates.
CREATE TABLE IF NOT EXISTS {{schema}}.docket_jobs (
    id           bigint      NOT NULL DEFAULT nextval('{{schema}}.docket_jobs_id_seq') PRIMARY KEY,
    state        text        NOT NULL DEFAULT 'ready'
                 CHECK (state IN ('scheduled', 'ready', 'running')),
    queue        text        NOT NULL,
    kind         text        NOT NULL,
    priority     smallint    NOT NULL DEFAULT 0,
    run_at       timestamptz NOT NULL DEFAULT now(),
    created_at   timestamptz NOT NULL DEFAULT now(),
    ready_seq    bigint      NOT NULL DEFAULT nextval('{{schema}}.docket_jobs_ready_seq'),
    attempts     integer     NOT NULL DEFAULT 0,
    max_attempts integer     NOT NULL DEFAULT 25 CHECK (max_attempts >= 1),
    unique_key   text,
    tenant       text        NOT NULL DEFAULT '',
    serial_key   text,
    locked_by    uuid,
    locked_at    timestamptz,
    lease_until  timestamptz,
    last_error   text,
    payload      jsonb       NOT NULL,
    meta         jsonb,
    CONSTRAINT docket_jobs_locked_while_running CHECK ((state = 'running') = (locked_by IS NOT NULL))
) WITH (
    fillfactor = 80,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.05,
    autovacuum_vacuum_cost_delay = 0
);

ALTER SEQUENCE {{schema}}.docket_jobs_id_seq OWNED BY {{schema}}.docket_jobs.id;
ALTER SEQUENCE {{schema}}.docket_jobs_ready_seq OWNED BY {{schema}}.docket_jobs.ready_seq;

-- The claim: due jobs of a queue, highest priority first, then in the order
-- they became ready.
CREATE INDEX IF NOT EXISTS docket_jobs_claim_idx
    ON {{schema}}.docket_jobs (queue, priority DESC, ready_seq)
    WHERE state = 'ready';

-- The capped claim walks the distinct tenants of a queue, then each tenant's
-- head. Every text is >= '', so "tenant >= ''" filters nothing: it is there
-- so that only statements that say so (the capped claim) can use this
-- index. The plain claim must never use it: tenant sits between queue and
-- priority, so a scan here cannot start at the claim's cursor and would step
-- over every dead entry while the vacuum horizon is held. With statistics of
-- a bloated table the planner was seen to pick it.
CREATE INDEX IF NOT EXISTS docket_jobs_tenant_idx
    ON {{schema}}.docket_jobs (queue, tenant, priority DESC, ready_seq)
    WHERE state = 'ready' AND tenant >= '';

-- Promotion of scheduled jobs that became due.
CREATE INDEX IF NOT EXISTS docket_jobs_scheduled_idx
    ON {{schema}}.docket_jobs (run_at)
    WHERE state = 'scheduled';

-- The reaper and shutdown release look at running jobs only.
CREATE INDEX IF NOT EXISTS docket_jobs_running_idx
    ON {{schema}}.docket_jobs (locked_by)
    WHERE state = 'running';

CREATE UNIQUE INDEX IF NOT EXISTS docket_jobs_unique_key_idx
    ON {{schema}}.docket_jobs (unique_key)
    WHERE unique_key IS NOT NULL;

-- Finished jobs, one partition per UTC day; retention drops whole partitions.
CREATE TABLE IF NOT EXISTS {{schema}}.docket_jobs_done (
    id           bigint      NOT NULL,
    queue        text        NOT NULL,
    kind         text        NOT NULL,
    priority     smallint    NOT NULL,
    tenant       text        NOT NULL,
    serial_key   text,
    unique_key   text,
    attempts     integer     NOT NULL,
    max_attempts integer     NOT NULL,
    created_at   timestamptz NOT NULL,
    run_at       timestamptz NOT NULL,
    started_at   timestamptz,
    finished_at  timestamptz NOT NULL,
    payload      jsonb       NOT NULL,
    meta         jsonb
) PARTITION BY RANGE (finished_at);

CREATE INDEX IF NOT EXISTS docket_jobs_done_id_idx
    ON {{schema}}.docket_jobs_done (id);

-- Jobs that exhausted their attempts, were cancelled or could not be decoded.
CREATE TABLE IF NOT EXISTS {{schema}}.docket_jobs_dead (
    id           bigint      NOT NULL PRIMARY KEY,
    queue        text        NOT NULL,
    kind         text        NOT NULL,
    priority     smallint    NOT NULL,
    tenant       text        NOT NULL,
    serial_key   text,
    unique_key   text,
    attempts     integer     NOT NULL,
    max_attempts integer     NOT NULL,
    created_at   timestamptz NOT NULL,
    run_at       timestamptz NOT NULL,
    dead_at      timestamptz NOT NULL DEFAULT now(),
    reason       text        NOT NULL,
    last_error   text,
    payload      jsonb       NOT NULL,
    meta         jsonb
);

CREATE INDEX IF NOT EXISTS docket_jobs_dead_dead_at_idx
    ON {{schema}}.docket_jobs_dead (dead_at);

CREATE INDEX IF NOT EXISTS docket_jobs_dead_kind_idx
    ON {{schema}}.docket_jobs_dead (kind, dead_at);
