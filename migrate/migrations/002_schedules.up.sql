-- Recurring schedules (package schedule): one row per schedule, its
-- definition, the fire time of its pending run and of the last finished run.
-- The pending run itself is a job in docket_jobs with unique key
-- 'schedule:' || name.
CREATE TABLE IF NOT EXISTS {{schema}}.docket_schedules (
    name          text        NOT NULL PRIMARY KEY,
    spec          text        NOT NULL,
    time_zone     text        NOT NULL DEFAULT '',
    kind          text        NOT NULL,
    queue         text        NOT NULL,
    priority      smallint    NOT NULL DEFAULT 0,
    tenant        text        NOT NULL DEFAULT '',
    serial_key    text        NOT NULL DEFAULT '',
    max_attempts  integer     NOT NULL DEFAULT 0,
    payload       jsonb       NOT NULL,
    spread_ms     bigint      NOT NULL DEFAULT 0 CHECK (spread_ms >= 0),
    misfire       text        NOT NULL DEFAULT 'skip' CHECK (misfire IN ('skip', 'run_once')),
    paused        boolean     NOT NULL DEFAULT false,
    -- Fire time of the pending run; NULL while the schedule has none (new,
    -- paused, or not yet reconciled).
    next_fire     timestamptz,
    -- Fire time of the last run that completed or was dead-lettered.
    last_fire     timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    -- Last time a process registered the schedule: schedules no process
    -- registers any more fall behind and can be listed and removed.
    registered_at timestamptz NOT NULL DEFAULT now()
);
