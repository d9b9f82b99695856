DROP VIEW IF EXISTS {{schema}}.docket_workflow_status;
DROP TRIGGER IF EXISTS docket_jobs_workflow_requeued ON {{schema}}.docket_jobs;
DROP TRIGGER IF EXISTS docket_jobs_workflow_release ON {{schema}}.docket_jobs;
DROP FUNCTION IF EXISTS {{schema}}.docket_workflow_requeued();
DROP FUNCTION IF EXISTS {{schema}}.docket_workflow_release();
DROP FUNCTION IF EXISTS {{schema}}.docket_workflow_ready(bigint, boolean, text);
DROP FUNCTION IF EXISTS {{schema}}.docket_workflow_cancel_children(bigint, boolean, text);

-- Jobs waiting for their parents lose their dependencies and become ready:
-- the previous version has nothing to hold them back with.
UPDATE {{schema}}.docket_jobs SET state = 'ready', ready_seq = nextval('{{schema}}.docket_jobs_id_seq')
WHERE state = 'waiting' AND workflow_id IS NOT NULL AND serial_seq IS NULL;

ALTER TABLE {{schema}}.docket_jobs DROP CONSTRAINT IF EXISTS docket_jobs_waiting_in_line;
ALTER TABLE {{schema}}.docket_jobs ADD CONSTRAINT docket_jobs_waiting_in_line
    CHECK (state <> 'waiting' OR (serial_key IS NOT NULL AND serial_seq IS NOT NULL));

DROP TABLE IF EXISTS {{schema}}.docket_workflow_deps;
DROP INDEX IF EXISTS {{schema}}.docket_jobs_dead_workflow_idx;
DROP INDEX IF EXISTS {{schema}}.docket_jobs_workflow_waiting_idx;
DROP INDEX IF EXISTS {{schema}}.docket_jobs_workflow_idx;
ALTER TABLE {{schema}}.docket_jobs_done DROP COLUMN IF EXISTS workflow_id;
ALTER TABLE {{schema}}.docket_jobs_dead DROP COLUMN IF EXISTS workflow_id;
ALTER TABLE {{schema}}.docket_jobs DROP COLUMN IF EXISTS workflow_id;
DROP TABLE IF EXISTS {{schema}}.docket_workflows;
