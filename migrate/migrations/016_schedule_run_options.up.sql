-- Schedules may use the misfire policy 'catch_up' (run every missed fire
-- time, one after another).
ALTER TABLE {{schema}}.docket_schedules DROP CONSTRAINT IF EXISTS docket_schedules_misfire_check;
ALTER TABLE {{schema}}.docket_schedules ADD CONSTRAINT docket_schedules_misfire_check
    CHECK (misfire IN ('skip', 'run_once', 'catch_up'));

-- The queue, priority and max attempts of a schedule's runs, resolved by
-- the registering process (the template's, else the kind's registered
-- options, else the built-in defaults), so that a process without the
-- kind's handler (`docket schedules trigger`, the dashboard) enqueues a
-- manual run as the schedule's own fire does. NULL when the registering
-- process did not know the kind's options; then the template applies.
ALTER TABLE {{schema}}.docket_schedules ADD COLUMN IF NOT EXISTS run_queue text;
ALTER TABLE {{schema}}.docket_schedules ADD COLUMN IF NOT EXISTS run_priority smallint;
ALTER TABLE {{schema}}.docket_schedules ADD COLUMN IF NOT EXISTS run_max_attempts integer;
