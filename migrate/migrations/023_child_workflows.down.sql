DROP TRIGGER IF EXISTS docket_jobs_workflow_to_child ON {{schema}}.docket_jobs;
DROP TRIGGER IF EXISTS docket_jobs_workflow_to_parent ON {{schema}}.docket_jobs;
DROP FUNCTION IF EXISTS {{schema}}.docket_child_step_left();
DROP FUNCTION IF EXISTS {{schema}}.docket_child_left();
DROP FUNCTION IF EXISTS {{schema}}.docket_child_cancel(bigint);
DROP FUNCTION IF EXISTS {{schema}}.docket_child_settle(bigint);

-- Steps waiting for a child workflow complete: the previous version has
-- nothing to hold them back with, and their child workflows run on as
-- workflows of their own. Back in 'running' for the instant of their
-- delete, their workflow's trigger reads it as a completion.
UPDATE {{schema}}.docket_jobs SET state = 'running', locked_by = '00000000-0000-0000-0000-000000000000'
WHERE state = 'waiting' AND child_workflow_id IS NOT NULL;
WITH d AS (
    DELETE FROM {{schema}}.docket_jobs
    WHERE state = 'running' AND child_workflow_id IS NOT NULL
        AND locked_by = '00000000-0000-0000-0000-000000000000'
    RETURNING *
)
INSERT INTO {{schema}}.docket_jobs_done
    (id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
     created_at, run_at, started_at, finished_at, payload, meta, workflow_id)
SELECT id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
    created_at, run_at, locked_at, now(), payload, meta, workflow_id
FROM d;

ALTER TABLE {{schema}}.docket_jobs DROP CONSTRAINT IF EXISTS docket_jobs_waiting_in_line;
ALTER TABLE {{schema}}.docket_jobs ADD CONSTRAINT docket_jobs_waiting_in_line
    CHECK (state <> 'waiting' OR (serial_key IS NOT NULL AND serial_seq IS NOT NULL) OR workflow_id IS NOT NULL);

DROP INDEX IF EXISTS {{schema}}.docket_jobs_child_waiting_idx;
ALTER TABLE {{schema}}.docket_jobs DROP COLUMN IF EXISTS parent_step_id;
ALTER TABLE {{schema}}.docket_jobs DROP COLUMN IF EXISTS child_workflow_id;
DROP INDEX IF EXISTS {{schema}}.docket_workflows_parent_job_idx;
ALTER TABLE {{schema}}.docket_workflows
    DROP COLUMN IF EXISTS parent_to_history,
    DROP COLUMN IF EXISTS depth,
    DROP COLUMN IF EXISTS parent_workflow_id,
    DROP COLUMN IF EXISTS parent_job_id;
