DROP TRIGGER IF EXISTS docket_jobs_workflow_gate ON {{schema}}.docket_jobs;
DROP FUNCTION IF EXISTS {{schema}}.docket_workflow_gate();

-- Steps held for their signal become what the previous version makes of a
-- waiting workflow job whose parents are gone: its sweep releases them.
DROP INDEX IF EXISTS {{schema}}.docket_jobs_wait_until_idx;
ALTER TABLE {{schema}}.docket_jobs DROP COLUMN IF EXISTS wait_until;
DROP TABLE IF EXISTS {{schema}}.docket_workflow_signals;
DROP TABLE IF EXISTS {{schema}}.docket_workflow_waits;
