-- Schedules may use the misfire policy 'catch_up' (run every missed fire
-- time, one after another).
ALTER TABLE {{schema}}.docket_schedules DROP CONSTRAINT IF EXISTS docket_schedules_misfire_check;
ALTER TABLE {{schema}}.docket_schedules ADD CONSTRAINT docket_schedules_misfire_check
    CHECK (misfire IN ('skip', 'run_once', 'catch_up'));
