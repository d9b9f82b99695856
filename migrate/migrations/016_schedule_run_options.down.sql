ALTER TABLE {{schema}}.docket_schedules DROP COLUMN IF EXISTS run_queue;
ALTER TABLE {{schema}}.docket_schedules DROP COLUMN IF EXISTS run_priority;
ALTER TABLE {{schema}}.docket_schedules DROP COLUMN IF EXISTS run_max_attempts;

-- NOT VALID keeps schedules registered with 'catch_up' as they are, until
-- a registration sets their policy again.
ALTER TABLE {{schema}}.docket_schedules DROP CONSTRAINT IF EXISTS docket_schedules_misfire_check;
ALTER TABLE {{schema}}.docket_schedules ADD CONSTRAINT docket_schedules_misfire_check
    CHECK (misfire IN ('skip', 'run_once')) NOT VALID;
